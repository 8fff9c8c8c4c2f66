"""Hand-built records for the metric tests (only the fields metrics read)."""

from __future__ import annotations

from typing import Any


def rec(task: str, group: str | None, answer: str, parsed: str, status: str | None = None,
        category: str | None = None) -> dict[str, Any]:
    correct = parsed == answer
    return {"task": task, "pair_group": group, "answer": answer, "parsed": parsed, "correct": correct,
            "status": status or ("correct" if correct else "incorrect"), "answer_type": "yes_no",
            "category": category, "l2_category": None}


def vrp_rec(source: str, variant_id: str, intervention: str, parsed: str, answer: str = "yes",
            **options: str) -> dict[str, Any]:
    record = rec("vrp", None, answer, parsed)
    record["variant"] = {"source": source, "variant": variant_id, "intervention": intervention, **options}
    return record
