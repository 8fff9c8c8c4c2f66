"""pytest-xdist glue: what a worker has queued (for batching), and the controller's view of collection.

`XdistHooks` is registered only when xdist is installed, as pytest-randomly does.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import pytest


def worker_share(config: pytest.Config) -> tuple[int, int]:
    """(this worker's index, the workers' count) under xdist, (0, 1) outside it: how a served model's
    concurrency is shared out (a restarted worker, its id past the count, takes its number modulo the count)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return 0, 1
    count = max(1, int(workerinput.get("workercount", 1)))
    worker_id = str(workerinput.get("workerid", ""))
    number = worker_id[2:] if worker_id.startswith("gw") else ""
    return (int(number) % count if number.isdigit() else 0), count


def worker_queue(config: pytest.Config) -> WorkerQueue | None:
    """This xdist worker's queue of tests (None outside xdist, or where xdist's internals are not as expected)."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        if getattr(plugin, "torun", None) is not None and hasattr(plugin, "nextitem_index"):
            return WorkerQueue(plugin)
    return None


class WorkerQueue:
    """The indices of the tests an xdist worker has been handed and not yet started.

    xdist keeps them in its worker plugin's `torun` queue (a deque under a lock, taken from the
    front) and `nextitem_index` (the test after the running one, already taken): not a public API,
    so where they are missing batching looks ahead in the collection instead (`worker_queue`).
    """

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self._seen: deque[Any] = deque()  # the entries `unseen` returned that are still queued, in queue order

    @property
    def following(self) -> int | None:
        """The index of the test after the running one, if any."""
        following = self._plugin.nextitem_index
        return following if isinstance(following, int) else None

    def head(self, limit: int) -> list[int]:
        """The next test's index, then the first `limit` queued ones."""
        with self._plugin.torun.lock() as queued:
            pending = [i for i in itertools.islice(queued, limit) if isinstance(i, int)]
        following = self.following
        return ([following] if following is not None else []) + pending

    def unseen(self, limit: int) -> list[int]:
        """Up to `limit` queued indices this method has not returned before, in queue order.

        A cursor: the entries returned earlier form the front of the queue, less those the worker
        has taken since, so each call costs the same however long the queue is. (Should the queue
        change in its middle, when xdist steals tests for another worker, entries are at worst
        returned a little later.)"""
        seen = self._seen
        with self._plugin.torun.lock() as queued:
            if not queued:
                seen.clear()
                return []
            front = queued[0]
            while seen and seen[0] != front:  # taken by the worker since
                seen.popleft()
            start = len(seen)
            fresh = [queued[n] for n in range(start, min(start + limit, len(queued)))]
        seen.extend(fresh)
        return [i for i in fresh if isinstance(i, int)]  # not xdist's end-of-queue marker


class XdistHooks:
    """The controller learns what the workers collected (the tests of a TP-Eval optimization run)."""

    def __init__(self, on_collected: Callable[[Sequence[str]], None]) -> None:
        self._on_collected = on_collected
        self._seen = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self._seen:  # every worker collects the same ids
            self._seen = True
            self._on_collected(ids)
