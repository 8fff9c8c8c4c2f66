"""pytest-xdist glue: a worker's share of a served model's concurrency, and the controller's view of
collection (what a worker has queued is read through `pytest_compat.worker_queue`).

`XdistHooks` is registered only when xdist is installed, as pytest-randomly does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pytest_mllm.pytest_compat import is_worker, worker_count, worker_id


def worker_share(config: pytest.Config) -> tuple[int, int]:
    """(this worker's index, the workers' count) under xdist, (0, 1) outside it: how a served model's
    concurrency is shared out (a restarted worker, its id past the count, takes its number modulo the count)."""
    if not is_worker(config):
        return 0, 1
    count = worker_count(config)
    worker = worker_id(config) or ""
    number = worker[2:] if worker.startswith("gw") else ""
    return (int(number) % count if number.isdigit() else 0), count


class XdistHooks:
    """The controller learns what the workers collected (the tests of a run with a task job)."""

    def __init__(self, on_collected: Callable[[Sequence[str]], None]) -> None:
        self._on_collected = on_collected
        self._seen = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self._seen:  # every worker collects the same ids
            self._seen = True
            self._on_collected(ids)
