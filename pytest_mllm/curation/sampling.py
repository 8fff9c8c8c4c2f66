"""Sampling the kept units down to a target size, by difficulty, seeded.

Every (task, class) stratum keeps its share of the target in samples (largest remainders
settle the rounding, ties in benchmark order), so the curated benchmark has the same mix of
tasks and of middle and hard samples as what survived the filters. Units (pairs) are taken
whole; a stratum's units are drawn in the order `random.Random(f"{seed}:{task}:{class}")`
shuffles them to, which is the same in every process and Python run. Room a stratum could not
fill (a pair does not fit an odd share) is offered to the other strata, largest shortfall first.
The result is in benchmark order.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

from pytest_mllm.curation.units import Unit


@dataclass(frozen=True)
class Sampled:
    """Units kept and units sampled out, both in benchmark order; `note` says what happened."""

    kept: list[Unit]
    dropped: list[Unit]
    note: str
    target_too_large: bool = False


def sample_units(candidates: Sequence[tuple[Unit, str]], target: int | None, seed: int | str) -> Sampled:
    """Keep about `target` samples of the (unit, class) candidates, by stratum; all when target is None or larger."""
    total = sum(unit.size for unit, _ in candidates)
    ordered = sorted((unit for unit, _ in candidates), key=lambda u: u.index)
    if target is None:
        return Sampled(ordered, [], f"no --target: kept all {total} samples that passed the filters")
    if target >= total:
        return Sampled(ordered, [], f"--target {target} is not below the {total} samples that passed the filters: "
                                    f"kept all {total}", target_too_large=target > total)
    strata: dict[tuple[str, str], list[Unit]] = {}
    for unit, klass in sorted(candidates, key=lambda c: c[0].index):
        strata.setdefault((unit.task, klass), []).append(unit)
    shares = _shares(strata, target, total)
    taken: dict[tuple[str, str], list[Unit]] = {}
    rest: dict[tuple[str, str], list[Unit]] = {}
    for key, units in strata.items():
        order = list(units)
        random.Random(f"{seed}:{key[0]}:{key[1]}").shuffle(order)
        taken[key], rest[key], size = [], [], 0
        for unit in order:
            if size + unit.size <= shares[key]:
                taken[key].append(unit)
                size += unit.size
            else:
                rest[key].append(unit)
    room = target - sum(u.size for units in taken.values() for u in units)
    by_shortfall = sorted(strata, key=lambda k: -(shares[k] - sum(u.size for u in taken[k])))
    for key in by_shortfall:
        for unit in list(rest[key]):
            if unit.size <= room:
                taken[key].append(unit)
                rest[key].remove(unit)
                room -= unit.size
    kept = sorted((u for units in taken.values() for u in units), key=lambda u: u.index)
    dropped = sorted((u for units in rest.values() for u in units), key=lambda u: u.index)
    size = sum(u.size for u in kept)
    note = f"sampled {size} of {total} samples (target {target}) by task and class, seed {seed!r}"
    if size != target:
        note += f"; {target - size} short because pairs are kept whole"
    return Sampled(kept, dropped, note)


def _shares(strata: dict[tuple[str, str], list[Unit]], target: int, total: int) -> dict[tuple[str, str], int]:
    """Each stratum's share of `target` in samples, proportional to its size (largest remainders)."""
    exact = {key: Fraction(target * sum(u.size for u in units), total) for key, units in strata.items()}
    shares = {key: math.floor(value) for key, value in exact.items()}
    left = target - sum(shares.values())
    order = list(strata)
    for key in sorted(order, key=lambda k: (-(exact[k] - shares[k]), order.index(k)))[:left]:
        shares[key] += 1
    return shares
