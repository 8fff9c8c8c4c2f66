"""Shared test helpers: paths of the repository's fixtures and bundled specs."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from a model hub, here or in CI

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
UNIT = REPO / "tests" / "unit"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


FAMILY_SWEEP = "family_sweep"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--family-sweep", action="store_true",
                     help="also run the sweep over every family of transformers' image-text-to-text mapping "
                          "(slow; scripts/family_sweep.py runs it and writes its results)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{FAMILY_SWEEP}: one family of the sweep over transformers' image-text-to-text "
                                       "mapping (run with --family-sweep)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The sweep stays out of the default run: its items are deselected unless --family-sweep is given.
    Every unit test is `fast`; with the plugin tests marked so in their files, `pytest -m fast` is the
    first run for a change (under 3 minutes on 2 cores)."""
    swept = [] if config.getoption("--family-sweep") else [item for item in items
                                                            if item.get_closest_marker(FAMILY_SWEEP)]
    if swept:
        config.hook.pytest_deselected(items=swept)
        items[:] = [item for item in items if not item.get_closest_marker(FAMILY_SWEEP)]
    for item in items:
        if UNIT in item.path.parents:
            item.add_marker(pytest.mark.fast)


@pytest.fixture(scope="session")
def family_folder(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Builds a tiny family model (models/tiny_families.py, by model_type) on first use, once per test run, into a
    folder all xdist workers share (the build is safe against concurrent builders)."""
    pytest.importorskip("transformers")
    from pytest_mllm.models.tiny_families import ensure_tiny_family

    shared = tmp_path_factory.getbasetemp().parent / "tiny-families"
    return lambda model_type: ensure_tiny_family(model_type, shared / model_type)
