"""A run that works per task (`evaluation.TaskJob`, a prompt optimization) in pytest: the test of one task
(`<benchmark>::<job>::<task>`), and what the controller does with the tasks (the plan before they start,
each outcome kept as it arrives, the summary)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import BenchmarkSpec, load_spec
from pytest_mllm.evaluation import AnySample, Evaluation, TaskJob
from pytest_mllm.harness.progress import TaskProgress
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.record import MessageOnly
from pytest_mllm.sample import Sample


def task_items(parent: pytest.File, spec: BenchmarkSpec, samples: Sequence[AnySample], job: TaskJob
               ) -> Iterator[pytest.Item]:
    """One test per task, in the order the tasks' first samples come."""
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        if isinstance(sample, Sample):
            by_task.setdefault(sample.task, []).append(sample)
    for task, members in by_task.items():
        yield TaskItem.from_parent(parent, name=f"{job.name}::{task}", spec=spec, task=task, samples=members)


class TaskItem(pytest.Item):
    """Runs the run's task job on one task's samples; passes with the job's outcome."""

    def __init__(self, *, spec: BenchmarkSpec, task: str, samples: list[Sample], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.task = task
        self.samples = samples  # the task's samples, as collected
        self.result: dict[str, Any] | None = None

    def runtest(self) -> None:
        job = self.config.stash[RUN_KEY].evaluation.task_job()
        assert job is not None, "a task's test is collected only in a run with a task job"
        progress = TaskProgress(self.config, self.task, job)
        try:
            self.result = job.run_task(self.spec, self.task, self.samples, progress)
        finally:
            progress.close()
        self.result["calls_made"] = dict(progress.counts)

    def result_json(self) -> str | None:
        return json.dumps(self.result) if self.result is not None else None

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, MessageOnly):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.spec.name}: {self.name.replace('::', ' ', 1)}"


class TaskReports:
    """The controller's side of a run with a task job: the plan shown once before the tasks start, each
    finished task's outcome handed to the job as its report arrives (an interrupted run keeps it), and the
    outcomes for the terminal summary."""

    def __init__(self, config: pytest.Config, evaluation: Evaluation, spec_paths: set[Path]) -> None:
        self.config = config
        self.job = evaluation.task_job()
        self.evaluation = evaluation
        self.spec_paths = spec_paths
        self.outcomes: list[dict[str, Any]] = []
        self._plan_shown = False

    def collected(self, items: Sequence[pytest.Item]) -> None:
        """This process collected the run (no xdist): the plan of its task tests."""
        if self.job is not None:
            self.show_plan([(i.spec, i.task) for i in items if isinstance(i, TaskItem)])

    def workers_collected(self, ids: Sequence[str]) -> None:
        """Under xdist the controller learns the selected tasks from the workers' collection."""
        if self.job is None:
            return
        specs = {spec.name: spec for spec in map(load_spec, self.spec_paths)}
        selected = []
        for nodeid in ids:
            name, _, task = nodeid.partition(f"::{self.job.name}::")
            spec = specs.get(Path(name).stem) or specs.get(name)
            if task and spec is not None:
                selected.append((spec, task))
        self.show_plan(selected)

    def show_plan(self, selected: Sequence[tuple[BenchmarkSpec, str]]) -> None:
        """Before the tasks start: what they will cost at most."""
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if self._plan_shown or self.job is None or reporter is None:
            return
        self._plan_shown = True
        try:
            lines = self.job.plan_lines(selected)
        except Exception as exc:  # noqa: BLE001 - the same problem errors the tests, with its full message
            lines = [f"{self.job.name}: the plan could not be computed ({exc})"]
        for line in lines:
            reporter.write_line(line, bold=True)

    @staticmethod
    def carry(item: pytest.Item, report: pytest.TestReport) -> None:
        """A task test's outcome on its report (one JSON string, which crosses xdist)."""
        if isinstance(item, TaskItem):
            report.mllm_task = item.result_json()  # type: ignore[attr-defined]
            report.mllm_spec = str(item.spec.path)  # type: ignore[attr-defined]

    def received(self, report: pytest.TestReport) -> None:
        """A task's report reached the controller: the job keeps its outcome at once."""
        raw = getattr(report, "mllm_task", None)
        if not raw or self.job is None:
            return
        spec = self.evaluation.spec(Path(report.mllm_spec))  # type: ignore[attr-defined]
        outcome = json.loads(raw)
        outcome["benchmark"] = spec.name
        self.outcomes.append(outcome)
        self.job.task_finished(spec, outcome)

    def summary(self, reporter: Any) -> None:
        """The job's part of the summary (when any task ended)."""
        if self.outcomes and self.job is not None:
            from pytest_mllm.harness.summary import write_part

            write_part(reporter, *self.job.summary(self.outcomes))
