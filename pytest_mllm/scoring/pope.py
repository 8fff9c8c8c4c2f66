"""POPE's metrics (Li et al., "Evaluating Object Hallucination"): precision, recall, F1 and the
yes ratio with "yes" as the positive class, as the official `evaluate.py` computes them.

POPE's splits (adversarial, popular, random) are the benchmark's tasks; a POPE.tsv row naming
several splits counts in each (`task_separator` of the TSV loader). Papers report each split and
the mean of the splits' F1: a scope made of parts (overall: its groups, else its tasks) adds
``mean_f1``, the mean of its parts' F1, and ``pooled_f1``, the F1 of all its answers pooled (its
``f1``, under a name that says so; a row counted in two splits counts twice, as in VLMEvalKit's
"Overall").

A value whose denominator is 0 is undefined, never 0: precision when no answer reads "yes" (TP + FP = 0),
recall when no question's answer is "yes" (TP + FN = 0), F1 when either is undefined or both are 0, and
mean_f1 when a part's F1 is. POPE's `evaluate.py` divides by zero there and stops (ZeroDivisionError)
before it prints any score, so it cannot score such a split either. Such a value is left out of its
scope, and the section `undefined` ({flat key: why}) says why, for the results JSON and the reports."""

from __future__ import annotations

from typing import Any, Sequence

from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import BenchmarkView, CountScope, CountTwin, Scope, ScopeView, metric
from pytest_mllm.scoring.score import parser

STOPS = "POPE's evaluate.py divides by zero there (ZeroDivisionError) and prints no score either"


@parser("pope")
def pope(response: str, sample: Sample | None = None) -> str:
    """POPE's reading: in the first sentence, a "no"/"not" word means no, else yes."""
    first = response.split(".")[0].replace(",", "")
    words = first.split(" ")
    if "No" in words or "no" in words or "not" in words:
        return "no"
    return "yes"


def _counts(records: Sequence[Record]) -> tuple[int, int, int]:
    tp = sum(1 for r in records if r["parsed"] == "yes" and r["answer"] == "yes")
    fp = sum(1 for r in records if r["parsed"] == "yes" and r["answer"] != "yes")
    fn = sum(1 for r in records if r["parsed"] != "yes" and r["answer"] == "yes")
    return tp, fp, fn


def pope_metrics(records: Sequence[Record]) -> Scope:
    """POPE's binary metrics with "yes" as the positive class; an undefined one left out (`undefined`)."""
    tp, fp, fn = _counts(records)
    values: Scope = {}
    if tp + fp:
        values["precision"] = tp / (tp + fp)
    if tp + fn:
        values["recall"] = tp / (tp + fn)
    if tp:
        precision, recall = values["precision"], values["recall"]
        values["f1"] = 2 * precision * recall / (precision + recall)
    values["yes_ratio"] = (tp + fp) / len(records)
    return values


def undefined(records: Sequence[Record]) -> dict[str, str]:
    """{metric: why it is undefined} over these records (none when every one is defined)."""
    tp, fp, fn = _counts(records)
    why: dict[str, str] = {}
    if not tp + fp:
        why["precision"] = "no answer reads yes (TP + FP = 0)"
    if not tp + fn:
        why["recall"] = "no question's answer is yes (TP + FN = 0)"
    if not tp:
        why["f1"] = "its precision or recall is undefined" if why else "precision and recall are 0 (TP = 0)"
    return {metric: f"{reason}; {STOPS}" for metric, reason in why.items()}


def yes_no_counts(records: Sequence[Record]) -> tuple[int, int, int, int]:
    """(TP, FP, FN, yes/no answers) over the scored yes/no answers among `records`."""
    yes_no = [r for r in records if r["status"] != "error" and r.get("answer_type") == "yes_no"]
    return (*_counts(yes_no), len(yes_no))


