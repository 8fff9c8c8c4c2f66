"""POPE's metrics (scoring/pope.py): precision, recall, F1 and the yes ratio."""

from __future__ import annotations

from metric_records import rec

from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.scoring.pope import pope_metrics


def test_pope_metrics_with_yes_as_positive() -> None:
    records = [rec("p", None, "yes", "yes"), rec("p", None, "yes", "no"),
               rec("p", None, "no", "yes"), rec("p", None, "no", "no")]
    assert pope_metrics(records) == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "yes_ratio": 0.5}
    always_yes = [rec("p", None, a, "yes") for a in ("yes", "no", "no", "no")]
    assert pope_metrics(always_yes)["yes_ratio"] == 1.0
    assert pope_metrics(always_yes)["recall"] == 1.0


def test_pope_per_task_and_overall_not_per_category() -> None:
    records = [rec("p", None, "yes", "yes", category="x"), rec("p", None, "no", "yes", category="x")]
    m = benchmark_metrics(records, ["accuracy", "pope", "category"], {})
    assert m["tasks"]["p"]["precision"] == m["overall"]["precision"] == 0.5
    assert m["categories"]["x"] == {"count": 2, "errors": 0, "accuracy": 0.5}
