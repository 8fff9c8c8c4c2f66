"""MME's metrics (Fu et al.): accuracy+ per task, the 0–200 task score, and the perception and
cognition totals, reproducing the official `calculation.py` of the MME evaluation tool.

Float operations follow that script's order (a task score adds acc*100 then acc+*100 to 0.0;
totals add task scores to 0 in task order), so our numbers equal it to the last digit.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import CountScope, CountTwin, Scope, ScopeView, metric
from pytest_mllm.scoring.parsers import OTHER
from pytest_mllm.scoring.score import parser


@parser("mme")
def mme_official(response: str, sample: Sample | None = None) -> str:
    """MME's official yes/no reading, quirks included.

    Lowercase; an exact "yes"/"no" counts as is; otherwise the first four characters are
    searched for "yes", then "no"; anything else is "other". So "nope" reads as no,
    "yesterday" as yes, and "y" or " sure, yes" as other.
    """
    text = response.lower()
    if text in ("yes", "no"):
        return text
    prefix = text[:4]
    if "yes" in prefix:
        return "yes"
    if "no" in prefix:
        return "no"
    return OTHER


def accuracy_plus(records: Sequence[Record]) -> float | None:
    """Fraction of pair groups (e.g. MME's two questions per image) with every member right.

    Groups appear in record order, as MME's script reads consecutive pairs; None when no
    record belongs to a pair group.
    """
    groups: dict[str, bool] = {}
    for record in records:
        group = record.get("pair_group")
        if group is None:
            continue
        groups[group] = groups.get(group, True) and bool(record["correct"])
    if not groups:
        return None
    return sum(1 for ok in groups.values() if ok) / len(groups)


def mme_task_score(acc: float, acc_plus: float) -> float:
    """MME subtask score, 0–200, accumulated in the official script's order."""
    score = 0.0
    score += acc * 100
    score += acc_plus * 100
    return score


def sum_scores(scopes: Iterable[Scope]) -> float:
    """Running sum from 0 in order, as MME's script adds subtask scores (a scope without one adds 0)."""
    total = 0.0
    for scope in scopes:
        total += scope.get("score", 0.0)
    return total


def pair_counts(records: Sequence[Record]) -> tuple[int, int]:
    """(pair groups none of whose members errored, those with every member right) among `records`."""
    broken = {r.get("pair_group") for r in records if r["status"] == "error"}
    pairs: dict[str, bool] = {}
    for record in records:
        group = record.get("pair_group")
        if record["status"] != "error" and group is not None and group not in broken:
            pairs[group] = pairs.get(group, True) and bool(record["correct"])
    return len(pairs), sum(1 for ok in pairs.values() if ok)


def counted_accuracy_plus(scope: CountScope) -> dict[str, Any]:
    """`accuracy_plus` of every resample from its pair counts (`pair_counts`)."""
    import numpy as np

    pairs, right = scope.counts[:, 0], scope.counts[:, 1]
    return {"accuracy_plus": np.where(scope.present & (pairs > 0), right / pairs, np.nan)}


@metric("accuracy_plus", keys=("accuracy_plus",),
        twin=CountTwin(columns=2, counts=pair_counts, values=counted_accuracy_plus))
def scope_accuracy_plus(scope: ScopeView) -> Scope:
    """`accuracy_plus` in every scope, over the pair groups none of whose members errored
    (an error is not a wrong answer: its pair is left out)."""
    broken = {r.get("pair_group") for r in scope.records if r["status"] == "error"}
    acc_plus = accuracy_plus([r for r in scope.scored if r.get("pair_group") not in broken])
    return {} if acc_plus is None else {"accuracy_plus": acc_plus}


def counted_mme_score(scope: CountScope) -> dict[str, Any]:
    """`score` of every resample, as `scope_mme_score` adds it up."""
    import numpy as np

    if scope.kind == "task":
        plus = scope.values["accuracy_plus"]
        return {"score": np.where(np.isnan(plus), np.nan, 0.0 + scope.values["accuracy"] * 100 + plus * 100)}
    if scope.kind in ("group", "overall"):
        total = np.zeros(len(scope.values["count"]))
        for part in scope.parts:
            total = total + np.where(np.isnan(part["score"]), 0.0, part["score"])
        return {"score": total}
    return {}


@metric("mme_score", requires=("accuracy_plus",), keys=("score",), twin=CountTwin(values=counted_mme_score),
        headline="score")
def scope_mme_score(scope: ScopeView) -> Scope:
    """`score`: a task's 0–200 score where it has pairs; a group's (perception, cognition) and the
    overall total as the sum of the task or group scores below them. Categories get none."""
    if scope.kind == "task":
        if "accuracy_plus" not in scope.values:
            return {}
        return {"score": mme_task_score(scope.values["accuracy"], scope.values["accuracy_plus"])}
    if scope.kind in ("group", "overall"):
        return {"score": sum_scores(scope.parts)}
    return {}
