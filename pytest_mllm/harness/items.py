"""Collection: a benchmark spec file becomes a pytest collector with one test per sample
(one per task in a TP-Eval optimization run)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.echo import printable
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError
from pytest_mllm.evaluation import AnySample
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.pytest_compat import make_mark
from pytest_mllm.record import Record, SampleError
from pytest_mllm.sample import Sample, SkippedSample

_BUILTIN_MARKS = {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings"}


class IncorrectAnswer(AssertionError):
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
        if evaluation.settings.optimize is not None:  # TP-Eval: one test per task instead of one per sample
            from pytest_mllm.harness.optimize_item import optimize_items

            yield from optimize_items(self, spec, samples)
            return
        evaluation.check_prompts(spec, samples)
        evaluation.check_replay(spec, samples)
        marks = _Marks(self.config, spec)
        item_class = VrpPropertyItem if evaluation.variant_mode(spec) == "property" else SampleItem
        for order, sample in enumerate(samples):
            kind = item_class if isinstance(sample, Sample) else SampleItem
            item = kind.from_parent(self, name=printable(sample.id), sample=sample, spec=spec, order=order)
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
                + self._mark(self.spec.name, "benchmark")
                + self._mark(self.spec.group_of(task), "group")
                + self._mark(task, "task")
            )
        return self._cache[task]


class SampleItem(pytest.Item):
    """One benchmark sample as a test: the model answers, the parser reads, the scorer judges."""

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
        if isinstance(excinfo.value, (SampleError, IncorrectAnswer)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"{self.spec.name}: {self.name}"  # not a suffix of the id: pytest would rewrite dots


class VrpPropertyItem(SampleItem):
    """One source sample; hypothesis draws visual-prompt variants and checks the metamorphic relation."""

    def runtest(self) -> None:
        from pytest_mllm.vrp.property import check_relation

        run = self.config.stash[RUN_KEY]
        settings = run.evaluation.settings
        with run.log_capture.call_phase(self):
            check_relation(self.sample, self.spec, self._answer,  # type: ignore[arg-type]
                           examples=settings.vrp_examples, keep=self._keep, max_pixels=settings.max_pixels,
                           failures=settings.cache_path.parent / "vrp_failures")

    def _answer(self, sample: Sample, spec: BenchmarkSpec) -> Record:
        record = self.config.stash[RUN_KEY].evaluation.answer([(sample, spec)])[0]
        record["order"] = self.order
        return record

    def _keep(self, records: list[Record]) -> None:
        self.records = records

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from pytest_mllm.vrp.property import RelationViolated

        if isinstance(excinfo.value, RelationViolated):
            notes = "\n".join(getattr(excinfo.value, "__notes__", []))
            return f"{excinfo.value}\n{notes}".rstrip()
        return super().repr_failure(excinfo)


def describe_incorrect(record: Record) -> str:
    """A wrong answer in four lines: question, expected, response, parsed."""
    return (f"incorrect answer\n  question: {record['question']}\n  expected: {record['answer']}\n"
            f"  response: {record['response']!r}\n  parsed:   {record['parsed']}")
