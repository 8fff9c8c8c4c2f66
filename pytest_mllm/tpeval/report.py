"""TP-Eval's report: the `tp_eval` section, original vs customized prompts per task (the paper's
Table 2), and the outcome of an optimization run."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Sequence, TypedDict

from pytest_mllm.echo import markup_text
from pytest_mllm.record import Record, RecordPart, Status
from pytest_mllm.scoring.metrics import BenchmarkView, metric


class _OriginalFields(TypedDict):
    prompt: str
    response: str | None  # the model's response, as it gave it
    parsed: str | None
    correct: bool | None
    status: Status
    error: str | None


class OriginalAnswer(_OriginalFields, total=False):
    """With --mllm-prompts: the same sample answered under the benchmark's own prompt."""

    read_response: str | None  # the response as the reference's scorer receives it, where that differs


ORIGINAL: RecordPart[OriginalAnswer] = RecordPart("original")


def tp_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Per task and overall: accuracy under the benchmark's prompt and under the customized one.

    Only samples answered under both prompts count, so the two accuracies share their samples.
    Overall accuracy is over all such samples; `improvement_ratio` is the overall relative gain,
    `improved_tasks_ratio` the relative gain on the improved tasks only (the paper's Table 2 "Ratio"),
    and a task's `ratio` is optimized / original accuracy (the paper's Fig. 3).
    """
    paired = [(r, first) for r in records if (first := ORIGINAL.get(r)) and r["status"] != "error"
              and first["status"] != "error"]
    tasks: dict[str, dict[str, Any]] = {}
    for task in dict.fromkeys(r["task"] for r, _ in paired):
        mine = [(r, first) for r, first in paired if r["task"] == task]
        original = sum(bool(first["correct"]) for _, first in mine) / len(mine)
        optimized = sum(bool(r["correct"]) for r, _ in mine) / len(mine)
        tasks[task] = {"samples": len(mine), "original_accuracy": original, "optimized_accuracy": optimized,
                       "delta": optimized - original,
                       # TP-Eval Fig. 3: "accuracy using the optimized prompt divided by accuracy using the original"
                       "ratio": optimized / original if original else None}
    original = sum(bool(first["correct"]) for _, first in paired) / len(paired) if paired else 0.0
    optimized = sum(bool(r["correct"]) for r, _ in paired) / len(paired) if paired else 0.0
    # TP-Eval Table 2's "Ratio" ("32 tasks could yield a performance enhancement of 25.1%"): the relative gain
    # on the improved tasks alone, here pooled over their samples
    better = [(r, first) for r, first in paired if tasks[r["task"]]["delta"] > 0]
    before = sum(bool(first["correct"]) for _, first in better)
    after = sum(bool(r["correct"]) for r, _ in better)
    return {
        "tasks": tasks,
        "samples": len(paired),
        "original_accuracy": original,
        "optimized_accuracy": optimized,
        "improved_tasks": sum(1 for t in tasks.values() if t["delta"] > 0),
        "worse_tasks": sum(1 for t in tasks.values() if t["delta"] < 0),
        "task_count": len(tasks),
        "improvement_ratio": (optimized - original) / original if original else None,
        "improved_tasks_ratio": (after - before) / before if before else None,
    }


def has_original_answers(records: Sequence[Record]) -> bool:
    """The TP-Eval section applies once records carry an answer under the benchmark's own prompt
    (a run with --mllm-prompts); a spec never declares it."""
    return any(ORIGINAL.get(r) for r in records)


@metric("tp_eval", section=True, applies=has_original_answers, declarable=False, keys=("tp_eval",))
def tp_eval_section(benchmark: BenchmarkView) -> dict[str, Any]:
    """Section `tp_eval`: `tp_metrics` over the benchmark's records."""
    return {"tp_eval": tp_metrics(benchmark.records)}


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}"


