"""MME's values in the score tables: accuracy+ (a rate) and the task scores and totals, in points; the
HTML report draws each subtask's score (0–200)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_mllm.sections import Column, HtmlPage, Section, register_section


class MmeSection(Section):
    title = "MME"
    metrics = ("accuracy_plus", "mme_score")
    columns = (Column("accuracy_plus", "acc+ %", chart_label="accuracy+ %"),
               Column("score", "score pts", unit="points", unit_note="MME scores in points"))

    def html_task_chart(self, tasks: Mapping[str, Mapping[str, Any]], group_of: Mapping[str, str | None],
                        page: HtmlPage) -> tuple[str, Any] | None:
        """Each subtask's score, coloured by its group, when every task has one."""
        if not all("score" in scope for scope in tasks.values()):
            return None
        names = list(tasks)
        return "Score per subtask", page.bar_chart(names, [("score", [tasks[t]["score"] for t in names])],
                                                   axis_label="score (0–200)", axis_max=200,
                                                   bar_groups=[group_of.get(t) for t in names])


register_section("mme", MmeSection())
