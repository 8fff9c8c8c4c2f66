"""The curation itself, from judges' verdicts to the kept units; no input or output here.

Order of the filters (each dropped unit gets the first reason that applies):
1. difficulty from the panel — "unknown" (errored judges could change the class), "easy",
   "unanswered" (no judge right: to the review list; kept with `keep_unanswered`);
2. answer leakage on what is left — "leakage";
3. sampling of what is left to the target size by task and class — "sampled-out".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from pytest_mllm.curation.difficulty import EASY, UNANSWERED, UNKNOWN, Thresholds
from pytest_mllm.curation.leakage import Leakage, leakage_pass
from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.review import review_entries
from pytest_mllm.curation.sampling import Sampled, sample_units
from pytest_mllm.curation.units import Item, Unit, build_units, unit_verdict

REASONS = ("easy", "unanswered", "unknown", "leakage", "sampled-out")


@dataclass(frozen=True)
class Settings:
    """How to curate: cut-offs, leakage threshold (None: auto), target size, seed."""

    thresholds: Thresholds
    leak_threshold: int | None = None
    target: int | None = None
    seed: int = 0
    keep_unanswered: bool = False
    leakage_off: str | None = None  # why the leakage pass is turned off, if it is


@dataclass
class Decision:
    """One unit's fate: its panel counts, class, and why it was dropped (None: kept)."""

    unit: Unit
    correct: int
    unknown: int
    klass: str
    reason: str | None = None
    text_only_correct: int | None = None


@dataclass
class Curation:
    """Everything the outputs are written from."""

    items: dict[str, Item]
    units: list[Unit]
    decisions: dict[str, Decision]
    leakage: Leakage
    sampled: Sampled
    review: list[dict]
    warnings: list[str] = field(default_factory=list)

    @property
    def kept(self) -> list[Decision]:
        return [d for d in self.decisions.values() if d.reason is None]

    @property
    def kept_ids(self) -> list[str]:
        """Sample ids kept, in benchmark order."""
        return [i for d in sorted(self.kept, key=lambda d: d.unit.index) for i in d.unit.ids]

    def sample_class(self) -> dict[str, str]:
        """Every sample's class (its unit's)."""
        return {i: d.klass for d in self.decisions.values() for i in d.unit.ids}


def curate(items: Sequence[Item], panel: Sequence[Run], text_only: Sequence[Run], settings: Settings) -> Curation:
    """Classify, filter and sample the benchmark's units; see the module for the order."""
    by_id = {item.id: item for item in items}
    units = build_units(items)
    answers = [run.verdicts for run in panel]
    decisions: dict[str, Decision] = {}
    for unit in units:
        verdicts = [unit_verdict(a, unit) for a in answers]
        correct, unknown = verdicts.count(True), verdicts.count(None)
        klass = settings.thresholds.classify(correct, unknown)
        reason = {EASY: "easy", UNKNOWN: "unknown"}.get(klass)
        if klass == UNANSWERED and not settings.keep_unanswered:
            reason = "unanswered"
        decisions[unit.key] = Decision(unit, correct, unknown, klass, reason)
    leakage = leakage_pass(units, by_id, text_only, settings.leak_threshold,
                           candidates={k for k, d in decisions.items() if d.reason is None}, off=settings.leakage_off)
    for key, count in leakage.correct.items():
        decisions[key].text_only_correct = count
    for key in leakage.leaked:
        decisions[key].reason = "leakage"
    sampled = sample_units([(d.unit, d.klass) for d in decisions.values() if d.reason is None],
                           settings.target, settings.seed)
    for unit in sampled.dropped:
        decisions[unit.key].reason = "sampled-out"
    unanswered = [d.unit for d in decisions.values() if d.klass == UNANSWERED]
    curation = Curation(by_id, units, decisions, leakage, sampled, review_entries(unanswered, by_id, panel))
    curation.warnings.extend(_warnings(curation, panel, settings))
    return curation


def _warnings(curation: Curation, panel: Sequence[Run], settings: Settings) -> list[str]:
    """Things a reader of the report must not miss."""
    lines = []
    ids = list(curation.items)
    for run in panel:
        errors = sum(1 for i in ids if i in run.records and run.verdict(i) is None)
        missing = sum(1 for i in ids if i not in run.records)
        if errors or missing:
            parts = [f"{errors} errored" if errors else "", f"{missing} not answered" if missing else ""]
            lines.append(f"judge {run.label}: {', '.join(p for p in parts if p)} sample(s) count as unknown, not wrong")
    unknown = [d for d in curation.decisions.values() if d.klass == UNKNOWN]
    if unknown:
        lines.append(f"{sum(d.unit.size for d in unknown)} sample(s) dropped as unknown: the judges that errored on "
                     "them could have moved them to another class")
    if settings.thresholds.ranges()["middle"] is None:
        lines.append(f"the middle class is empty with {settings.thresholds.describe()}; a larger panel spreads "
                     "the classes")
    if curation.sampled.target_too_large:
        lines.append(curation.sampled.note)
    if not curation.kept:
        lines.append("no sample is left: the curated benchmark would be empty")
    return lines
