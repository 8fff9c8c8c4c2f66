"""The test of one task in a TP-Eval optimization run: `<benchmark>::optimize::<task>`."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.evaluation import AnySample
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
