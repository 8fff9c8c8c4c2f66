"""Which units a subset run asks: the size asked for, the strata, and a seeded draw in each.

A unit is what the metrics score together (`scoring.uncertainty.unit_of`: MME's question pairs, MMBench's
circular passes, a source with its VRP variants, an image's questions): a unit is drawn whole or not at all.

Stratified by difficulty (the default method): the units of each task are sorted by the panel's share of
right answers (a unit the panel does not know sits at its task's median) and cut into bands of about
`PER_STRATUM` units' worth of draws; each band (a stratum) gets its share of the draws, proportional to its
units (so every unit has about the same chance: the subset is nearly self-weighting), and draws them
without replacement. A task allotted fewer than two draws is pooled with the others. "random" draws the
same number of units from the whole benchmark in one stratum: the plain random subset, for comparison.

The estimator's validity rests on the draw alone (each unit's chance is known): the panel only decides how
well the strata separate easy from hard units, which makes the interval narrower, never wrong.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

STRATIFIED, RANDOM = "stratified", "random"
METHODS = (STRATIFIED, RANDOM)
PER_STRATUM = 1  # draws per difficulty band (variance groups join bands: `estimator.variance_groups`)
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


class DesignError(ValueError):
    """A size or method that cannot be used; the message names the option's expected form."""


@dataclass(frozen=True)
class Size:
    """What `--mllm-estimate` asks for: a fraction of each benchmark's samples, or a number of samples."""

    text: str  # as given: "20%", "0.2", "100"
    fraction: float | None = None
    samples: int | None = None

    def units(self, units: int, samples: int) -> int:
        """Units to draw from a benchmark of `units` units holding `samples` samples (at least 2, at most all)."""
        wanted = self.fraction * units if self.fraction is not None else (self.samples or 0) * units / max(samples, 1)
        return max(2, min(units, math.floor(wanted + 0.5)))


def parse_size(text: str) -> Size:
    """`20%` or `0.2` (a fraction of each benchmark's samples) or `100` (samples per benchmark)."""
    match = _SIZE.match(text)
    if not match:
        raise DesignError(f"--mllm-estimate={text!r}: expected a fraction of each benchmark (20% or 0.2) or a number "
                          "of samples per benchmark (100)")
    number, percent = float(match.group(1)), match.group(2)
    if percent or ("." in match.group(1) and number < 1):
        fraction = number / 100 if percent else number
        if not 0 < fraction < 1:
            raise DesignError(f"--mllm-estimate={text!r}: a fraction must lie between 0 and 100 % (exclusive); "
                              "run without --mllm-estimate for the whole benchmark")
        return Size(text.strip(), fraction=fraction)
    if number != int(number) or number < 2:
        raise DesignError(f"--mllm-estimate={text!r}: a number of samples must be a whole number of at least 2 "
                          "(or give a fraction: 20% or 0.2)")
    return Size(text.strip(), samples=int(number))


@dataclass(frozen=True)
class Unit:
    """A unit of a benchmark as the design sees it."""

    key: str
    task: str
    size: int  # its samples


@dataclass(frozen=True)
class Stratum:
    """A band of units and the number drawn from it."""

    name: str
    units: tuple[str, ...]  # unit keys
    draws: int


@dataclass(frozen=True)
class Draw:
    """Where a drawn unit comes from: its stratum, the stratum's units and how many were drawn there."""

    stratum: str
    stratum_units: int
    stratum_draws: int


def strata(units: Sequence[Unit], difficulty: Mapping[str, float], draws: int, method: str = STRATIFIED,
           per_stratum: int = PER_STRATUM) -> list[Stratum]:
    """The strata of a design drawing `draws` units (see the module's docstring)."""
    if method not in METHODS:
        raise DesignError(f"--mllm-estimate-method={method!r}: expected one of {', '.join(METHODS)}")
    draws = max(1, min(draws, len(units)))
    if method == RANDOM:
        return [Stratum("all", tuple(u.key for u in units), draws)]
    tasks: dict[str, list[Unit]] = {}
    for unit in units:
        tasks.setdefault(unit.task, []).append(unit)
    shares = _allocate(draws, [len(members) for members in tasks.values()])
    pools: list[tuple[str, list[Unit], int]]
    if len(tasks) > 1 and min(shares) >= per_stratum:
        pools = [(task, members, share) for (task, members), share in zip(tasks.items(), shares)]
    else:
        pools = [("all", list(units), draws)]
    found: list[Stratum] = []
    for name, members, share in pools:
        found += _bands(name, members, difficulty, share, per_stratum)
    return found


def _bands(name: str, units: list[Unit], difficulty: Mapping[str, float], draws: int, per_stratum: int) -> list[Stratum]:
    """A pool's units sorted by difficulty (ties in a fixed pseudo-random order) and cut into bands."""
    known = sorted(difficulty[u.key] for u in units if u.key in difficulty)
    middle = known[len(known) // 2] if known else 0.5
    ordered = sorted(units, key=lambda u: (difficulty.get(u.key, middle), _tie(u.key)))
    count = max(1, min(draws // per_stratum, len(ordered)))
    edges = [round(k * len(ordered) / count) for k in range(count + 1)]
    bands = [ordered[a:b] for a, b in zip(edges, edges[1:])]
    shares = _allocate(draws, [len(b) for b in bands])
    return [Stratum(f"{name} #{n + 1}" if count > 1 else name, tuple(u.key for u in band), share)
            for n, (band, share) in enumerate(zip(bands, shares))]


def _tie(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _allocate(total: int, sizes: Sequence[int]) -> list[int]:
    """`total` split proportionally to `sizes` by largest remainder, no part above its size."""
    whole = sum(sizes)
    exact = [total * s / whole for s in sizes]
    parts = [min(s, math.floor(e)) for s, e in zip(sizes, exact)]
    order = sorted(range(len(sizes)), key=lambda i: (-(exact[i] - math.floor(exact[i])), i))
    left = total - sum(parts)
    while left > 0:
        moved = False
        for i in order:
            if left and parts[i] < sizes[i]:
                parts[i] += 1
                left -= 1
                moved = True
        if not moved:
            break
    return parts


def draw(found: Sequence[Stratum], seed: int) -> dict[str, Draw]:
    """{unit key: its draw} of the units drawn, each stratum drawing without replacement under `seed`."""
    import numpy as np

    rng = np.random.default_rng(seed)
    drawn: dict[str, Draw] = {}
    for stratum in found:
        picks: Iterable[int] = rng.choice(len(stratum.units), size=stratum.draws, replace=False) if stratum.draws else []
        for k in sorted(int(p) for p in picks):
            drawn[stratum.units[k]] = Draw(stratum.name, len(stratum.units), stratum.draws)
    return drawn
