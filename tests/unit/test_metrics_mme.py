"""MME's metrics (scoring/mme.py): accuracy+, the 0–200 task score and the group totals."""

from __future__ import annotations

from metric_records import rec

from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.scoring.mme import accuracy_plus, mme_task_score


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


def test_mme_score_brings_accuracy_plus_and_sums_tasks_without_groups() -> None:
    records = [rec("existence", "e1", "yes", "yes"), rec("existence", "e1", "no", "no"),
               rec("code", "c1", "yes", "other"), rec("code", "c1", "no", "no")]
    m = benchmark_metrics(records, ["accuracy", "mme_score"], {})
    assert m["tasks"]["existence"] == {"count": 2, "errors": 0, "accuracy": 1.0, "accuracy_plus": 1.0, "score": 200.0}
    assert m["overall"]["score"] == 250.0 and m["groups"] == {}


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
