"""pytest-mllm's entry point: options, the marker and fixtures, and activation.

This module stays import-light: without a --mllm option nothing else of the package
(and nothing heavy) is imported and no hook does any work. With one, `harness.setup`
starts the run and registers the hooks that delegate to the evaluation core.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

MARKER = "mllm_bench"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_mllm.harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_mllm.harness.options import add_options

    add_options(parser)


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("mllm") or config.getoption("mllm_bench"))


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--mllm-list: the bundled benchmarks, then exit."""
    if not config.getoption("mllm_list"):
        return None
    from pytest_mllm.harness.listing import listing

    print(listing())
    return 0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(name, task=None): parametrize `mllm_sample` with a benchmark's samples")
    if config.getoption("markers", False) or _active(config):  # `pytest --markers` lists every benchmark's
        from pytest_mllm.harness.listing import register_markers

        register_markers(config)
    if _active(config):
        from pytest_mllm.harness.setup import start_run

        start_run(config)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto with a model under test: one worker per GPU group (none on a CPU-only machine), asked
    before xdist's own count of cores; PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is left to xdist."""
    if not _active(config) or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from pytest_mllm.harness.setup import gpu_groups

    return len(gpu_groups(config)) or None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "mllm_sample" not in metafunc.fixturenames:
        return
    if not _active(metafunc.config):
        metafunc.parametrize("mllm_sample", [pytest.param(None, marks=pytest.mark.skip(
            reason="benchmark test: pass --mllm=MODEL to run it"))], ids=["needs-mllm"])
        return
    from pytest_mllm.harness.setup import marked_samples

    name = marker.args[0] if marker.args else marker.kwargs.get("name")
    samples = marked_samples(metafunc.config, str(name), marker.kwargs.get("task"))
    metafunc.parametrize("mllm_sample", samples, ids=[s.id for s in samples], indirect=True)


@pytest.fixture
def mllm_sample(request: pytest.FixtureRequest) -> Any:
    """A benchmark sample (from `@pytest.mark.mllm_bench(...)`)."""
    return request.param


@pytest.fixture
def mllm(request: pytest.FixtureRequest) -> Any:
    """The model under test, with `answer(sample)` giving the sample's scored record."""
    if not _active(request.config):
        pytest.skip("benchmark test: pass --mllm=MODEL to run it")
    from pytest_mllm.harness.setup import model_handle

    return model_handle(request.config)
