"""TP-Eval's section: accuracy per task under the benchmark's prompt and under the prompt customized for
the model (the paper's Table 2), and the original answer each record carries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_mllm.sections import HtmlPage, HtmlPart, Section, percent, register_section
from pytest_mllm.tpeval.report import ORIGINAL, tp_eval_table


class TpEvalSection(Section):
    title = "Prompts customized per model (TP-Eval)"
    metrics = ("tp_eval",)
    gate_values = ("original_accuracy", "optimized_accuracy", "improved_tasks", "improvement_ratio")
    record_parts = (ORIGINAL,)

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
