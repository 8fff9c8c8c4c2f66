"""What curation bought: samples and evaluation time before and after, the spread of the panel's
scores before and after, and each judge's accuracy per difficulty class.

Accuracy counts correct over answered (errored samples are left out, as everywhere in curation).
Evaluation time is the sum of the judges' `latency_s` (generation time; the response cache keeps
it, so cached runs report it too). Spread: max − min and the population standard deviation of
the judges' accuracies, and Kendall's τ-b between the judges' ranking on all samples and on the
kept ones (1: same order).
"""

from __future__ import annotations

import math
import statistics
from typing import Any, Iterable, Sequence

from pytest_mllm.curation.difficulty import CLASSES
from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.pipeline import REASONS, Curation, Settings
from pytest_mllm.echo import markup_text


def accuracy(run: Run, ids: Iterable[str]) -> float | None:
    """Correct over answered among `ids`; None when none was answered."""
    verdicts = [run.verdict(i) for i in ids]
    known = [v for v in verdicts if v is not None]
    return sum(known) / len(known) if known else None


def latency(run: Run, ids: Iterable[str]) -> float:
    """Σ latency_s of the run's records among `ids`."""
    return sum(float((run.records.get(i) or {}).get("latency_s") or 0.0) for i in ids)


def kendall_tau(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's τ-b of two paired sequences (ties allowed); None when either is constant."""
    concordant = discordant = ties_x = ties_y = 0
    for i in range(len(x)):
        for j in range(i + 1, len(x)):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denominator = math.sqrt((concordant + discordant + ties_x) * (concordant + discordant + ties_y))
    return (concordant - discordant) / denominator if denominator else None


def same_ranking(x: Sequence[float], y: Sequence[float]) -> bool:
    """Every pair of judges ordered alike (ties included) in both sequences."""
    sign = lambda v: (v > 0) - (v < 0)  # noqa: E731
    return all(sign(x[i] - x[j]) == sign(y[i] - y[j]) for i in range(len(x)) for j in range(i + 1, len(x)))


def _spread(values: Sequence[float]) -> dict[str, float | None]:
    if not values:
        return {"max_minus_min": None, "stdev": None}
    return {"max_minus_min": max(values) - min(values), "stdev": statistics.pstdev(values)}


def build_report(curation: Curation, panel: Sequence[Run], settings: Settings) -> dict[str, Any]:
    """The report as plain data (it also goes into the manifest)."""
    all_ids = list(curation.items)
    kept_ids = curation.kept_ids
    classes = curation.sample_class()
    tasks = list(dict.fromkeys(item.task for item in curation.items.values()))
    kept_set = set(kept_ids)
    samples = {"tasks": {t: {"before": sum(1 for i in curation.items.values() if i.task == t),
                             "after": sum(1 for i in kept_ids if curation.items[i].task == t)} for t in tasks},
               "before": len(all_ids), "after": len(kept_ids)}
    dropped: dict[str, dict[str, int]] = {t: dict.fromkeys(REASONS, 0) for t in tasks}
    for decision in curation.decisions.values():
        if decision.reason is not None:
            dropped[decision.unit.task][decision.reason] += decision.unit.size
    models = []
    for run in panel:
        per_class = {c: accuracy(run, [i for i in all_ids if classes[i] == c]) for c in CLASSES}
        models.append({"model": run.label, "accuracy_before": accuracy(run, all_ids),
                       "accuracy_after": accuracy(run, kept_ids),
                       "time_before_s": latency(run, all_ids), "time_after_s": latency(run, kept_set),
                       "accuracy_by_class": per_class})
    time_before = sum(m["time_before_s"] for m in models)
    time_after = sum(m["time_after_s"] for m in models)
    scored = [m for m in models if m["accuracy_before"] is not None and m["accuracy_after"] is not None]
    before = [m["accuracy_before"] for m in scored]
    after = [m["accuracy_after"] for m in scored]
    class_sizes = {c: {"before": sum(1 for i in all_ids if classes[i] == c),
                       "after": sum(1 for i in kept_ids if classes[i] == c)} for c in CLASSES}
    return {
        "thresholds": {"easy_min": settings.thresholds.easy_min, "hard_max": settings.thresholds.hard_max,
                       "panel": settings.thresholds.panel, "ranges": settings.thresholds.ranges(),
                       "describe": settings.thresholds.describe(), "origin": settings.thresholds.origin},
        "samples": samples,
        "dropped": dropped,
        "classes": class_sizes,
        "time": {"before_s": time_before, "after_s": time_after,
                 "ratio": time_after / time_before if time_before else None},
        "models": models,
        "spread": {"before": _spread(before), "after": _spread(after),
                   "kendall_tau": kendall_tau(before, after) if len(scored) >= 2 else None,
                   "ranking_unchanged": same_ranking(before, after) if len(scored) >= 2 else None},
        "leakage": [vars(t) for t in curation.leakage.tasks],
        "sampling": curation.sampled.note,
        "warnings": list(curation.warnings),
    }


# -- rendering -------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _seconds(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f} s"
    return f"{value:.2f} s" if value >= 1 else f"{value:.3g} s"


def tables(report: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report's tables as (title, header, rows) of strings, for markdown and for rich."""
    samples = report["samples"]
    rows = []
    for task, counts in samples["tasks"].items():
        reasons = report["dropped"][task]
        rows.append([task, str(counts["before"]), str(counts["after"]), *(str(reasons[r]) for r in REASONS)])
    totals = [sum(report["dropped"][t][r] for t in report["dropped"]) for r in REASONS]
    rows.append(["total", str(samples["before"]), str(samples["after"]), *map(str, totals)])
    headers = [r.replace("-", " ") for r in REASONS]  # "sampled out" wraps in a narrow terminal
    out = [("Samples before and after, and dropped by reason", ["task", "before", "after", *headers], rows)]

    time_rows = [[m["model"], _seconds(m["time_before_s"]), _seconds(m["time_after_s"]),
                  _num(m["time_after_s"] / m["time_before_s"], 3) if m["time_before_s"] else "–"]
                 for m in report["models"]]
    time = report["time"]
    time_rows.append(["total", _seconds(time["before_s"]), _seconds(time["after_s"]), _num(time["ratio"], 3)])
    out.append(("Evaluation time (Σ latency_s of the panel's answers)", ["model", "before", "after", "after/before"],
                time_rows))

    spread = report["spread"]
    score_rows = [[m["model"], _pct(m["accuracy_before"]), _pct(m["accuracy_after"])] for m in report["models"]]
    score_rows.append(["max − min", _pct(spread["before"]["max_minus_min"]), _pct(spread["after"]["max_minus_min"])])
    score_rows.append(["std dev", _pct(spread["before"]["stdev"]), _pct(spread["after"]["stdev"])])
    unchanged = spread["ranking_unchanged"]
    score_rows.append(["ranking", "", "–" if unchanged is None else
                       f"{'unchanged' if unchanged else 'changed'} (Kendall τ {_num(spread['kendall_tau'], 2)})"])
    out.append(("Spread of the panel's scores (accuracy)", ["model", "all samples", "kept samples"], score_rows))

    present = [c for c in CLASSES if report["classes"][c]["before"]]
    class_rows = [[m["model"], *(_pct(m["accuracy_by_class"][c]) for c in present)] for m in report["models"]]
    class_rows.append(["samples (kept)", *(f"{report['classes'][c]['before']} ({report['classes'][c]['after']})"
                                           for c in present)])
    out.append(("Accuracy per difficulty class", ["model", *present], class_rows))
    return out


def notes(report: dict[str, Any]) -> list[str]:
    """The lines under the tables: thresholds, leakage per task, sampling, warnings."""
    lines = [f"Difficulty: {report['thresholds']['describe']} — {report['thresholds']['origin']}."]
    for task in report["leakage"]:
        lines.append(f"Leakage, task {task['task']}: {task['action']} — {task['note']}.")
    lines.append(f"Sampling: {report['sampling']}.")
    lines += [f"Warning: {w}." for w in report["warnings"]]
    return lines


def markdown(report: dict[str, Any], title: str) -> str:
    """report.md: the tables and notes as GitHub-flavoured markdown."""
    parts = [f"# {title}", ""]
    for name, header, rows in tables(report):
        parts += [f"## {name}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        parts += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        parts.append("")
    parts += ["## Notes", ""] + [f"- {line}" for line in notes(report)] + [""]
    return "\n".join(parts)


def print_report(console: Any, report: dict[str, Any], title: str) -> None:
    """The same report as rich tables on `console`."""
    from rich.table import Table

    console.print(f"[bold]{markup_text(title)}[/bold]")
    for name, header, rows in tables(report):
        table = Table(title=markup_text(name), title_justify="left", show_edge=False)
        for n, column in enumerate(header):
            table.add_column(column, justify="left" if n == 0 else "right", no_wrap=n == 0)
        for row in rows:
            table.add_row(*map(markup_text, row), style="bold" if row[0] in ("total", "max − min") else None)
        console.print(table)
    for line in notes(report):
        console.print(line, style="yellow" if line.startswith("Warning") else None, highlight=False, soft_wrap=True, markup=False)
