"""manifest.json: the settings, the counts, every dropped sample with its reason, every kept one with its class."""

from __future__ import annotations

from typing import Any

from pytest_mllm.curation.difficulty import CLASSES
from pytest_mllm.curation.pipeline import REASONS, Curation


def _entry(curation: Curation, sample_id: str, unit_key: str) -> dict[str, Any]:
    decision = curation.decisions[unit_key]
    entry = {"id": sample_id, "task": decision.unit.task, "unit": unit_key, "class": decision.klass,
             "correct": decision.correct, "unknown": decision.unknown}
    if decision.text_only_correct is not None:
        entry["text_only_correct"] = decision.text_only_correct
    return entry


def counts(curation: Curation) -> dict[str, Any]:
    """Samples (and units) before and after, per reason, per class and per task."""
    tasks = list(dict.fromkeys(d.unit.task for d in curation.decisions.values()))
    by_task: dict[str, dict[str, int]] = {t: {"before": 0, "after": 0, **dict.fromkeys(REASONS, 0)} for t in tasks}
    by_reason = dict.fromkeys(REASONS, 0)
    by_class = {c: {"before": 0, "after": 0} for c in CLASSES}
    for decision in curation.decisions.values():
        size, task = decision.unit.size, decision.unit.task
        by_task[task]["before"] += size
        by_class[decision.klass]["before"] += size
        if decision.reason is None:
            by_task[task]["after"] += size
            by_class[decision.klass]["after"] += size
        else:
            by_task[task][decision.reason] += size
            by_reason[decision.reason] += size
    kept = curation.kept
    return {"samples_before": len(curation.items), "samples_after": sum(d.unit.size for d in kept),
            "units_before": len(curation.units), "units_after": len(kept),
            "dropped_by_reason": by_reason, "by_class": by_class, "by_task": by_task}


def build_manifest(curation: Curation, settings: dict[str, Any], report: dict[str, Any]) -> dict[str, Any]:
    """The whole manifest: dropped and kept samples in benchmark order."""
    unit_of = {i: d.unit.key for d in curation.decisions.values() for i in d.unit.ids}
    dropped, kept = [], []
    for sample_id in curation.items:
        key = unit_of[sample_id]
        reason = curation.decisions[key].reason
        if reason is None:
            kept.append(_entry(curation, sample_id, key))
        else:
            dropped.append({**_entry(curation, sample_id, key), "reason": reason})
    llm = [e["llm"] for e in curation.review if e.get("llm")]
    verdicts: dict[str, int] = {}
    for answer in llm:
        label = answer["verdict"] or ("error" if answer["error"] else "unreadable")
        verdicts[label] = verdicts.get(label, 0) + 1
    return {
        "settings": settings,
        "counts": counts(curation),
        "leakage": report["leakage"],
        "sampling": curation.sampled.note,
        "review": {"file": "review.jsonl", "samples": len(curation.review), "llm_verdicts": verdicts or None},
        "warnings": list(curation.warnings),
        "report": {k: report[k] for k in ("time", "spread", "models", "classes")},
        "dropped": dropped,
        "kept": kept,
    }
