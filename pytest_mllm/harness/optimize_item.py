"""A TP-Eval optimization run in pytest: the test of one task (`<benchmark>::optimize::<task>`), and what the
controller does with the tasks (the plan before they start, each task's prompts saved as it ends, the summary)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import BenchmarkSpec, load_spec
from pytest_mllm.evaluation import AnySample, Evaluation
from pytest_mllm.harness.progress import TaskProgress
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.sample import Sample


def optimize_items(parent: pytest.File, spec: BenchmarkSpec, samples: Sequence[AnySample]) -> Iterator[pytest.Item]:
    """One test per task, in the order the tasks' first samples come."""
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        if isinstance(sample, Sample):
            by_task.setdefault(sample.task, []).append(sample)
    for task, members in by_task.items():
        yield OptimizeTaskItem.from_parent(parent, name=f"optimize::{task}", spec=spec, task=task, samples=members)


class OptimizeTaskItem(pytest.Item):
    """Optimizes one task's prompt for the model under test; passes with the prompt found."""

    def __init__(self, *, spec: BenchmarkSpec, task: str, samples: list[Sample], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.task = task
        self.samples = samples  # the task's samples, as collected
        self.result: dict[str, Any] | None = None

    def runtest(self) -> None:
        run = self.config.stash[RUN_KEY].evaluation.optimization
        progress = TaskProgress(self.config, self.task, 0 if run.zero_shot else run.settings.rounds)
        try:
            self.result = run.optimize(self.spec, self.task, self.samples, progress)
        finally:
            progress.close()
        self.result["calls_made"] = dict(progress.counts)

    def result_json(self) -> str | None:
        return json.dumps(self.result) if self.result is not None else None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from pytest_mllm.tpeval.prompts_file import PromptsFileError
        from pytest_mllm.tpeval.run import OptimizationError

        if isinstance(excinfo.value, (OptimizationError, PromptsFileError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.spec.name}: optimize {self.task}"


class OptimizationReports:
    """The controller's side of an optimization run: the plan printed once before the tasks start, each
    finished task written into the prompts file as its report arrives (an interrupted run keeps it), and
    the outcomes for the terminal summary."""

    def __init__(self, config: pytest.Config, evaluation: Evaluation, spec_paths: set[Path]) -> None:
        self.config = config
        self.evaluation = evaluation
        self.spec_paths = spec_paths
        self.outcomes: list[dict[str, Any]] = []
        self._plan_printed = False

    def collected(self, items: Sequence[pytest.Item]) -> None:
        """This process collected the run (no xdist): the plan of its task tests."""
        self.print_plan([(i.spec, i.task) for i in items if isinstance(i, OptimizeTaskItem)])

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

    @staticmethod
    def carry(item: pytest.Item, report: pytest.TestReport) -> None:
        """A task test's outcome on its report (one JSON string, which crosses xdist)."""
        if isinstance(item, OptimizeTaskItem):
            report.mllm_tp = item.result_json()  # type: ignore[attr-defined]
            report.mllm_spec = str(item.spec.path)  # type: ignore[attr-defined]

    def received(self, report: pytest.TestReport) -> None:
        """A task's report reached the controller: its prompts go into the prompts file at once."""
        raw = getattr(report, "mllm_tp", None)
        if not raw:
            return
        from pytest_mllm.tpeval.run import task_prompts

        spec = self.evaluation.spec(Path(report.mllm_spec))  # type: ignore[attr-defined]
        outcome = json.loads(raw)
        outcome["benchmark"] = spec.name
        self.outcomes.append(outcome)
        if not outcome["already"]:
            self.evaluation.optimization.save(spec, outcome["task"], task_prompts(outcome["prompts"]))

    def summary(self, reporter: Any) -> None:
        """The table of optimized tasks (when any ended)."""
        if self.outcomes:
            from pytest_mllm.harness.summary import write_optimization

            write_optimization(reporter, self.outcomes, self.evaluation.settings.optimize.path)  # type: ignore[union-attr]
