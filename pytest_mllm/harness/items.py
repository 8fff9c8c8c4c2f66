"""Collection: a benchmark spec file becomes a pytest collector with one test per sample
(one per task in a run that works per task: `harness/task_item.py`)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.echo import printable
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError
from pytest_mllm.evaluation import AnySample, SampleCheck
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.pytest_compat import make_mark
from pytest_mllm.record import MessageOnly, Record, SampleError
from pytest_mllm.sample import Sample, SkippedSample

_BUILTIN_MARKS = {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"}


class IncorrectAnswer(MessageOnly, AssertionError):
    """A wrong answer under --mllm-strict."""


def marker_name(name: str) -> str | None:
    """A benchmark, task or group name as a marker usable with -m, if it can be one."""
    marker = re.sub(r"\W", "_", name)
    if not marker or marker[0].isdigit() or marker in _BUILTIN_MARKS:
        return None
    return marker


class BenchmarkFile(pytest.File):
    """A benchmark spec file; collects one SampleItem per sample."""

    def __init__(self, *, spec: BenchmarkSpec | None = None, **kwargs: Any) -> None:
        """`spec`: already read (from --mllm-bench); else it is read when the file collects."""
        super().__init__(**kwargs)
        self._spec = spec

    def collect(self) -> Iterator[pytest.Item]:
        evaluation = self.config.stash[RUN_KEY].evaluation
        spec = self._spec or evaluation.spec(self.path.resolve())
        samples = evaluation.samples_for(spec)
        job = evaluation.task_job()
        if job is not None:  # one test per task instead of one per sample
            from pytest_mllm.harness.task_item import task_items

            yield from task_items(self, spec, samples, job)
            return
        evaluation.check_samples(spec, samples)
        evaluation.check_replay(spec, samples)
        marks = _Marks(self.config, spec)
        check = evaluation.sample_check(spec)
        for order, sample in enumerate(samples):
            if check is not None and isinstance(sample, Sample):
                item: SampleItem = CheckedSampleItem.from_parent(self, name=printable(sample.id), sample=sample,
                                                                 spec=spec, order=order, check=check)
            else:
                item = SampleItem.from_parent(self, name=printable(sample.id), sample=sample, spec=spec, order=order)
            item.own_markers.extend(marks.for_task(sample.task))
            yield item

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SpecError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class _Marks:
    """Markers per benchmark, group and task (registered so --strict-markers accepts them)."""

    def __init__(self, config: pytest.Config, spec: BenchmarkSpec) -> None:
        self.config = config
        self.spec = spec
        self._cache: dict[str, list[pytest.Mark]] = {}

    def _mark(self, name: str | None, what: str) -> list[pytest.Mark]:
        marker = marker_name(name) if name else None
        if marker is None:
            return []
        self.config.addinivalue_line("markers", f"{marker}: pytest-mllm {what} {name}")
        return [make_mark(marker)]

    def for_task(self, task: str) -> list[pytest.Mark]:
        if task not in self._cache:
            self._cache[task] = (
                [make_mark("mllm")]
                + [mark for name in self.spec.names for mark in self._mark(name, "benchmark")]
                + self._mark(self.spec.group_of(task), "group")
                + self._mark(task, "task")
            )
        return self._cache[task]


class SampleItem(pytest.Item):
    """One benchmark sample as a test: the model answers, the parser reads, the scorer judges."""

    draws_records = False  # True: its records are drawn as it runs (how many is not known before)

    def __init__(self, *, sample: AnySample, spec: BenchmarkSpec, order: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sample = sample
        self.spec = spec
        self.order = order
        self.records: list[Record] = []

    @property
    def ihook(self) -> Any:  # type: ignore[override]
        """pytest's hooks, without its per-phase log capture (`harness/log_capture.py`)."""
        return self.config.stash[RUN_KEY].log_capture.hook_relay(self)

    def runtest(self) -> None:
        if isinstance(self.sample, SkippedSample):
            pytest.skip(self.sample.reason)  # a sample this run does not apply to: not an error
        run = self.config.stash[RUN_KEY]
        with run.log_capture.call_phase(self):
            record = run.record_for(self)
        self.records = [record]
        if record["status"] == "error":
            raise SampleError(printable(record["error"] or "", keep_lines=True))
        if record["status"] == "incorrect" and run.strict:
            raise IncorrectAnswer(describe_incorrect(record))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, MessageOnly):
            return "\n".join([str(excinfo.value), *getattr(excinfo.value, "__notes__", [])])
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.spec.name}: {self.name}"  # not a suffix of the id: pytest would rewrite dots


class CheckedSampleItem(SampleItem):
    """One source sample whose test runs the run's check (`evaluation.SampleCheck`) instead of one answer:
    it answers as it needs (VRPTEST's property mode draws variants) and fails when the check does."""

    draws_records = True

    def __init__(self, *, check: SampleCheck, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.check = check

    def runtest(self) -> None:
        run = self.config.stash[RUN_KEY]
        with run.log_capture.call_phase(self):
            self.check(self.sample, self._answer, self._keep)  # type: ignore[arg-type]

    def _answer(self, sample: Sample, spec: BenchmarkSpec) -> Record:
        record = self.config.stash[RUN_KEY].evaluation.answer([(sample, spec)])[0]
        record["order"] = self.order
        return record

    def _keep(self, records: list[Record]) -> None:
        self.records = records


def describe_incorrect(record: Record) -> str:
    """A wrong answer in four lines: question, expected, response, parsed."""
    return (f"incorrect answer\n  question: {record['question']}\n  expected: {record['answer']}\n"
            f"  response: {record['response']!r}\n  parsed:   {record['parsed']}")
