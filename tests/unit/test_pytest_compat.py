"""The pytest and xdist internals `pytest_compat` reads: present in the installed versions, which lie in the
supported ranges pyproject states, and each with its fallback where one is missing."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import shutil
import warnings
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from pytest_mllm import pytest_compat
from pytest_mllm.pytest_compat import (
    PYTEST_VERSIONS,
    XDIST_QUEUE_SINCE,
    XDIST_VERSIONS,
    help_requested,
    is_worker,
    junit_logfile,
    junit_written_to,
    junit_xml,
    make_mark,
    mid_line,
    report_worker,
    terminal_width,
    worker_count,
    worker_id,
    worker_pid,
    worker_queue,
)

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
QUEUE_READABLE = Version(importlib.metadata.version("pytest-xdist")) >= Version(XDIST_QUEUE_SINCE)


def _declared(distribution: str) -> SpecifierSet:
    """The range pyproject's dependencies give `distribution`."""
    text = PYPROJECT.read_text(encoding="utf-8")
    found = re.findall(rf'^\s*"{re.escape(distribution)}([<>=!~][^"]*)",', text, re.MULTILINE)
    assert len(found) == 1, f"pyproject.toml should list {distribution} once with a range, found {found}"
    return SpecifierSet(found[0])


@pytest.mark.parametrize(("distribution", "supported"), [("pytest", PYTEST_VERSIONS), ("pytest-xdist", XDIST_VERSIONS)])
def test_the_installed_versions_lie_in_the_supported_ranges_pyproject_states(distribution: str, supported: str) -> None:
    assert _declared(distribution) == SpecifierSet(supported)
    installed = Version(importlib.metadata.version(distribution))
    assert installed in SpecifierSet(supported), f"{distribution} {installed} is outside {supported}: check " \
        "every internal in pytest_compat against it, then widen the range here and in pyproject.toml"


def test_every_internal_is_where_pytest_compat_reads_it(pytestconfig: pytest.Config) -> None:
    from _pytest.junitxml import LogXML, xml_key
    from _pytest.terminal import TerminalReporter
    from xdist.remote import WorkerInteractor

    assert isinstance(xml_key, pytest.StashKey)
    assert "self.logfile = " in inspect.getsource(LogXML.__init__)
    assert "self.logfile" in inspect.getsource(LogXML.pytest_sessionfinish)  # read when the session ends
    assert isinstance(TerminalReporter._width_of_current_line, property)
    reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        assert isinstance(reporter._tw.fullwidth, int)
        assert isinstance(reporter._width_of_current_line, int)
    assert pytestconfig.pluginmanager.get_plugin("pytestconfig") is pytestconfig
    assert pytestconfig.known_args_namespace.help is False
    from execnet.gateway_io import Popen2IOMaster

    assert "self.popen = " in inspect.getsource(Popen2IOMaster.__init__)  # a popen worker's process
    source = inspect.getsource(WorkerInteractor.__init__)
    assert "self.torun = " in source and "self.nextitem_index" in source
    if QUEUE_READABLE:
        from xdist.remote import TestQueue

        assert "self.torun = TestQueue(" in source and callable(TestQueue.lock)
    with warnings.catch_warnings(record=True) as caught:  # pytest warns at a private constructor misused
        warnings.simplefilter("always")
        mark = make_mark("some_task")
    assert not caught, [str(w.message) for w in caught]
    assert isinstance(mark, pytest.Mark) and mark.name == "some_task" and mark.args == () and mark.kwargs == {}


class _Bare:
    """An object with none of the internals (a future pytest's reporter, a plain config)."""


def test_without_the_internals_each_falls_back() -> None:
    assert terminal_width(_Bare()) == shutil.get_terminal_size().columns
    assert mid_line(_Bare()) is False
    assert report_worker(_Bare()) is None  # type: ignore[arg-type]
    assert worker_pid(_Bare()) is None  # an interrupted run's workers then stop in xdist's own time
    assert is_worker(_Bare()) is False and worker_id(_Bare()) is None  # type: ignore[arg-type]
    assert worker_count(_Bare()) == 1 and worker_queue(_Bare()) is None  # type: ignore[arg-type]
    assert junit_logfile(_Bare()) is None  # the JUnit XML is then written in place
    manager = pytest.PytestPluginManager()
    assert help_requested(manager) is True  # pytest does not say: the help keeps its lists


def test_make_mark_falls_back_on_the_public_decorator(monkeypatch: pytest.MonkeyPatch,
                                                      pytestconfig: pytest.Config) -> None:
    pytestconfig.addinivalue_line("markers", "color: a task's marker, registered before its marks are made")

    def refused(*args: object, **kwargs: object) -> None:
        raise TypeError("unexpected keyword argument '_ispytest'")

    monkeypatch.setattr(pytest_compat.pytest, "Mark", refused)
    mark = make_mark("color")
    assert mark.name == "color" and mark.args == ()


def test_a_worker_is_told_by_its_workerinput() -> None:
    worker = _Bare()
    worker.workerinput = {"workerid": "gw3", "workercount": 4}  # type: ignore[attr-defined]
    assert is_worker(worker) and worker_id(worker) == "gw3" and worker_count(worker) == 4  # type: ignore[arg-type]
    report = _Bare()
    report.node = _Bare()  # type: ignore[attr-defined]
    report.node.gateway = _Bare()  # type: ignore[attr-defined]
    report.node.gateway.id = "gw1"  # type: ignore[attr-defined]
    assert report_worker(report) == "gw1"  # type: ignore[arg-type]


def test_an_xdist_worker_reads_its_queue_and_no_other_process_has_one(pytestconfig: pytest.Config) -> None:
    queue = worker_queue(pytestconfig)
    if is_worker(pytestconfig) and QUEUE_READABLE:  # this test runs in a worker (-n 1 or more): the queue is read
        assert queue is not None
        head = queue.head(8)
        queued = head[1:] if queue.following is not None else head
        unseen = queue.unseen(8)  # the cursor's first call: the queue's front (tests handed over meanwhile after it)
        assert all(isinstance(i, int) for i in head) and unseen[:len(queued)] == queued
    else:  # no worker, or an xdist whose queue cannot be read: batching looks ahead in the collection
        assert queue is None


def test_without_junitxml_there_is_no_writer(pytestconfig: pytest.Config) -> None:
    if pytestconfig.getoption("xmlpath"):
        pytest.skip("this run writes --junitxml")
    assert junit_xml(pytestconfig) is None


def test_the_junit_writer_writes_elsewhere_within_the_block_and_points_back(tmp_path: Path) -> None:
    from _pytest.junitxml import LogXML

    real = tmp_path / "junit.xml"
    xml = LogXML(str(real), None)
    assert junit_logfile(xml) == str(real)
    with junit_written_to(xml, str(tmp_path / "elsewhere.xml")):
        assert junit_logfile(xml) == str(tmp_path / "elsewhere.xml")
    assert junit_logfile(xml) == str(real)
