"""TP-Eval's section: accuracy per task under the benchmark's prompt and under the prompt customized for
the model (the paper's Table 2), and the original answer each record carries; its options (`options.py`), and
its passes:

- `--mllm-prompts=FILE` (with `--mllm-prompts-transfer`): the file is read and checked when the evaluation starts,
  and against each benchmark's samples before their tests are collected (`check_samples`); each task is asked through
  its customized prompt, the benchmark's own prompt's answer kept beside it, and the samples a prompt was optimized
  on (D_few) set aside (`set_aside`) or, where answered, made errors (`wrap_answer`, `customized.py`);
- `--mllm-optimize=FILE` (with `--mllm-optimizer*` and `--mllm-tp-*`): the run's task job (`task_job`,
  `run.OptimizationRun`), its optimizer's replies kept in the response cache (`uses_cache`), its file written task by
  task (`run_outputs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.sections import BatchAnswer, HtmlPage, HtmlPart, Section, percent, register_section
from pytest_mllm.tpeval.options import TpEvalSettings, read_settings
from pytest_mllm.tpeval.report import ORIGINAL, tp_eval_table

if TYPE_CHECKING:
    from pytest_mllm.tpeval.run import OptimizationRun


class TpEvalSection(Section):
    title = "Prompts customized per model (TP-Eval)"
    metrics = ("tp_eval",)
    gate_values = ("original_accuracy", "optimized_accuracy", "improved_tasks", "improvement_ratio")
    record_parts = (ORIGINAL,)

    def read_options(self, option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> TpEvalSettings:
        """--mllm-prompts and --mllm-prompts-transfer; --mllm-optimize with the
        optimizer's options and the search's (--mllm-tp-*, checked whether or not it optimizes)."""
        return read_settings(option)

    def uses_cache(self, settings: TpEvalSettings | None) -> bool:
        """The optimizer's replies are cached."""
        return settings is not None and settings.optimize is not None

    def run_outputs(self, settings: TpEvalSettings | None) -> dict[str, Path]:
        """The --mllm-optimize file, written task by task."""
        return {"--mllm-optimize": settings.optimize.path} if settings is not None and settings.optimize else {}

    def check_samples(self, settings: TpEvalSettings | None, spec: Any, samples: Sequence[Any], run: Any) -> None:
        """The prompts file fits this model, benchmark, version and the tasks of `samples`; the benchmark's spec
        with each customized task's template is kept for its answers."""
        if settings is None or settings.prompts is None or spec.name in settings.prompted:
            return
        from pytest_mllm.tpeval.customized import customized_spec

        settings.prompted[spec.name] = customized_spec(settings, spec, samples, run.model)

    def set_aside(self, settings: TpEvalSettings | None, sample: Any) -> bool:
        """A sample of the D_few its task's customized prompt was optimized on (D_few ∩ D_test = ∅)."""
        return settings is not None and sample.id in settings.few_ids.get(sample.task, ())

    def wrap_answer(self, settings: TpEvalSettings | None, answer: BatchAnswer) -> BatchAnswer:
        """With customized prompts (the file read now): each task asked through its own, the benchmark's prompt's
        answer beside it."""
        if settings is None or settings.prompts is None:
            return answer
        from pytest_mllm.tpeval.customized import CustomizedAnswer

        return CustomizedAnswer(settings, answer)

    def task_job(self, settings: TpEvalSettings | None, run: Any, answer: BatchAnswer, cache: Any
                 ) -> OptimizationRun | None:
        """With --mllm-optimize: one test per task, each optimizing the task's prompt."""
        if settings is None or settings.optimize is None:
            return None
        from pytest_mllm.tpeval.run import OptimizationRun

        return OptimizationRun(settings.optimize, model=run.model, answer=answer, cache=cache)

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        return [tp_eval_table(benchmark, part)]

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        return [f"- {benchmark}, customized prompts: accuracy {percent(part['original_accuracy'])} % → "
                f"{percent(part['optimized_accuracy'])} % on {part['samples']} samples, {part['improved_tasks']} of "
                f"{part['task_count']} tasks improved"]

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        """Accuracy per task under the benchmark's prompt and under the customized one."""
        charts = []
        if page.charts:
            for name, tp in parts.items():
                tasks = list(tp["tasks"])
                charts.append((f"{name}: accuracy per task, original vs customized prompt", page.bar_chart(
                    tasks, [("original", [100 * tp["tasks"][t]["original_accuracy"] for t in tasks]),
                            ("customized", [100 * tp["tasks"][t]["optimized_accuracy"] for t in tasks])],
                    axis_label="accuracy %", axis_max=100.0)))
        body = page.render("tp_eval.html.j2", benchmarks=parts, charts=charts,
                           prompts_model=page.settings.get("prompts_model"))
        return HtmlPart(self.name, self.title, body)


register_section("tp_eval", TpEvalSection())
