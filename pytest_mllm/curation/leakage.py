"""Answer leakage: units that models answer correctly without seeing the image.

LIME-M removes samples that text-only models answer correctly, counting correct text-only
models the way its judges are counted. A count is only evidence of leakage when guessing could
not reach it: a yes/no question is answered right half the time by a coin, so "any text-only
model right" would drop samples at random. The default threshold ("auto") is therefore the
smallest K with P(Binomial(T, p) > K) ≤ 5 %, for T text-only answers and p the chance that a
guess answers the unit right (½ per yes/no question, 1/k per k-option question, 0 for open
answers, multiplied over a pair's members). For open answers that is K = 0: any correct
text-only answer drops the unit, LIME-M's rule. Where even T correct answers of T are likely by
guessing, the task is skipped and the report says so; `--leak-threshold K` sets K for every task.

A task whose samples all show a text-only model the same text (every question "Describe the
image.") is skipped: an answer to identical text cannot depend on the sample, so it cannot leak.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Mapping, Sequence

from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.units import Item, Unit, unit_verdict

ALPHA = 0.05  # the largest share of units "auto" lets guessing alone drop


@dataclass(frozen=True)
class TaskLeakage:
    """What the leakage pass did for one task, in a sentence a reader can check."""

    task: str
    action: str  # "checked" or "skipped"
    note: str
    threshold: int | None = None  # dropped when more than this many text-only answers are right
    chance: float | None = None  # of one guessed answer being right for the task's units (the largest)
    units: int = 0
    dropped_units: int = 0
    dropped_samples: int = 0


@dataclass(frozen=True)
class Leakage:
    """The pass's outcome: per unit the count of correct text-only answers, and what was dropped."""

    correct: dict[str, int]  # unit key → text-only judges right on it (tasks that were checked)
    leaked: set[str]  # unit keys dropped as leaked
    tasks: list[TaskLeakage]


def guess_chance(item: Item) -> float:
    """The chance that a guess answers this sample right."""
    if item.answer_type == "yes_no":
        return 0.5
    if item.answer_type == "choice":
        return 1 / item.choices if item.choices else 0.25
    return 0.0


def unit_chance(unit: Unit, items: Mapping[str, Item]) -> float:
    """The chance that a guess answers every member of the unit right."""
    chance = 1.0
    for sample_id in unit.ids:
        chance *= guess_chance(items[sample_id])
    return chance


def exceed_probability(judges: int, chance: float, threshold: int) -> float:
    """P(more than `threshold` of `judges` independent guesses are right)."""
    return sum(comb(judges, k) * chance**k * (1 - chance) ** (judges - k) for k in range(threshold + 1, judges + 1))


def auto_threshold(judges: int, chance: float, alpha: float = ALPHA) -> int:
    """The smallest K with P(Binomial(judges, chance) > K) ≤ alpha (`judges` when none is)."""
    for threshold in range(judges + 1):
        if exceed_probability(judges, chance, threshold) <= alpha:
            return threshold
    return judges


def leakage_pass(units: Sequence[Unit], items: Mapping[str, Item], text_runs: Sequence[Run],
                 threshold: int | None, candidates: set[str] | None = None, off: str | None = None) -> Leakage:
    """Count correct text-only answers per unit and drop the units above the threshold.

    `threshold` None means "auto" (see the module). `candidates` limits the drops to those unit
    keys (the ones earlier filters kept); every unit of a checked task is still counted. `off`
    turns the pass off, with that reason on every task's line.
    """
    by_task: dict[str, list[Unit]] = {}
    for unit in units:
        by_task.setdefault(unit.task, []).append(unit)
    judges = len(text_runs)
    answers = [run.verdicts for run in text_runs]
    correct: dict[str, int] = {}
    leaked: set[str] = set()
    reports: list[TaskLeakage] = []
    for task, task_units in by_task.items():
        texts = {items[i].text for u in task_units for i in u.ids}
        chance = max(unit_chance(u, items) for u in task_units)
        if off:
            reports.append(TaskLeakage(task, "skipped", off, units=len(task_units)))
            continue
        if not judges:
            reports.append(TaskLeakage(task, "skipped", "no text-only answers were given (pass --text-only MODEL, "
                                       "--withhold-images or --text-only-json FILE)", units=len(task_units)))
            continue
        if len(task_units) > 1 and len(texts) == 1:
            shown = next(iter(texts)).replace("\n", " ")
            reports.append(TaskLeakage(task, "skipped", f"every sample shows the same text ({_clip(shown)!r}); a "
                                       "text-only answer cannot depend on the sample, so it cannot reveal leakage",
                                       chance=chance, units=len(task_units)))
            continue
        limit = auto_threshold(judges, chance) if threshold is None else threshold
        if limit >= judges:
            why = (f"with {judges} text-only answer(s) and a {chance:.0%} chance per guess, even all of them right "
                   f"happens by guessing alone for {chance ** judges:.1%} of units (over {ALPHA:.0%}); "
                   "leakage cannot be told from guessing — add text-only models or set --leak-threshold"
                   if threshold is None else
                   f"--leak-threshold {limit} is not below the {judges} text-only answer(s): no unit can exceed it")
            reports.append(TaskLeakage(task, "skipped", why, limit, chance, len(task_units)))
            continue
        dropped_units = dropped_samples = 0
        for unit in task_units:
            right = sum(1 for verdicts in answers if unit_verdict(verdicts, unit) is True)
            correct[unit.key] = right
            if right > limit and (candidates is None or unit.key in candidates):
                leaked.add(unit.key)
                dropped_units += 1
                dropped_samples += unit.size
        rule = f"dropped when more than {limit} of {judges} text-only answers are right"
        if chance > 0:
            guessed = exceed_probability(judges, chance, limit)
            rule += (f"; a guess is right {chance:.0%} of the time, so guessing alone would pass this for "
                     f"{guessed:.1%} of units")
        considered = len(task_units) if candidates is None else sum(1 for u in task_units if u.key in candidates)
        note = f"{rule}: dropped {dropped_units} of {considered} unit(s) ({dropped_samples} sample(s))"
        reports.append(TaskLeakage(task, "checked", note, limit, chance, considered, dropped_units, dropped_samples))
    return Leakage(correct, leaked, reports)


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