def tp_eval_table(benchmark: str, tp: Mapping[str, Any]) -> Any:
    """Original vs customized prompt per task, improved tasks and the improvement ratio (`tp`: the
    benchmark's `tp_eval` section)."""
    from rich.table import Table

    title = f"{benchmark} · TP-Eval: benchmark prompt vs customized prompt (test split)"
    table = Table(title=title, title_justify="left", show_edge=False, min_width=len(title))
    for name, justify in (("task", "left"), ("samples", "right"), ("original acc %", "right"),
                          ("customized acc %", "right"), ("Δ points", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for task, row in tp["tasks"].items():
        table.add_row(markup_text(task), str(row["samples"]), _pct(row["original_accuracy"]), _pct(row["optimized_accuracy"]),
                      f"{100 * row['delta']:+.2f}")
    table.add_row("overall", str(tp["samples"]), _pct(tp["original_accuracy"]), _pct(tp["optimized_accuracy"]),
                  f"{100 * (tp['optimized_accuracy'] - tp['original_accuracy']):+.2f}", style="bold")
    ratio = "—" if tp["improvement_ratio"] is None else f"{100 * tp['improvement_ratio']:+.1f} %"
    improved = tp.get("improved_tasks_ratio")
    on_improved = "—" if improved is None else f"{100 * improved:+.1f} %"
    table.caption = (f"improved tasks {tp['improved_tasks']}/{tp['task_count']} (ratio on them {on_improved}) · "
                     f"worse {tp['worse_tasks']} · improvement ratio {ratio}")
    table.caption_justify = "left"
    return table


def optimization_summary(outcomes: Sequence[dict[str, Any]], prompts_path: Path | None
                         ) -> tuple[str, list[Any], list[str], list[str]]:
    """What the terminal summary shows after an optimization run: (heading, tables, warnings, lines)."""
    warnings = [f"{outcome['benchmark']}::{outcome['task']}: {warning}" for outcome in outcomes
                for warning in summarize_warnings(outcome.get("warnings") or [])]
    return ("pytest-mllm TP-Eval prompt customization", [optimization_table(outcomes)], warnings,
            [f"pytest-mllm: prompts written to {prompts_path}"])


def optimization_table(outcomes: Sequence[dict[str, Any]]) -> Any:
    """Each optimized task: its mode, D_few's size and source, D_few accuracy before and after, calls made,
    and the prompt chosen."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    table = Table(title="TP-Eval: prompts customized for the model under test (accuracy on D_few)",
                  title_justify="left", show_edge=False)
    longest = min(max((len(o["task"]) for o in outcomes), default=4), 30)  # task names stay whole on 80 columns
    for name in ("benchmark", "task", "mode", "D_few", "original %", "chosen %", "optimizer calls", "model answers"):
        table.add_column(name, justify="left" if name in ("benchmark", "task", "mode") else "right",
                         min_width=longest if name == "task" else None)
    prompts_chosen = Text()
    for outcome in outcomes:
        prompts = outcome["prompts"]
        history = prompts.get("history") or []
        first = history[0]["accuracy"] if history else None
        chosen = next((h["accuracy"] for h in history if h["prompt"] == prompts["optimized"]), None)
        calls = outcome.get("calls_made") or {}
        made = ("in the file", "") if outcome.get("already") else (str(calls.get("optimizer", 0)),
                                                                  str(calls.get("scorer", 0)))
        size, source = _few(outcome, prompts)
        table.add_row(outcome.get("benchmark", ""), markup_text(outcome["task"]), prompts["mode"], size, _pct(first),
                      _pct(chosen),
                      *made)
        prompts_chosen.append(f"{outcome['task']}: ", style="bold")
        if source:
            prompts_chosen.append(f"(D_few: {size} {source}) ")
        prompts_chosen.append(f"{prompts['optimized']}\n")
    return Group(table, Text(""), prompts_chosen)


def _few(outcome: dict[str, Any], prompts: dict[str, Any]) -> tuple[str, str]:
    """D_few's size ("—" for a zero-shot prompt) and where it came from (validation, half of dev+val, seeded)."""
    size = outcome.get("d_few_size", prompts.get("d_few_size", len(prompts.get("d_few") or [])))
    source = outcome.get("d_few_source") or prompts.get("d_few_source") or ""
    if not size and prompts.get("mode") == "zero-shot":
        return "—", ""
    return str(size), source


_UNUSABLE = re.compile(r"^round (\d+): reply \d+ unusable: (.*)$")
_EMPTY_ROUND = re.compile(r"^round (\d+): the optimizer returned no (usable|new) prompt")


def summarize_warnings(warnings: Sequence[str]) -> list[str]:
    """A task's warnings in a few lines: unusable replies counted by reason, empty rounds listed."""
    reasons: Counter[str] = Counter()
    empty: list[str] = []
    other: list[str] = []
    for warning in warnings:
        if match := _UNUSABLE.match(warning):
            reasons[match.group(2)] += 1
        elif match := _EMPTY_ROUND.match(warning):
            empty.append(match.group(1))
        else:
            other.append(warning)
    lines = []
    if reasons:
        lines.append(f"{sum(reasons.values())} optimizer replies unusable: "
                     + "; ".join(f"{reason} ({n})" for reason, n in reasons.most_common()))
    if empty:
        lines.append(f"no new usable prompt in round(s) {', '.join(empty)}")
    return lines + other
