"""The run's pytest hooks, registered only when a --mllm option is given; each delegates to the
evaluation core (`pytest_mllm.evaluation`; `pytest_mllm.conclusion` at the session's end), the batcher,
a task job's reports or the terminal summary."""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

import pytest_mllm.record as records
from pytest_mllm.conclusion import Conclusion, conclude
from pytest_mllm.echo import printable
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, is_spec_file
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.batching import Batcher
from pytest_mllm.harness.interruption import Interruption
from pytest_mllm.harness.items import BenchmarkFile, SampleItem
from pytest_mllm.harness.limit import RunLimit
from pytest_mllm.harness.log_capture import SampleLogCapture
from pytest_mllm.harness.model_load import ModelLoadReport
from pytest_mllm.harness.options import Options
from pytest_mllm.harness.summary import write_scores
from pytest_mllm.harness.task_item import TaskReports
from pytest_mllm.pytest_compat import is_worker, report_worker
from pytest_mllm.record import Record
from pytest_mllm.sample import BadSample, Sample
from pytest_mllm.shortfall import headline


class MllmHooks:
    """The hooks of one run: collection, batched answers, records across xdist, scores and gates."""

    def __init__(self, config: pytest.Config, options: Options, evaluation: Evaluation,
                 load_report: ModelLoadReport) -> None:
        self.config = config
        self.load_report = load_report
        self.options = options
        self.evaluation = evaluation
        self.strict = options.strict
        self.is_worker = is_worker(config)
        self.batches = Batcher(config, evaluation, thumbnails=options.outputs.html_path is not None)
        self.log_capture = SampleLogCapture(config)
        self.spec_paths = {p.resolve() for p in options.benchmarks}
        self.tasks = TaskReports(config, evaluation, self.spec_paths)
        self.few_deselected = 0
        self.shard_expected: dict[str, int] | None = None  # --mllm-shard: records per benchmark in all shards
        self.limit = RunLimit(options.limit) if options.limit is not None else None  # --mllm-limit
        self.interruption = Interruption()  # SIGINT, SIGTERM, SIGHUP: the run ends, its outputs marked interrupted
        self.end = Conclusion()  # the run's scores, gates and outputs, from the session's end

    def record_for(self, item: pytest.Item) -> Record:
        return self.batches.record_for(item)  # type: ignore[arg-type]

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.interruption.install()

    # -- collection ---------------------------------------------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> BenchmarkFile | None:
        resolved = file_path.resolve()
        if resolved in self.spec_paths:  # from --mllm-bench: test ids start with the benchmark's name
            try:
                spec = self.evaluation.spec(resolved)
            except SpecError:  # read again when the file collects: reported there in one clean line
                return BenchmarkFile.from_parent(parent, path=file_path)
            return BenchmarkFile.from_parent(parent, path=file_path, nodeid=spec.name, spec=spec)
        if parent.session.isinitpath(file_path) and is_spec_file(file_path):
            return BenchmarkFile.from_parent(parent, path=file_path)  # its spec is read when it collects
        return None

    @pytest.hookimpl(trylast=True)  # after -k and -m: a shard's record counts are those of the selection
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """With customized prompts, leave out the samples each was optimized on (D_few ∩ D_test = ∅);
        with --mllm-limit=N, the samples past the limit (`harness/limit.py`); with --mllm-shard=I/N, the
        tests of the other shards (`harness/shard.py`)."""
        few: list[pytest.Item] = [i for i in items if isinstance(i, SampleItem) and isinstance(i.sample, Sample)
                                  and self.evaluation.set_aside(i.sample)]
        self.few_deselected = len(few)
        _deselect(config, items, few)
        if self.limit is not None:
            _deselect(config, items, self.limit.beyond(config, items))
        if self.options.shard is not None:
            _deselect(config, items, self._other_shards(config, items))

    def _other_shards(self, config: pytest.Config, items: list[pytest.Item]) -> list[pytest.Item]:
        """The tests --mllm-shard=I/N leaves to other machines; this shard's record counts are noted."""
        from pytest_mllm.harness.shard import expected_records, split

        self.shard_expected = expected_records(items)
        if self.is_worker:  # the controller writes the results: it learns the counts at the worker's end
            config.workeroutput["mllm_shard_expected"] = json.dumps(self.shard_expected)  # type: ignore[attr-defined]
        return split(items, *self.options.shard)[1]  # type: ignore[misc]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self.interruption.worker_started(node)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker's view of the whole (unsharded) selection, for the shard's results file."""
        raw = getattr(node, "workeroutput", {}).get("mllm_shard_expected")
        if raw and self.shard_expected is None:
            self.shard_expected = json.loads(raw)
        if self.limit is not None:
            self.limit.worker_done(node)
        self.interruption.worker_done(node)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.batches.collected(session.items)
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        for line in self.evaluation.replay_coverage.values():  # collection's own output is captured
            if reporter is not None:
                reporter.write_line(line)
        if not self.is_worker:
            self.tasks.collected(session.items)

    # -- running ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]
                                  ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            self.tasks.carry(item, report)
            if isinstance(item, SampleItem) and item.records:
                self._carry_records(item, report)
        return report

    def _carry_records(self, item: SampleItem, report: pytest.TestReport) -> None:
        """A sample test's records on its report, timed without the model's load; a failed load stops the run."""
        load = self.load_report.take_load()  # the model's load is not this sample's time
        load_s = load["seconds"] if load else 0.0
        if load:
            report.mllm_load = load  # type: ignore[attr-defined]
        for record in item.records:
            record["duration_s"] = round(max(report.duration - load_s, 0.0) / len(item.records), 6)
        self.load_report.stop_on_failure(item.session, item.records)
        # one JSON string crosses xdist fast; in this process the records ride as they are
        report.mllm_records = records.dumps(item.records) if self.is_worker else item.records  # type: ignore[attr-defined]
        report.mllm_spec = str(item.spec.path)  # type: ignore[attr-defined]
        if not self.strict:  # a wrong answer passes, and shows in the JUnit XML (its teardown report's)
            from pytest_mllm.harness.junit import incorrect_properties

            item.user_properties.extend(incorrect_properties(item.records))

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, Any] | None:
        if report.when != "call":
            return None
        carried = _records_of(report)
        if len(carried) != 1:
            return None
        if carried[0]["status"] == "incorrect" and report.passed:
            return "incorrect", "i", ("INCORRECT", {"yellow": True})
        if carried[0]["status"] == "error":
            return "error", "E", ("ERROR", {"red": True})
        return None

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: a worker died while running `crashitem`; its sample is scored as an error (unless the worker was
        interrupted: its sample was cut short, not failed)."""
        found = self._sample_of(crashitem)
        if found is None or self.interruption.worker_interruption:
            return
        sample, spec, order = found
        record = self.evaluation.crashed(sample, spec, str(report.longrepr))
        record["order"] = order
        report.mllm_records = records.dumps([record])  # type: ignore[attr-defined]
        report.mllm_spec = str(spec.path)  # type: ignore[attr-defined]

    def _sample_of(self, nodeid: str) -> tuple[Sample | BadSample, BenchmarkSpec, int] | None:
        """The sample and spec a test id names (a controller under xdist has no items to look in)."""
        file_part, _, sample_id = nodeid.partition("::")
        if not sample_id:
            return None
        spec = None
        for path in self.spec_paths:
            try:
                candidate = self.evaluation.spec(path)
            except SpecError:
                continue
            if candidate.name == file_part:
                spec = candidate
        if spec is None:
            path = (self.config.rootpath / file_part).resolve()
            if not is_spec_file(path):
                return None
            try:
                spec = self.evaluation.spec(path)
            except SpecError:
                return None
        task = sample_id.split("::")[0] if "::" in sample_id else spec.name
        try:
            known = {printable(s.id): (order, s) for order, s in enumerate(self.evaluation.samples_for(spec))}
        except Exception:  # noqa: BLE001 - the crash report is still made, with less detail
            known = {}
        order, found = known.get(sample_id, (len(known), None))
        if isinstance(found, Sample):
            return found, spec, order
        return BadSample(sample_id, spec.name, found.task if found is not None else task, ""), spec, order

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        load, worker = getattr(report, "mllm_load", None), report_worker(report)
        if load and worker is not None:  # a worker loaded the model
            self.load_report.loaded(load, worker)
        spec_path = Path(report.mllm_spec) if hasattr(report, "mllm_spec") else None
        self.evaluation.gather(_records_of(report), spec_path)
        self.tasks.received(report)
        self.interruption.reported(report)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.interruption.interrupted_by(excinfo.value)

    # -- reporting ----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.interruption.finishing = True  # a signal now waits for the outputs
        self.batches.close()
        if self.is_worker:
            self.interruption.tell_controller(self.config, exitstatus)
            return
        if exitstatus == pytest.ExitCode.INTERRUPTED:
            self.interruption.stop_workers()  # while the outputs are written
        shortfalls = [s for s in (self.interruption.shortfall(session, exitstatus),
                                  self.limit.shortfall() if self.limit is not None else None) if s is not None]
        self.end = conclude(self.evaluation, self.options.gates, self.options.outputs, self._settings(), shortfalls)
        from pytest_mllm.harness.junit import write_to_junit

        write_to_junit(self.config, self.end.results, self.end.verdicts, self.end.shortfalls)
        session.exitstatus = _exit_status(self.end, session.exitstatus)

    def _settings(self) -> dict[str, Any]:
        """The run's settings for the results file, beside the evaluation's."""
        gates = self.options.gates
        return {"benchmarks": [str(p) for p in self.options.benchmarks],
                "strict": self.strict, "few_deselected": self.few_deselected,
                "model_loads": self.load_report.loads, "gates": [g.text for g in gates.gates],
                "baseline": str(gates.baseline) if gates.baseline else None,
                **({"shard": {"index": self.options.shard[0], "count": self.options.shard[1],
                              "expected_records": self.shard_expected}} if self.options.shard else {}),
                **({"limit": self.limit.settings()} if self.limit is not None else {})}

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The session's last line names each failed gate (after pytest's "N passed, …" line); the signals' handlers
        are the previous ones again."""
        self.interruption.restore()
        failed = self.end.failed_gates
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if self.is_worker or not failed or reporter is None:
            return
        reporter.write_line("; ".join(f"gate failed: {v.line()}" for v in failed), red=True, bold=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        self.tasks.summary(terminalreporter)
        end = self.end
        if end.results or end.verdicts:
            limit = 10**9 if self.config.getoption("verbose") > 0 else self.options.show_incorrect
            write_scores(terminalreporter, end.results, end.verdicts, incorrect_limit=limit, written=end.written)
        for line in (f"pytest-mllm: {end.failed_load}" if end.failed_load else None, end.write_failure,
                     f"pytest-mllm: {headline(end.shortfalls)}" if end.shortfalls else None):
            if line:  # once, instead of the same message under every sample
                terminalreporter.write_line(line, red=True, bold=True)
        if end.summary_warning:
            terminalreporter.write_line(f"pytest-mllm: warning: {end.summary_warning}", yellow=True)


def _exit_status(end: Conclusion, status: int) -> int:
    """A usage error when the model could not be loaded (nothing was evaluated) or a file not written; a failed gate
    fails a run whose tests passed; else pytest's own (an interrupted run's stays INTERRUPTED)."""
    if end.usage_error:
        return pytest.ExitCode.USAGE_ERROR
    if end.failed_gates and status == pytest.ExitCode.OK:
        return pytest.ExitCode.TESTS_FAILED
    return status


def _deselect(config: pytest.Config, items: list[pytest.Item], dropped: list[pytest.Item]) -> None:
    """Take `dropped` out of the run, as -k does."""
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = set(map(id, dropped))
        items[:] = [i for i in items if id(i) not in gone]


def _records_of(report: pytest.TestReport) -> list[Record]:
    """The records a sample test's report carries (decoded once, then kept decoded)."""
    raw = getattr(report, "mllm_records", None)
    if isinstance(raw, str):
        raw = report.mllm_records = records.loads(raw)  # type: ignore[attr-defined]
    return raw or []
