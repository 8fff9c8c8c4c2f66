"""Every pytest and pytest-xdist internal pytest-mllm reads, in one place, each with a fallback.

The versions supported are `PYTEST_VERSIONS` and `XDIST_VERSIONS` (pyproject's dependency ranges);
`tests/unit/test_pytest_compat.py` checks each internal against the installed versions, and the
architecture test that no other module names one. The plugin loads this module in every pytest run,
so it imports nothing of the package and nothing heavy.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import warnings
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest

PYTEST_VERSIONS = ">=8,<10"
XDIST_VERSIONS = ">=3.5,<4"
XDIST_QUEUE_SINCE = "3.7"  # a worker's queue can be read (`worker_queue`); before, batching looks ahead


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (xdist gives a worker's config its `workerinput`)."""
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config) -> str | None:
    """This xdist worker's id ("gw0", …); None outside a worker."""
    return getattr(config, "workerinput", {}).get("workerid")


def worker_count(config: pytest.Config) -> int:
    """How many xdist workers the run has, as a worker's config says (1 outside a worker, or where it does not say)."""
    count = getattr(config, "workerinput", {}).get("workercount", 1)
    return max(1, count) if isinstance(count, int) else 1


def report_worker(report: pytest.TestReport) -> str | None:
    """The id of the xdist worker a report came from, on the controller (None for this process's own)."""
    node = getattr(report, "node", None)
    gateway = getattr(node, "gateway", None)
    return getattr(gateway, "id", None) or (getattr(node, "workerinput", None) or {}).get("workerid")


def worker_pid(node: Any) -> int | None:
    """The process id of an xdist worker on this machine, on the controller (execnet's popen gateway keeps its
    subprocess); None where it does not say (a remote worker, another execnet)."""
    popen = getattr(getattr(getattr(node, "gateway", None), "_io", None), "popen", None)
    pid = getattr(popen, "pid", None)
    return pid if isinstance(pid, int) else None


def help_requested(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether this run prints `pytest --help`, asked while the options are declared (pytest has read its
    own options by then). True where pytest does not say: the help's lists then cost a little time."""
    config = pluginmanager.get_plugin("pytestconfig")
    namespace = getattr(config, "known_args_namespace", None)
    return bool(getattr(namespace, "help", True))


def make_mark(name: str) -> pytest.Mark:
    """A mark to put on an item's `own_markers` (its name registered first: `--strict-markers`)."""
    try:
        return pytest.Mark(name, (), {}, _ispytest=True)
    except TypeError:  # the constructor changed: the public decorator's mark
        return getattr(pytest.mark, name).mark


def junit_xml(config: pytest.Config) -> Any | None:
    """The object writing `--junitxml` (None without the option)."""
    if not config.getoption("xmlpath", None):
        return None
    try:
        from _pytest.junitxml import xml_key

        return config.stash.get(xml_key, None)
    except ImportError:
        pass
    for plugin in config.pluginmanager.get_plugins():  # registered under no name
        if type(plugin).__name__ == "LogXML" and hasattr(plugin, "add_global_property"):
            return plugin
    warnings.warn(pytest.PytestWarning("pytest-mllm: this pytest's JUnit writer was not found: the scores and "
                                       f"gates are left out of --junitxml (supported: pytest{PYTEST_VERSIONS})"), stacklevel=2)
    return None


def junit_logfile(xml: Any) -> str | None:
    """The path the JUnit writer (`junit_xml`) writes to when the session ends (its `logfile`); None where
    it does not say, and the file is then left for it to write in place."""
    path = getattr(xml, "logfile", None)
    return path if isinstance(path, str) else None


@contextlib.contextmanager
def junit_written_to(xml: Any, path: str) -> Iterator[None]:
    """The JUnit writer writes to `path` instead within the block (the session's end), then points back."""
    real = xml.logfile
    xml.logfile = path
    try:
        yield
    finally:
        xml.logfile = real


def terminal_width(reporter: Any) -> int:
    """The width pytest's terminal reporter writes to (that of the terminal where it has none)."""
    width = getattr(getattr(reporter, "_tw", None), "fullwidth", None)
    return width if isinstance(width, int) else shutil.get_terminal_size().columns


def mid_line(reporter: Any) -> bool:
    """Whether the reporter's current line holds text already (xdist's progress letters): a line of ours
    must start on a new one. False where the reporter does not say."""
    width = getattr(reporter, "_width_of_current_line", None)
    if width is None:
        width = getattr(getattr(reporter, "_tw", None), "width_of_current_line", 0)
    return bool(width)


def worker_queue(config: pytest.Config) -> WorkerQueue | None:
    """This xdist worker's queue of tests: None outside a worker, or where xdist's internals are not as
    expected (before `XDIST_QUEUE_SINCE`), and batching then looks ahead in the collection instead."""
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(plugin, "nextitem_index") and hasattr(queue, "lock"):
            return WorkerQueue(plugin)
    return None


class WorkerQueue:
    """The indices of the tests an xdist worker has been handed and not yet started.

    xdist keeps them in its worker plugin's `torun` queue (a deque under a lock, taken from the front)
    and `nextitem_index` (the test after the running one, already taken): not a public API, read here only.
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
