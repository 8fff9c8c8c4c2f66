"""The run's gates and scores in pytest's JUnit XML (`--junitxml`), which CI pages render.

Each gate and regression limit becomes a test case of its own (a failure with its message when it
fails, skipped when it did not run); each benchmark's scores become properties of the test suite.
A wrong answer that does not fail its test (no --mllm-strict) carries its verdict as properties.
Names from data are escaped where XML cannot hold them (`echo.xml_text`), and the file is written
beside its place and renamed over it (`AtomicJunit`), as every output is.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.echo import xml_text
from pytest_mllm.pytest_compat import junit_logfile, junit_written_to, junit_xml
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.scoring.gates import Verdict, shadowed_scopes
from pytest_mllm.sections import with_parts
from pytest_mllm.shortfall import Shortfall


def incorrect_properties(records: Sequence[Record]) -> list[tuple[str, str]]:
    """What a passing test of a wrong answer shows in the XML: its status, the expected and parsed answers."""
    wrong = [r for r in records if r["status"] == "incorrect"]
    return [(key, str(value)) for r in wrong
            for key, value in (("mllm.status", "incorrect"), ("mllm.expected", r["answer"]),
                               ("mllm.parsed", r["parsed"]))]


def write_to_junit(config: pytest.Config, results: Mapping[str, BenchmarkResult], verdicts: Sequence[Verdict],
                   shortfalls: Sequence[Shortfall] = ()) -> None:
    """Add the scores and the gates to the JUnit XML pytest writes at the session's end (if asked to); a run that
    is not a full run says why in one `mllm.incomplete` property per reason."""
    xml = junit_xml(config)
    if xml is None:
        return
    for shortfall in shortfalls:
        xml.add_global_property("mllm.incomplete", shortfall.reason)
    for name, result in results.items():
        for key, value in suite_properties(name, result).items():
            xml.add_global_property(xml_text(key), value)  # pytest escapes values, not names
    for verdict in verdicts:
        for report in _gate_reports(verdict):
            xml.pytest_runtest_logreport(report)


def suite_properties(name: str, result: BenchmarkResult) -> dict[str, Any]:
    """`<benchmark>.<metric>`: the overall metrics and each group's and task's headline (`<benchmark>.<scope>`,
    or `<benchmark>.<scope>.<headline>` for a scope named like an overall metric: a subtask "count"), the
    sections' properties, the headline's 95 % interval, and where the answers came from."""
    flat = result.metrics
    headline = result.spec.headline
    shadowed = shadowed_scopes(result.scopes)
    properties: dict[str, Any] = {f"{name}.{key}": value for key, value in flat.items() if "." not in key}
    for section, part in with_parts(result.scopes):
        properties.update(section.junit(name, flat, part))
    properties.update({f"{name}.{scope}.{headline}": flat[f"{scope}.{headline}"] for scope in shadowed
                       if f"{scope}.{headline}" in flat})
    interval = result.headline_intervals().get(result.spec.headline) or {}
    if interval.get("ci"):
        properties[f"{name}.{result.spec.headline}.ci95"] = "[{:.6g}, {:.6g}]".format(*interval["ci"])
    generated, cached = result.answer_counts
    properties[f"{name}.answers_generated"] = generated
    properties[f"{name}.answers_cached"] = cached
    return properties


def _gate_reports(verdict: Verdict) -> list[pytest.TestReport]:
    """The call and teardown reports of a gate's test case: passed, failed with its line, or skipped."""
    gate = verdict.gate
    kind = "regressions" if gate.max_drop is not None else "gates"
    suite = gate.benchmark if gate.benchmark != "*" else "mllm"
    nodeid = xml_text(f"{suite}::{kind}::{gate.text}")
    location = (xml_text(f"{suite}.{kind}"), None, xml_text(gate.text))
    note = verdict.note.removeprefix(verdict.withheld).removeprefix("; ")  # the line says why it was withheld
    message = f"gate failed: {verdict.line()}" + (f" ({note})" if note and verdict.value is not None else "")
    outcome: Any = {"pass": "passed", "fail": "failed", "not run": "skipped"}[verdict.verdict]
    longrepr: Any = None
    if outcome == "failed":
        longrepr = message
    elif outcome == "skipped":
        longrepr = (location[0], 0, f"not run: {verdict.note}")
    call = pytest.TestReport(nodeid, location, {}, outcome, longrepr, "call", duration=0.0)
    teardown = pytest.TestReport(nodeid, location, {}, "passed", None, "teardown", duration=0.0)
    return [call, teardown]


class AtomicJunit:
    """pytest writes the JUnit XML in place; with this plugin it writes a temporary file beside it, which then
    replaces the file whole (`engine/output_paths.write_atomically`): a failed write leaves the previous one."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Iterator[None]:
        xml = junit_xml(self.config)
        real = junit_logfile(xml) if xml is not None else None
        temporary = _temporary_beside(real) if real is not None else None
        if temporary is None:  # no --junitxml, a writer that does not say where, a folder's problem: pytest's own write
            return (yield)
        try:
            with junit_written_to(xml, temporary):
                result = yield
            self._replace(session, Path(real), Path(temporary))  # type: ignore[arg-type]
            return result
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)

    def _replace(self, session: pytest.Session, real: Path, temporary: Path) -> None:
        """The written temporary file replaces the real one whole; a failure is one line and a usage error."""
        from pytest_mllm.engine.output_paths import OutputWriteError, write_atomically

        try:
            write_atomically(real, temporary.read_bytes(), what="the JUnit XML")
        except OutputWriteError as exc:  # one line, as for every output
            reporter = self.config.pluginmanager.getplugin("terminalreporter")
            if reporter is not None:
                reporter.write_line(f"pytest-mllm: error: {exc}", red=True, bold=True)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _temporary_beside(path: str) -> str | None:
    """A new empty file in `path`'s folder (the JUnit XML's draft); None when the folder refuses it (pytest's own
    write then reports the folder's problem)."""
    try:
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)),
                                             prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError:
        return None
    os.close(handle)
    return temporary
