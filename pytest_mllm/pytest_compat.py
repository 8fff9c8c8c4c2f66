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
from collections.abc import Iterator
from typing import Any

import pytest

PYTEST_VERSIONS = ">=8,<10"
XDIST_VERSIONS = ">=3.5,<4"
XDIST_QUEUE_SINCE = "3.7"  # a worker's queue can be read (`queued_indices`); before, batching looks ahead


def is_worker(config: pytest.Config) -> bool:
    """Whether this process is an xdist worker (xdist gives a worker's config its `workerinput`)."""
    return hasattr(config, "workerinput")


def worker_id(config: pytest.Config) -> str | None:
    """This xdist worker's id ("gw0", …); None outside a worker."""
    return getattr(config, "workerinput", {}).get("workerid")


def report_worker(report: pytest.TestReport) -> str | None:
    """The id of the xdist worker a report came from, on the controller (None for this process's own)."""
    node = getattr(report, "node", None)
    gateway = getattr(node, "gateway", None)
    return getattr(gateway, "id", None) or (getattr(node, "workerinput", None) or {}).get("workerid")


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


def queued_indices(config: pytest.Config, limit: int) -> list[int] | None:
    """Indices of the tests an xdist worker has been handed and not yet started (None outside xdist).

    xdist (from `XDIST_QUEUE_SINCE`) keeps them in its worker plugin's `torun` queue and `nextitem_index`:
    not a public API, so where they are missing (None) batching looks ahead in the collection instead.
    """
    if not is_worker(config):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(plugin, "nextitem_index") and hasattr(queue, "lock"):
            with queue.lock() as queued:
                pending = [i for i in itertools.islice(queued, limit) if isinstance(i, int)]
            following = plugin.nextitem_index
            return ([following] if isinstance(following, int) else []) + pending
    return None

