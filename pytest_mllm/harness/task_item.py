"""The test of one task in a run that works per task (`evaluation.TaskJob`, a prompt optimization):
`<benchmark>::<job>::<task>`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.evaluation import AnySample, TaskJob
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
        progress = TaskProgress(self.config, self.task, job.steps)
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