def counted_pope(scope: CountScope) -> dict[str, Any]:
    """POPE's values of every resample from its yes/no counts (`yes_no_counts`), undefined where `scope_pope`
    leaves them out."""
    import numpy as np

    if scope.kind not in ("task", "group", "overall"):
        return {}
    nan = np.nan
    tp, fp, fn, yes_no = (scope.counts[:, n] for n in range(4))
    with np.errstate(divide="ignore", invalid="ignore"):  # undefined where a denominator is 0
        precision = np.where(tp + fp > 0, tp / (tp + fp), nan)
        recall = np.where(tp + fn > 0, tp / (tp + fn), nan)
        f1 = np.where(tp > 0, 2 * precision * recall / (precision + recall), nan)
    has = yes_no > 0
    values = {"precision": np.where(has, precision, nan), "recall": np.where(has, recall, nan),
              "f1": np.where(has, f1, nan), "yes_ratio": np.where(has, (tp + fp) / yes_no, nan)}
    if scope.kind != "task" and scope.parts:
        total, n, lost = np.zeros(len(tp)), np.zeros(len(tp)), np.zeros(len(tp), dtype=bool)
        for part in scope.parts:
            part_has = ~np.isnan(part["yes_ratio"])  # the part holds yes/no answers
            part_f1 = ~np.isnan(part["f1"])
            total = total + np.where(part_f1, part["f1"], 0.0)
            n = n + part_has
            lost = lost | (part_has & ~part_f1)
        values["pooled_f1"] = np.where(has & (n > 0), f1, nan)
        values["mean_f1"] = np.where(has & (n > 0) & ~lost, total / np.maximum(n, 1), nan)
    return values


@metric("pope", requires=("pope_undefined",), keys=("precision", "recall", "f1", "yes_ratio", "pooled_f1", "mean_f1"),
        twin=CountTwin(columns=4, counts=yes_no_counts, values=counted_pope))
def scope_pope(scope: ScopeView) -> Scope:
    """POPE's metrics over the scope's scored yes/no answers, per task, group and overall (not per category)."""
    if scope.kind not in ("task", "group", "overall"):
        return {}
    yes_no = [r for r in scope.scored if r.get("answer_type") == "yes_no"]
    if not yes_no:
        return {}
    values = pope_metrics(yes_no)
    parts = [part for part in scope.parts if "yes_ratio" in part]  # the parts holding yes/no answers
    if scope.kind in ("group", "overall") and parts:
        if "f1" in values:
            values["pooled_f1"] = values["f1"]
        if all("f1" in part for part in parts):
            values["mean_f1"] = sum(part["f1"] for part in parts) / len(parts)
    return values


@metric("pope_undefined", section=True, declarable=False, keys=(), twin=CountTwin())
def undefined_section(view: BenchmarkView) -> dict[str, dict[str, str]]:
    """`undefined`: {flat key: why} for each POPE value left out of a task, group or the overall scope."""
    yes_no = [r for r in view.records if r["status"] != "error" and r.get("answer_type") == "yes_no"]
    tasks: dict[str, list[Record]] = {}
    groups: dict[str, list[Record]] = {}
    for record in yes_no:
        tasks.setdefault(record["task"], []).append(record)
        if group := record.get("group"):
            groups.setdefault(group, []).append(record)
    found: dict[str, str] = {}
    for name, records in tasks.items():
        found.update({f"{name}.{metric}": why for metric, why in undefined(records).items()})
    for name, records in groups.items():
        found.update({f"{name}.{metric}": why for metric, why in undefined(records).items()})
        lost = sorted({r["task"] for r in records} & {key.split(".")[0] for key in found if key.endswith(".f1")})
        if lost:
            found[f"{name}.mean_f1"] = f"the F1 of {', '.join(lost)} is undefined"
    found.update(undefined(yes_no) if yes_no else {})
    parts = groups or tasks
    lost = sorted(name for name in parts if f"{name}.f1" in found)
    if lost:
        found["mean_f1"] = f"the F1 of {', '.join(lost)} is undefined"
    return {"undefined": found} if found else {}
