"""Per-category scopes (MMBench's categories and l2-categories, the shapes' colours …): each
value of a record's `category` and `l2_category` field gets a scope of its own, with the
counts and the benchmark's scope metrics, as MMBench's official report breaks accuracy down."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Literal

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import BenchmarkView, CountTwin, metric


@metric("category", section=True, keys=("category", "l2_category"),
        twin=CountTwin(partitions=(("categories", "category"), ("l2_categories", "l2_category"))))
def category_sections(benchmark: BenchmarkView) -> dict[str, Any]:
    """Sections `categories` and `l2_categories`: one scope per value, in first-seen order."""
    return {"categories": _by_field(benchmark, "category"), "l2_categories": _by_field(benchmark, "l2_category")}


def _by_field(benchmark: BenchmarkView, field: Literal["category", "l2_category"]) -> dict[str, Any]:
    buckets: dict[str, list[Record]] = defaultdict(list)
    for record in benchmark.records:
        value = record.get(field)
        if value:
            buckets[value].append(record)
    return {value: benchmark.scope(records, field) for value, records in buckets.items()}
