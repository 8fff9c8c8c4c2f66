"""Evaluating with customized prompts (--mllm-prompts): each benchmark's spec with every customized task asked
through its prompt, checked against the run first; each batch answered under it, with the benchmark's own
prompt's answer kept beside each customized task's record, and a D_few sample answered an error."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from pytest_mllm.record import Record
from pytest_mllm.sections import BatchAnswer
from pytest_mllm.tpeval.report import ORIGINAL, OriginalAnswer

if TYPE_CHECKING:
    from pytest_mllm.engine.spec import BenchmarkSpec
    from pytest_mllm.tpeval.options import TpEvalSettings


def customized_spec(settings: TpEvalSettings, spec: BenchmarkSpec, samples: Sequence[Any], model: str
                    ) -> BenchmarkSpec:
    """`spec` with each task of the prompts file asked through its template, once the file is found to fit this
    model, benchmark, version and the tasks of `samples` (ValueError names the file and the fix)."""
    from pytest_mllm.sample import Sample
    from pytest_mllm.tpeval.prompts_file import PromptsFileError, check_prompts
    from pytest_mllm.tpeval.run import task_order, with_template

    assert settings.prompts is not None and settings.prompts_path is not None  # the prompts were read from it
    tasks = task_order([s for s in samples if isinstance(s, Sample)])
    try:
        check_prompts(settings.prompts, path=settings.prompts_path, model=model, benchmark=spec.name,
                      version=spec.version, tasks=tasks, transfer=settings.transfer)
    except PromptsFileError as exc:
        raise ValueError(str(exc)) from None
    prompted = spec
    for task, prompts in settings.prompts.tasks.items():
        prompted = with_template(prompted, task, prompts.template)
    return prompted


class CustomizedAnswer:
    """A batch's records under the customized prompts (a benchmark not yet checked keeps its own prompt), each
    customized task's record holding the answer under the benchmark's own prompt (`ORIGINAL`); a sample of its
    task's D_few made an error (it cannot be scored with the prompt optimized on it)."""

    def __init__(self, settings: TpEvalSettings, answer: BatchAnswer) -> None:
        self.settings = settings
        self.answer = answer

    def __call__(self, items: Sequence[tuple[Any, BenchmarkSpec]]) -> list[Record]:
        prompts = self.settings.prompts
        assert prompts is not None
        records: list[Record] = self.answer([(s, self.settings.prompted.get(spec.name, spec)) for s, spec in items])
        customized = [n for n, (s, _) in enumerate(items) if s.task in prompts.tasks]
        originals = self.answer([items[n] for n in customized])
        for n, original in zip(customized, originals):
            record, sample = records[n], items[n][0]
            ORIGINAL.put(record, OriginalAnswer(
                prompt=original["prompt"], response=original["response"], parsed=original["parsed"],
                correct=original["correct"], status=original["status"], error=original["error"]))
            if sample.id in self.settings.few_ids.get(sample.task, ()):
                record.update({"status": "error", "correct": None, "error": (
                    f"sample {record['id']} is in the D_few the prompt of task {record['task']!r} was optimized on "
                    f"({self.settings.prompts_path}); it cannot be scored with that prompt")})
        return records
