"""POPE's metrics (Li et al., "Evaluating Object Hallucination"): precision, recall, F1 and the
yes ratio with "yes" as the positive class, as the official `evaluate.py` computes them.

POPE's splits (adversarial, popular, random) are the benchmark's tasks; a POPE.tsv row naming
several splits counts in each (`task_separator` of the TSV loader). Papers report each split and
the mean of the splits' F1: a scope made of parts (overall: its groups, else its tasks) adds
``mean_f1``, the mean of its parts' F1, and ``pooled_f1``, the F1 of all its answers pooled (its
``f1``, under a name that says so; a row counted in two splits counts twice, as in VLMEvalKit's
"Overall")."""

from __future__ import annotations

from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import Scope, ScopeView


def pope_metrics(records: Sequence[Record]) -> Scope:
    """POPE's binary metrics with "yes" as the positive class."""
    tp = sum(1 for r in records if r["parsed"] == "yes" and r["answer"] == "yes")
    fp = sum(1 for r in records if r["parsed"] == "yes" and r["answer"] != "yes")
    fn = sum(1 for r in records if r["parsed"] != "yes" and r["answer"] == "yes")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    yes_ratio = (tp + fp) / len(records)
    return {"precision": precision, "recall": recall, "f1": f1, "yes_ratio": yes_ratio}


def scope_pope(scope: ScopeView) -> Scope:
    """POPE's metrics over the scope's scored yes/no answers, per task, group and overall (not per category)."""
    if scope.kind not in ("task", "group", "overall"):
        return {}
    yes_no = [r for r in scope.scored if r.get("answer_type") == "yes_no"]
    if not yes_no:
        return {}
    values = pope_metrics(yes_no)
    part_f1 = [part["f1"] for part in scope.parts if "f1" in part]
    if scope.kind in ("group", "overall") and part_f1:
        values["pooled_f1"] = values["f1"]
        values["mean_f1"] = sum(part_f1) / len(part_f1)
    return values
