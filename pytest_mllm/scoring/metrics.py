"""Benchmark metrics over per-sample records: accuracy, accuracy+, MME scores, POPE, categories,
and the mean per-sample score of parsers scored against references (ANLS, VQA match, …).

Records whose status is "error" never enter a metric: they are counted apart, so a
model crash or bad sample can never turn into a score. Float operations follow MME's
official calculation order so that our numbers equal it to the last digit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence
from pytest_mllm.record import Record

Scope = dict[str, float | int]

KNOWN_METRICS = ("accuracy", "accuracy_plus", "mme_score", "pope", "category", "vrp", "judge", "mean_score")

# VRPTEST's radar axes: the variant attribute and value each one averages over.
VRP_AXES: dict[str, tuple[str, str]] = {
    "Base": ("intervention", "none"), "C_Red": ("color", "red"), "C_Blue": ("color", "blue"),
    "Pos_Upper": ("position", "upper"), "Pos_Lower": ("position", "lower"), "Arial": ("font", "arial"),
    "TNR": ("font", "times"), "Cir": ("shape", "ellipse"), "Rect": ("shape", "box"),
}


def accuracy(records: Sequence[Record]) -> float:
    """Fraction of records answered correctly."""
    return sum(1 for r in records if r["correct"]) / len(records)


def mean_score(records: Sequence[Record]) -> float:
    """Mean per-sample score: the record's `score` (ANLS, VQA match, BLEU-4 … in [0, 1]) where its
    parser gives one, else 1.0 or 0.0 by correctness, so yes/no and choice tasks count as accuracy.

    The official continuous metric of each LIME-M subtask; scopes wider than a task (groups,
    overall) average over samples, as accuracy does, not over task means.
    """
    scores = [r["score"] if r.get("score") is not None else float(bool(r["correct"])) for r in records]
    return math.fsum(scores) / len(scores)


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


def scope_metrics(records: Sequence[Record], enabled: Iterable[str]) -> Scope:
    """Counts and the enabled metrics for one scope (overall, a task, a group …)."""
    enabled = set(enabled)
    scored = [r for r in records if r["status"] != "error"]
    scope: Scope = {"count": len(scored), "errors": len(records) - len(scored)}
    if not scored:
        return scope
    scope["accuracy"] = accuracy(scored)
    if "mean_score" in enabled:
        scope["mean_score"] = mean_score(scored)
    if enabled & {"accuracy_plus", "mme_score"}:
        acc_plus = accuracy_plus(_complete_groups(records))
        if acc_plus is not None:
            scope["accuracy_plus"] = acc_plus
    yes_no = [r for r in scored if r.get("answer_type") == "yes_no"]
    if "pope" in enabled and yes_no:
        scope.update(pope_metrics(yes_no))
    return scope


def _complete_groups(records: Sequence[Record]) -> list[Record]:
    """Records of pair groups none of whose members errored (an error is not a wrong answer)."""
    broken = {r.get("pair_group") for r in records if r["status"] == "error"}
    return [r for r in records if r["status"] != "error" and r.get("pair_group") not in broken]


def benchmark_metrics(
    records: Sequence[Record],
    enabled: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    task_order: Sequence[str] = (),
) -> dict[str, Any]:
    """All scopes of one benchmark: overall, tasks, groups, categories, l2-categories.

    `task_order` fixes the order tasks are listed and summed in (MME's official order);
    tasks it does not name follow in order of first appearance.
    """
    by_task: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_task[record["task"]].append(record)
    ordered = [t for t in task_order if t in by_task] + [t for t in by_task if t not in task_order]

    tasks = {task: scope_metrics(by_task[task], enabled) for task in ordered}
    if "mme_score" in enabled:
        for scope in tasks.values():
            if "accuracy_plus" in scope:
                scope["score"] = mme_task_score(scope["accuracy"], scope["accuracy_plus"])

    group_scopes: dict[str, Scope] = {}
    for group, members in groups.items():
        present = [t for t in members if t in by_task]
        if not present:
            continue
        scope = scope_metrics([r for t in present for r in by_task[t]], enabled)
        if "mme_score" in enabled:
            scope["score"] = _sum_scores(tasks[t] for t in present)
        group_scopes[group] = scope

    overall = scope_metrics(records, enabled)
    if "mme_score" in enabled:
        parts = group_scopes.values() if group_scopes else tasks.values()
        overall["score"] = _sum_scores(parts)

    result: dict[str, Any] = {"overall": overall, "tasks": tasks, "groups": group_scopes}
    if "vrp" in enabled:
        result["vrp"] = vrp_metrics(records)
    if "judge" in enabled or any(r.get("answer_type") == "open" for r in records):
        result["judge"] = judge_metrics(records)
    if "category" in enabled:
        result["categories"] = _by_field(records, "category", enabled)
        result["l2_categories"] = _by_field(records, "l2_category", enabled)
    return result


def _sum_scores(scopes: Iterable[Scope]) -> float:
    """Running sum from 0 in order, as MME's script adds subtask scores."""
    total = 0.0
    for scope in scopes:
        total += scope.get("score", 0.0)
    return total


def _by_field(records: Sequence[Record], field: str, enabled: Iterable[str]) -> dict[str, Scope]:
    """Accuracy per value of a record field (category, l2-category), in first-seen order."""
    buckets: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        value = record.get(field)
        if value:
            buckets[value].append(record)
    return {value: scope_metrics(rs, set(enabled) - {"pope"}) for value, rs in buckets.items()}


def vrp_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """VRPTEST's view: accuracy per intervention level and per radar axis, consistency with the
    un-intervened answer of the same source, and sensitivity (best minus worst strategy)."""
    scored = [r for r in records if r["status"] != "error" and r.get("variant")]
    if not scored:
        return {}
    base_answer = {r["variant"]["source"]: r["parsed"] for r in scored if r["variant"]["intervention"] == "none"}
    levels: dict[str, list[Record]] = defaultdict(list)
    strategies: dict[str, list[Record]] = defaultdict(list)
    for record in scored:
        levels[record["variant"]["intervention"]].append(record)
        strategies[record["variant"]["variant"]].append(record)
    axes = {axis: [r for r in scored if r["variant"].get(field) == value] for axis, (field, value) in VRP_AXES.items()}
    compared = [r for r in scored if r["variant"]["intervention"] != "none" and r["variant"]["source"] in base_answer]
    by_strategy = {name: accuracy(rs) for name, rs in strategies.items()}
    return {
        "levels": {level: {"count": len(levels[level]), "accuracy": accuracy(levels[level])}
                   for level in ("none", "partial", "full") if level in levels},
        "axes": {axis: {"count": len(rs), "accuracy": accuracy(rs)} for axis, rs in axes.items() if rs},
        "consistency": (sum(r["parsed"] == base_answer[r["variant"]["source"]] for r in compared) / len(compared)
                        if compared else None),
        "relation_holds": (sum(bool(r["correct"]) and r["parsed"] == base_answer[r["variant"]["source"]]
                               for r in compared) / len(compared) if compared else None),
        "strategies": by_strategy,
        "sensitivity": max(by_strategy.values()) - min(by_strategy.values()),
    }


def judge_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Open-ended answers: word matching and the judge ensemble (CEE) side by side, their
    agreement, the vote splits, abstentions, judge errors, and agreement with human labels."""
    from pytest_mllm.judge import agreement, cohen_kappa

    answered = [r for r in records if r.get("answer_type") == "open" and r.get("word_match") is not None]
    if not answered:
        return {}
    judged = [r for r in answered if (r.get("judge") or {}).get("status") == "judged"]
    errors = [r for r in answered if (r.get("judge") or {}).get("status") == "judge-error"]
    out: dict[str, Any] = {
        "scoring": "cee" if judged or errors else "word_match",
        "answered": len(answered),
        "word_accuracy": sum(r["word_match"] for r in answered) / len(answered),
        "judge_errors": len(errors),
        "judge_error_rate": len(errors) / len(answered),
    }
    if judged:
        cee = [bool(r["judge"]["correct"]) for r in judged]
        words = [bool(r["word_match"]) for r in judged]
        out.update(
            cee_accuracy=sum(cee) / len(cee), agreement=agreement(cee, words),
            splits=dict(sorted(_count(r["judge"]["split"] for r in judged).items())),
            abstentions=sum(v["verdict"] is None for r in judged for v in r["judge"]["votes"]),
        )
    labelled = [r for r in answered if r.get("human_label") is not None]
    if labelled:
        human = [bool(r["human_label"]) for r in labelled]
        out["human"] = {"word_match": {"count": len(labelled),
                                       "agreement": agreement([bool(r["word_match"]) for r in labelled], human),
                                       "kappa": cohen_kappa([bool(r["word_match"]) for r in labelled], human)}}
        both = [r for r in labelled if r in judged]
        if both:
            cee_h = [bool(r["judge"]["correct"]) for r in both]
            human_h = [bool(r["human_label"]) for r in both]
            out["human"]["cee"] = {"count": len(both), "agreement": agreement(cee_h, human_h),
                                   "kappa": cohen_kappa(cee_h, human_h)}
    return out


def _count(values: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for value in values:
        counts[value] += 1
    return dict(counts)
