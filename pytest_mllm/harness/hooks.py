"""The run's pytest hooks, registered only when a --mllm option is given; each delegates to the
evaluation core (`pytest_mllm.evaluation`), the batcher or the report."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm import record as records
from pytest_mllm.echo import printable
from pytest_mllm.engine.evaluator import load_failure_line
from pytest_mllm.engine.output_paths import OutputError, OutputWriteError
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, is_spec_file, load_spec
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.batching import Batcher
from pytest_mllm.harness.items import BenchmarkFile, SampleItem
from pytest_mllm.harness.limit import RunLimit
from pytest_mllm.harness.log_capture import SampleLogCapture
from pytest_mllm.harness.model_load import ModelLoadReport
from pytest_mllm.harness.options import Options
from pytest_mllm.harness.summary import write_part, write_scores
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult, baseline_pairing, results_document
from pytest_mllm.sample import BadSample, Sample
from pytest_mllm.scoring.gates import Verdict


class MllmHooks:
    """The hooks of one run: collection, batched answers, records across xdist, scores and gates."""

    def __init__(self, config: pytest.Config, options: Options, evaluation: Evaluation,
                 load_report: ModelLoadReport) -> None:
        self.config = config
        self.load_report = load_report
        self.options = options
        self.evaluation = evaluation
        self.strict = options.strict
        self.is_worker = hasattr(config, "workerinput")
        self.batches = Batcher(config, evaluation, thumbnails=options.outputs.html_path is not None)
        self.log_capture = SampleLogCapture(config)
        self.spec_paths = {p.resolve() for p in options.benchmarks}
        self.results: dict[str, BenchmarkResult] = {}
        self.verdicts: list[Verdict] = []
        self.written: list[tuple[str, Path]] = []
        self.tp_outcomes: list[dict[str, Any]] = []
        self.few_deselected = 0
        self.shard_expected: dict[str, int] | None = None  # --mllm-shard: records per benchmark in all shards
        self.limit = RunLimit(options.limit) if options.limit is not None else None  # --mllm-limit
        self._plan_printed = False
        self.write_failure = ""  # why an output could not be written at the end
        self.summary_warning = options.outputs.step_summary_problem  # why the job summary is left out
        self.failed_load: str | None = None  # the summary's line when the model could not be loaded

    def record_for(self, item: pytest.Item) -> Record:
        return self.batches.record_for(item)  # type: ignore[arg-type]

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
        few = [i for i in items if isinstance(i, SampleItem) and isinstance(i.sample, Sample)
               and self.evaluation.optimized_on(i.sample)]
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
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist: a worker's view of the whole (unsharded) selection, for the shard's results file."""
        raw = getattr(node, "workeroutput", {}).get("mllm_shard_expected")
        if raw and self.shard_expected is None:
            self.shard_expected = json.loads(raw)
        if self.limit is not None:
            self.limit.worker_done(node)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.batches.collected(session.items)
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        for line in self.evaluation.replay_coverage.values():  # collection's own output is captured
            if reporter is not None:
                reporter.write_line(line)
        if self.evaluation.settings.optimize and not self.is_worker:
            self.print_plan([(i.spec, i.task) for i in session.items if hasattr(i, "result_json")])  # type: ignore[attr-defined]

    def print_plan(self, selected: Sequence[tuple[BenchmarkSpec, str]]) -> None:
        """Before an optimization starts: the calls it will make at most."""
        if self._plan_printed:
            return
        self._plan_printed = True
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            return
        try:
            lines = self.evaluation.optimization.plan_lines(selected)
        except Exception as exc:  # noqa: BLE001 - the same problem errors the tests, with its full message
            lines = [f"TP-Eval: the plan could not be computed ({exc})"]
        for line in lines:
            reporter.write_line(line, bold=True)

    def workers_collected(self, ids: Sequence[str]) -> None:
        """Under xdist the controller learns the selected tasks from the workers' collection."""
        if not self.evaluation.settings.optimize:
            return
        specs = {spec.name: spec for spec in map(load_spec, self.spec_paths)}
        selected = []
        for nodeid in ids:
            name, _, task = nodeid.partition("::optimize::")
            spec = specs.get(Path(name).stem) or specs.get(name)
            if task and spec is not None:
                selected.append((spec, task))
        self.print_plan(selected)

    # -- running ------------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        if call.when == "call" and hasattr(item, "result_json"):  # a TP-Eval task
            report.mllm_tp = item.result_json()
            report.mllm_spec = str(item.spec.path)  # type: ignore[attr-defined]
        if isinstance(item, SampleItem) and call.when == "call" and item.records:
            load = self.load_report.take_load()  # the model's load is not this sample's time
            load_s = load["seconds"] if load else 0.0
            if load:
                report.mllm_load = load
            for record in item.records:
                record["duration_s"] = round(max(report.duration - load_s, 0.0) / len(item.records), 6)
            self.load_report.stop_on_failure(item.session, item.records)
            # one JSON string crosses xdist fast; in this process the records ride as they are
            report.mllm_records = records.dumps(item.records) if self.is_worker else item.records
            report.mllm_spec = str(item.spec.path)
            if not self.strict:  # a wrong answer passes, and shows in the JUnit XML (its teardown report's)
                from pytest_mllm.harness.junit import incorrect_properties

                item.user_properties.extend(incorrect_properties(item.records))
        return report

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
        """xdist: a worker died while running `crashitem`; its sample is scored as an error."""
        found = self._sample_of(crashitem)
        if found is None:
            return
        sample, spec, order = found
        record = self.evaluation.crashed(sample, spec, str(report.longrepr))
        record["order"] = order
        report.mllm_records = records.dumps([record])
        report.mllm_spec = str(spec.path)

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
        load = getattr(report, "mllm_load", None)
        if load and getattr(report, "node", None) is not None:  # a worker loaded the model
            self.load_report.loaded(load, report.node.gateway.id)
        spec_path = Path(report.mllm_spec) if hasattr(report, "mllm_spec") else None
        self.evaluation.gather(_records_of(report), spec_path)
        if getattr(report, "mllm_tp", None):
            self._task_optimized(json.loads(report.mllm_tp), self.evaluation.spec(spec_path))  # type: ignore[arg-type]

    def _task_optimized(self, outcome: dict[str, Any], spec: BenchmarkSpec) -> None:
        """Write a finished task into the prompts file at once: an interrupted run keeps it."""
        from pytest_mllm.tpeval.run import task_prompts

        outcome["benchmark"] = spec.name
        self.tp_outcomes.append(outcome)
        if not outcome["already"]:
            self.evaluation.optimization.save(spec, outcome["task"], task_prompts(outcome["prompts"]))

    # -- reporting ----------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.batches.close()
        if self.is_worker:
            return
        self.results = self.evaluation.results()
        current = {name: r.metrics for name, r in self.results.items()}
        self.verdicts = self.options.gates.verdicts(
            current, {name: [*r.spec.task_order, *r.spec.groups] for name, r in self.results.items()},
            {name: r.spec.headline for name, r in self.results.items()},
            paired=baseline_pairing(self.options.gates, self.results))
        if any(v.verdict == "fail" for v in self.verdicts) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        from pytest_mllm.harness.junit import write_to_junit

        write_to_junit(self.config, self.results, self.verdicts)
        self.failed_load = load_failure_line([r for result in self.results.values() for r in result.records])
        if self.failed_load:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR  # the model could not be loaded: nothing was evaluated
        outputs = self.options.outputs
        # Only the results JSON and the HTML report read the document: building it computes every metric's
        # interval (a bootstrap over the records), which a run writing neither would pay for nothing.
        needed = outputs.json_path is not None or outputs.html_path is not None
        document = results_document(self.results, self.verdicts, self._settings()) if needed else {}
        try:
            self.written = outputs.write(document, self.results)
            if outputs.markdown_path or outputs.step_summary:
                from pytest_mllm.report.markdown import github_run_url, markdown_summary

                text = markdown_summary(self.results, self.verdicts, model=self.evaluation.settings.model,
                                        written=self.written, run_url=github_run_url(os.environ))
                written, self.summary_warning = outputs.write_summary(text)
                self.written += written
        except (OutputWriteError, OutputError) as exc:  # a full disk, a folder gone: one line, not a traceback
            self.write_failure = f"pytest-mllm: error: {exc}"
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def _settings(self) -> dict[str, Any]:
        gates = self.options.gates
        return {**self.evaluation.describe(), "benchmarks": [str(p) for p in self.options.benchmarks],
                "strict": self.strict, "few_deselected": self.few_deselected,
                "model_loads": self.load_report.loads, "gates": [g.text for g in gates.gates],
                "baseline": str(gates.baseline) if gates.baseline else None,
                **({"shard": {"index": self.options.shard[0], "count": self.options.shard[1],
                              "expected_records": self.shard_expected}} if self.options.shard else {}),
                **({"limit": self.limit.settings()} if self.limit is not None else {})}

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """The session's last line names each failed gate (after pytest's "N passed, …" line)."""
        failed = [v for v in self.verdicts if v.verdict == "fail"]
        reporter = config.pluginmanager.getplugin("terminalreporter")
        if self.is_worker or not failed or reporter is None:
            return
        reporter.write_line("; ".join(f"gate failed: {v.line()}" for v in failed), red=True, bold=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        if self.tp_outcomes:
            from pytest_mllm.tpeval.report import optimization_summary

            prompts_path = self.evaluation.settings.optimize.path  # type: ignore[union-attr]
            write_part(terminalreporter, *optimization_summary(self.tp_outcomes, prompts_path))
        if self.results or self.verdicts:
            limit = 10**9 if self.config.getoption("verbose") > 0 else self.options.show_incorrect
            write_scores(terminalreporter, self.results, self.verdicts, incorrect_limit=limit, written=self.written)
        if self.failed_load:  # once, instead of the same message under every sample
            terminalreporter.write_line(f"pytest-mllm: {self.failed_load}", red=True, bold=True)
        if self.write_failure:
            terminalreporter.write_line(self.write_failure, red=True, bold=True)
        if self.summary_warning:
            terminalreporter.write_line(f"pytest-mllm: warning: {self.summary_warning}", yellow=True)


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
        raw = report.mllm_records = records.loads(raw)
    return raw or []
