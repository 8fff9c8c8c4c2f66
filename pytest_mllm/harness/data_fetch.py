"""The released data a run needs, fetched before anything runs (`engine/fetch.py`): each benchmark of the
run whose data comes from the data cache is downloaded and verified now, its progress on the terminal;
with downloads off, the benchmarks missing from the cache are one usage error naming the command that
fetches them. A benchmark that only collection names (a spec given as a test path) is fetched when it
collects, under the same lock."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

from pytest_mllm.engine.fetch import (
    OFFLINE_VARIABLE,
    DataCache,
    FetchError,
    FetchProgress,
    default_folder,
    missing_offline,
    offline_by_environment,
)
from pytest_mllm.engine.spec import SpecError, load_spec
from pytest_mllm.pytest_compat import is_worker


def read_data_cache(config: pytest.Config) -> DataCache:
    """--mllm-data-cache (else the default folder), and whether downloads are off (--mllm-offline, HF_HUB_OFFLINE)."""
    folder = config.getoption("mllm_data_cache")
    offline, reason = config.getoption("mllm_offline"), "--mllm-offline"
    if not offline and offline_by_environment():
        offline, reason = True, f"{OFFLINE_VARIABLE}={os.environ[OFFLINE_VARIABLE]}"
    return DataCache(folder=Path(folder).expanduser() if folder else default_folder(), offline=offline,
                     offline_reason=reason if offline else "")


def fetch_run_data(config: pytest.Config, spec_paths: Iterable[Path], data: Mapping[str, str],
                   cache: DataCache) -> None:
    """Fetch what the run's benchmarks need from the data cache (UsageError naming the benchmark and the fix)."""
    needed = []
    for path in spec_paths:
        try:
            spec = load_spec(path)
        except SpecError:
            continue  # reported when the file collects
        if spec.needs_fetch(spec.data_override(data)):
            needed.append(spec)
    if not needed:
        return
    if cache.offline:
        missing = [spec.download for spec in needed if spec.download is not None and not cache.has(spec.download)]
        if missing:
            raise pytest.UsageError(missing_offline(missing, cache))
        return
    controller = not is_worker(config)  # a worker finds the controller's copy
    progress = FetchProgress(say=_say if controller else lambda line: None,
                             terminal=sys.__stderr__ if controller else None)
    capture = config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        for spec in needed:
            try:
                cache.fetch(spec.download, progress)  # type: ignore[arg-type]
            except FetchError as exc:
                raise pytest.UsageError(f"benchmark {spec.name!r}: {exc}") from None


def _say(line: str) -> None:
    print(f"pytest-mllm: {line}", file=sys.stderr, flush=True)
