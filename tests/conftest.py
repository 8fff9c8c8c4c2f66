"""Shared test helpers: paths of the repository's fixtures and bundled specs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from a model hub, here or in CI

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
UNIT = REPO / "tests" / "unit"


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every unit test is `fast`; with the plugin tests marked so in their files, `pytest -m fast` is the
    first run for a change (under 3 minutes on 2 cores)."""
    for item in items:
        if UNIT in item.path.parents:
            item.add_marker(pytest.mark.fast)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture(scope="session")
def family_folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every tiny model of models/tiny_families.py and the tiny LLaVA, built once per run into a folder all
    xdist workers share (a few seconds in all; the build is safe against concurrent builders)."""
    pytest.importorskip("transformers")
    from pytest_mllm.models.tiny import ensure_tiny_llava
    from pytest_mllm.models.tiny_families import FAMILY_BUILDERS, ensure_tiny_family

    shared = tmp_path_factory.getbasetemp().parent / "tiny-families"
    return {**{name: ensure_tiny_family(name, shared / name) for name in FAMILY_BUILDERS},
            "llava": ensure_tiny_llava(shared / "llava")}
