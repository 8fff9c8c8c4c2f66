"""VRPTEST's metrics (Li et al., "Visual referring prompting"): accuracy per intervention level
and per radar axis, consistency with the un-intervened answer, sensitivity to the strategy, and
the gain of each level and axis over no intervention (the paper's "−17.5 % to +7.3 %": a level's
accuracy minus the No-intervention accuracy, in accuracy points; §3.3)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence, TypedDict

from pytest_mllm.record import Record, RecordPart
from pytest_mllm.scoring.metrics import BenchmarkView, accuracy, metric


class VariantPart(TypedDict):
    """The visual-prompt variant a record was asked under (`vrp/expand.py` builds it)."""

    source: str  # the source sample's id
    variant: str  # the variant's id: its intervention and options
    intervention: str  # none, partial or full
    color: str | None
    font: str | None
    shape: str | None
    position: str | None
    font_used: str | None  # the font file drawn with, at the full level
    axes: list[str]  # the radar axes it counts on
    source_region: list[float]  # the target region in the source image's pixels
    image_text: str | None  # the text drawn on the image (full level)


# A VRP sample's metadata "vrp" becomes its record's "variant".
VARIANT: RecordPart[VariantPart] = RecordPart("variant", from_metadata="vrp", in_every_record=True)

# VRPTEST's radar axes: the variant attribute and value each one averages over.
VRP_AXES: dict[str, tuple[str, str]] = {
    "Base": ("intervention", "none"), "C_Red": ("color", "red"), "C_Blue": ("color", "blue"),
    "Pos_Upper": ("position", "upper"), "Pos_Lower": ("position", "lower"), "Arial": ("font", "arial"),
    "TNR": ("font", "times"), "Cir": ("shape", "ellipse"), "Rect": ("shape", "box"),
}


def vrp_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """VRPTEST's view: accuracy per intervention level and per radar axis, consistency with the
    un-intervened answer of the same source, and sensitivity (best minus worst strategy)."""
    scored = [(r, v) for r in records if r["status"] != "error" and (v := VARIANT.get(r))]
    if not scored:
        return {}
    base_answer = {v["source"]: r["parsed"] for r, v in scored if v["intervention"] == "none"}
    levels: dict[str, list[Record]] = defaultdict(list)
    strategies: dict[str, list[Record]] = defaultdict(list)
    for record, variant in scored:
        levels[variant["intervention"]].append(record)
        strategies[variant["variant"]].append(record)
    axes = {axis: [r for r, v in scored if v.get(field) == value] for axis, (field, value) in VRP_AXES.items()}
    compared = [(r, base_answer[v["source"]]) for r, v in scored
                if v["intervention"] != "none" and v["source"] in base_answer]
    by_strategy = {name: accuracy(rs) for name, rs in strategies.items()}
    base = accuracy(levels["none"]) if levels.get("none") else None
    gain = None if base is None else {
        "levels": {level: accuracy(levels[level]) - base for level in ("partial", "full") if level in levels},
        "axes": {axis: accuracy(rs) - base for axis, rs in axes.items() if rs and axis != "Base"},
    }
    return {
        "levels": {level: {"count": len(levels[level]), "accuracy": accuracy(levels[level])}
                   for level in ("none", "partial", "full") if level in levels},
        "axes": {axis: {"count": len(rs), "accuracy": accuracy(rs)} for axis, rs in axes.items() if rs},
        "consistency": (sum(r["parsed"] == first for r, first in compared) / len(compared) if compared else None),
        "relation_holds": (sum(bool(r["correct"]) and r["parsed"] == first for r, first in compared) / len(compared)
                           if compared else None),
        "strategies": by_strategy,
        "sensitivity": max(by_strategy.values()) - min(by_strategy.values()),
        "gain": gain,
    }


@metric("vrp", section=True, keys=("vrp",))
def vrp_section(benchmark: BenchmarkView) -> dict[str, Any]:
    """Section `vrp`: `vrp_metrics` over the benchmark's records."""
    return {"vrp": vrp_metrics(benchmark.records)}
