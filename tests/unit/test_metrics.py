"""Metrics on hand-built records: accuracy, accuracy+, MME scores, POPE, categories, errors."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_mllm.scoring.metrics import accuracy_plus, benchmark_metrics, mme_task_score, pope_metrics


def rec(task: str, group: str | None, answer: str, parsed: str, status: str | None = None,
        category: str | None = None) -> dict[str, Any]:
    correct = parsed == answer
    return {"task": task, "pair_group": group, "answer": answer, "parsed": parsed, "correct": correct,
            "status": status or ("correct" if correct else "incorrect"), "answer_type": "yes_no",
            "category": category, "l2_category": None}


def test_accuracy_plus_needs_every_member_of_a_pair() -> None:
    records = [rec("t", "a", "yes", "yes"), rec("t", "a", "no", "no"),
               rec("t", "b", "yes", "yes"), rec("t", "b", "no", "yes")]
    assert accuracy_plus(records) == 0.5


def test_mme_score_and_group_totals() -> None:
    records = [rec("existence", "e1", "yes", "yes"), rec("existence", "e1", "no", "no"),
               rec("existence", "e2", "yes", "no"), rec("existence", "e2", "no", "no"),
               rec("code", "c1", "yes", "other"), rec("code", "c1", "no", "no")]
    m = benchmark_metrics(records, ["accuracy", "accuracy_plus", "mme_score"],
                          {"perception": ["existence"], "cognition": ["code"]})
    assert m["tasks"]["existence"]["score"] == 75 + 50
    assert m["tasks"]["code"] == {"count": 2, "errors": 0, "accuracy": 0.5, "accuracy_plus": 0.0, "score": 50.0}
    assert m["groups"]["perception"]["score"] == 125.0 and m["groups"]["cognition"]["score"] == 50.0
    assert m["overall"]["score"] == 175.0


def test_score_adds_in_the_official_order() -> None:
    # MME's script adds acc*100 then acc_plus*100 to 0; the other order differs in the last bit.
    acc, acc_plus = 7 / 12, 2 / 6
    assert mme_task_score(acc, acc_plus) == 91.66666666666666
    assert (acc + acc_plus) * 100 != mme_task_score(acc, acc_plus)


def test_errors_never_score_and_break_their_pair() -> None:
    records = [rec("t", "a", "yes", "yes"), rec("t", "a", "no", "", status="error"),
               rec("t", "b", "yes", "yes"), rec("t", "b", "no", "no")]
    m = benchmark_metrics(records, ["accuracy", "accuracy_plus"], {})
    assert m["overall"]["count"] == 3 and m["overall"]["errors"] == 1
    assert m["overall"]["accuracy"] == 1.0
    assert m["overall"]["accuracy_plus"] == 1.0  # pair "a" is left out, not counted wrong


def test_pope_metrics_with_yes_as_positive() -> None:
    records = [rec("p", None, "yes", "yes"), rec("p", None, "yes", "no"),
               rec("p", None, "no", "yes"), rec("p", None, "no", "no")]
    assert pope_metrics(records) == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "yes_ratio": 0.5}
    always_yes = [rec("p", None, a, "yes") for a in ("yes", "no", "no", "no")]
    assert pope_metrics(always_yes)["yes_ratio"] == 1.0
    assert pope_metrics(always_yes)["recall"] == 1.0


def test_categories_report_accuracy_per_value() -> None:
    records = [rec("mc", None, "A", "A", category="x"), rec("mc", None, "B", "C", category="x"),
               rec("mc", None, "C", "C", category="y")]
    m = benchmark_metrics(records, ["accuracy", "category"], {})
    assert m["categories"]["x"]["accuracy"] == 0.5 and m["categories"]["y"]["accuracy"] == 1.0


def test_all_errors_leave_no_accuracy() -> None:
    m = benchmark_metrics([rec("t", None, "yes", "", status="error")], ["accuracy"], {})
    assert m["overall"] == {"count": 0, "errors": 1}
    with pytest.raises(KeyError):
        m["overall"]["accuracy"]


def vrp_rec(source: str, variant_id: str, intervention: str, parsed: str, answer: str = "yes",
            **options: str) -> dict[str, Any]:
    record = rec("vrp", None, answer, parsed)
    record["variant"] = {"source": source, "variant": variant_id, "intervention": intervention, **options}
    return record


def test_vrp_levels_axes_consistency_and_sensitivity() -> None:
    records = [
        vrp_rec("s1", "none", "none", "yes"), vrp_rec("s1", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s1", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
        vrp_rec("s2", "none", "none", "no"), vrp_rec("s2", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s2", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
    ]
    m = benchmark_metrics(records, ["accuracy", "vrp"], {})["vrp"]
    assert m["levels"]["none"]["accuracy"] == 0.5 and m["levels"]["partial"]["accuracy"] == 1.0
    assert m["levels"]["full"]["accuracy"] == 0.0
    assert m["axes"]["C_Red"] == {"count": 4, "accuracy": 0.5} and m["axes"]["Base"]["count"] == 2
    assert "C_Blue" not in m["axes"]
    assert m["consistency"] == 0.5  # s1 partial = yes = base; s1 full ≠; s2 partial ≠; s2 full = base
    assert m["relation_holds"] == 0.25  # correct and equal to the un-intervened answer: s1 partial only
    assert m["sensitivity"] == 1.0
