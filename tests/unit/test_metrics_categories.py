"""Per-category scopes (scoring/categories.py)."""

from __future__ import annotations

from metric_records import rec

from pytest_mllm.scoring.metrics import benchmark_metrics


def test_categories_report_accuracy_per_value() -> None:
    records = [rec("mc", None, "A", "A", category="x"), rec("mc", None, "B", "C", category="x"),
               rec("mc", None, "C", "C", category="y")]
    m = benchmark_metrics(records, ["accuracy", "category"], {})
    assert m["categories"]["x"]["accuracy"] == 0.5 and m["categories"]["y"]["accuracy"] == 1.0
