"""Progress of a task job's task (`evaluation.TaskJob`: a prompt optimization): a rich bar on a terminal, one
line per step elsewhere, calls counted; the job words them.

Test output is captured while a task runs, so every write suspends capturing for its moment
(as pytest's live logging does). Under xdist the workers' screens are not shown: the
controller prints each task's outcome as its report arrives instead.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any

import pytest

from pytest_mllm.pytest_compat import is_worker

if TYPE_CHECKING:
    from pytest_mllm.evaluation import TaskJob


class TaskProgress:
    """`progress(event, n)` for one task: counts calls and shows where the task is."""

    def __init__(self, config: pytest.Config, task: str, job: TaskJob) -> None:
        self.config = config
        self.task = task
        self.job = job
        self.counts = dict.fromkeys(job.calls, 0)  # calls actually sent (replayed ones are free)
        self.round = 0
        self.visible = not is_worker(config)
        self._bar: Any = None
        self._bar_task: Any = None

    def __call__(self, event: str, n: int) -> None:
        if event.endswith("-made") and event.removesuffix("-made") in self.counts:
            self.counts[event.removesuffix("-made")] += n
        elif event == "round":
            self.round = n
            self._show()

    def _show(self) -> None:
        if not self.visible:
            return
        capman = self.config.pluginmanager.getplugin("capturemanager")
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            if sys.__stdout__ is not None and sys.__stdout__.isatty():
                self._draw_bar()
            else:
                reporter = self.config.pluginmanager.getplugin("terminalreporter")
                if reporter is not None:
                    reporter.write_line(self._line())

    def _line(self) -> str:
        return f"  {self.job.title} {self.task}: round {self.round}/{self.job.steps} · {self.job.calls_text(self.counts)}"

    def _draw_bar(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        if self._bar is None:
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[calls]}"), console=Console(file=sys.__stdout__),
                                 auto_refresh=False, redirect_stdout=False, redirect_stderr=False, transient=True)
            self._bar.start()
            self._bar_task = self._bar.add_task(f"{self.job.title} {self.task}", total=self.job.steps, calls="")
        calls = self.job.calls_text(self.counts, bar=True)
        self._bar.update(self._bar_task, completed=self.round, calls=calls)
        self._bar.refresh()
        if self.round >= self.job.steps:
            self._bar.stop()

    def close(self) -> None:
        """Take the bar down (a task that ended early)."""
        if self._bar is not None:
            self._bar.stop()

