"""Units of curation: a sample alone, or the samples sharing a pair group (kept or dropped together).

MME asks two questions about each image and scores accuracy+ on the pair; dropping one
question of a pair would leave accuracy+ uncomputable, so curation decides per unit. A judge
answers a unit correctly when it answers every member correctly, wrongly when it gets any member
wrong, and is unknown otherwise (no member wrong, some member errored or missing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from pytest_mllm.sample import BadSample, Sample


@dataclass(frozen=True)
class Item:
    """What curation needs of one benchmark sample."""

    id: str
    task: str
    index: int  # position in the benchmark
    pair_group: str | None = None
    answer_type: str = "open"
    choices: int = 0
    text: str = ""  # question, options and hint: what a text-only model gets to see
    answer: str = ""
    sample: Sample | None = None  # None for a sample the loader could not read


@dataclass(frozen=True)
class Unit:
    """Samples curated together: one sample, or every member of a pair group, in benchmark order."""

    key: str
    task: str
    ids: tuple[str, ...]
    index: int  # position of the first member in the benchmark

    @property
    def size(self) -> int:
        return len(self.ids)


def items_of(samples: Iterable[Sample | BadSample]) -> list[Item]:
    """Items in benchmark order; an unreadable sample keeps its id and task (every judge errors on it)."""
    items = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, Sample):
            items.append(Item(sample.id, sample.task, index))
            continue
        options = "\n".join(f"{letter}. {text}" for letter, text in sample.choices)
        hint = str(sample.metadata.get("hint") or "")
        items.append(Item(sample.id, sample.task, index, sample.pair_group, sample.answer_type, len(sample.choices),
                          "\n".join(part for part in (hint, sample.question, options) if part), sample.answer, sample))
    return items


def build_units(items: Sequence[Item]) -> list[Unit]:
    """Units in benchmark order: pair groups (within a task) together, other samples alone."""
    members: dict[str, list[Item]] = {}
    for item in items:
        key = f"{item.task}\x1f{item.pair_group}" if item.pair_group else f"\x1e{item.id}"
        members.setdefault(key, []).append(item)
    units: list[Unit] = []
    keys: set[str] = set()
    for group in members.values():
        first = group[0]
        key = first.id if not first.pair_group else (
            first.pair_group if first.pair_group.startswith(f"{first.task}::") else f"{first.task}::{first.pair_group}")
        if key in keys:  # a pair group named like a sample id: keep keys unique
            key = f"{key}#{first.index}"
        keys.add(key)
        units.append(Unit(key, first.task, tuple(i.id for i in group), first.index))
    return sorted(units, key=lambda u: u.index)


def unit_verdict(verdicts: Mapping[str, bool | None], unit: Unit) -> bool | None:
    """One judge's verdict on a unit from its verdicts on samples (missing ids are unknown)."""
    values = [verdicts.get(sample_id) for sample_id in unit.ids]
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True
