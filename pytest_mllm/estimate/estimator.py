"""Estimates of a benchmark's full-run metrics from a drawn subset, each with a 95 % interval.

Each drawn unit stands for N_h / m_h units of its stratum (N_h units there, m_h drawn and run). Every metric
that is a ratio of counts (accuracy, accuracy+, MME's scores, POPE, circular accuracy, categories; see
`scoring.count_bootstrap`) is computed from the weighted counts: a stratified ratio estimator, by the very
functions that compute a full run's numbers. Its variance is the stratified delete-one-unit jackknife with
the finite-population correction (1 − m_h / N_h): each unit left out in turn, the rest of its stratum
weighted up by m_h / (m_h − 1). The interval is the estimate ± t · se with t of Student's distribution on
Σ (m_h − 1) degrees of freedom; rates are kept within 0–1. A stratum with one unit run adds nothing to the
variance (said in the estimate's notes); one with every unit run adds nothing either, rightly.

Paired with a full baseline run (`paired_difference`), the same weights give the difference of the two
runs on the drawn units, and the jackknife of that difference its interval: the regression limits' test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pytest_mllm.estimate.parts import DRAW, DrawInfo
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import LEVEL, MetricSetup, is_estimate, unit_of


VARIANCE_GROUP = 6  # units run per variance group (collapsed strata), at least


@dataclass(frozen=True)
class Estimate:
    """One metric's estimate of its full-run value."""

    value: float
    se: float | None  # None: no variance could be estimated (no stratum with two units run)
    df: int
    low: float | None
    high: float | None

    def json(self) -> dict[str, Any]:
        return {"value": self.value, "se": self.se, "df": self.df,
                "ci": [self.low, self.high] if self.low is not None else None}


class EstimateError(ValueError):
    """Records that cannot be estimated from (no draw information, or a metric path that does not apply)."""


@dataclass
class Subset:
    """The drawn units a run holds, in task order, with their weights and strata."""

    units: list[list[Record]]  # each unit's records
    tasks: list[str]  # each unit's task
    strata: list[str]  # each unit's stratum
    population: dict[str, int]  # stratum → its units in the benchmark
    info: DrawInfo  # the draw's settings (the first record's)

    @classmethod
    def of(cls, records: Sequence[Record]) -> Subset:
        """The subset `records` make (those of a subset run: each carries its draw)."""
        grouped: dict[str, list[Record]] = {}
        draws: dict[str, DrawInfo] = {}
        for record in records:
            found = DRAW.get(record)
            if found is None:
                raise EstimateError(f"record {record.get('id')!r} was not drawn by --mllm-estimate (no "
                                    f"{DRAW.key!r} part): a subset run's records all carry one")
            key = unit_of(record)
            grouped.setdefault(key, []).append(record)
            draws.setdefault(key, found)
        by_task: dict[str, list[str]] = {}
        for key, unit in grouped.items():
            by_task.setdefault(unit[0]["task"], []).append(key)
        order = [key for keys in by_task.values() for key in keys]
        info = draws[order[0]]
        return cls([grouped[k] for k in order], [grouped[k][0]["task"] for k in order],
                   [draws[k]["stratum"] for k in order], {d["stratum"]: d["stratum_units"] for d in draws.values()},
                   info)

    @property
    def run(self) -> dict[str, int]:
        """Stratum → its units run."""
        return _run(self.strata)

    def layers(self) -> list[list[list[Record]]]:
        """The units grouped by task, as `scoring.count_bootstrap` takes them."""
        layers: dict[str, list[list[Record]]] = {}
        for task, unit in zip(self.tasks, self.units):
            layers.setdefault(task, []).append(unit)
        return list(layers.values())

    def weights(self) -> Any:
        """Rows of unit weights: the estimate's, then one per unit left out (`design_rows`)."""
        return design_rows(self.strata, self.population)

    def variance(self, values: Any) -> tuple[float | None, int]:
        """(se, degrees of freedom) of a metric from its values on `weights()`'s rows (`jackknife`)."""
        return jackknife(values, self.strata, self.population)

    @property
    def lone_units(self) -> int:
        """Units alone in their variance group (its variance unknown, left out of the interval)."""
        groups = variance_groups(self.strata)
        size = _run([groups[s] for s in self.strata])
        return sum(1 for s in self.strata if size[groups[s]] == 1 and self.population[s] > 1)


def _run(strata: Sequence[str | None]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for stratum in strata:
        if stratum is not None:
            counts[stratum] = counts.get(stratum, 0) + 1
    return counts


def variance_groups(strata: Sequence[str | None], least: int = VARIANCE_GROUP) -> dict[str, str]:
    """{stratum: its variance group} (`_variance_groups`; the same design asks for it once per metric)."""
    return _variance_groups(tuple(strata), least)


@lru_cache(maxsize=32)
def _variance_groups(strata: tuple[str | None, ...], least: int) -> dict[str, str]:
    """{stratum: its variance group}: the difficulty bands of one pool (`design`'s "<pool> #<k>", in order of
    difficulty) joined in order until a group holds `least` units run (a short last one joins the one before);
    pools too small for one such group (a task with few draws) are joined together. The estimate keeps the fine
    strata; its variance is computed over the groups (collapsed strata), which gives each part of the variance
    several degrees of freedom, at the cost of counting the bands' differences within a group as noise: an
    interval a little wider, never narrower."""
    run = _run(strata)
    pools: dict[str, list[tuple[int, str]]] = {}
    for stratum in run:
        pool, sep, index = stratum.rpartition(" #")
        if sep and index.isdigit():
            pools.setdefault(pool, []).append((int(index), stratum))
        else:
            pools.setdefault(stratum, []).append((0, stratum))
    found: list[list[str]] = []
    small: list[str] = []
    for bands in pools.values():
        current: list[str] = []
        closed: list[list[str]] = []
        for _, stratum in sorted(bands):
            current.append(stratum)
            if sum(run[s] for s in current) >= least:
                closed.append(current)
                current = []
        if current and closed:
            closed[-1].extend(current)
        elif current:
            small.extend(current)
        found += closed
    if small:
        found.append(small)
    return {stratum: members[0] if len(members) == 1 else f"{members[0]}..{members[-1]}"
            for members in found for stratum in members}


def design_rows(strata: Sequence[str | None], population: Mapping[str, int]) -> Any:
    """Rows of weights over units (`strata`: each unit's stratum, None for a unit not drawn, weight 0): the
    estimate's row (N_h / m_h), then for each drawn unit of a variance group with m ≥ 2 units run its jackknife
    row (the unit left out, the rest of its group weighted up by m / (m − 1))."""
    import numpy as np

    run = _run(strata)
    groups = variance_groups(strata)
    of_unit = [groups[s] if s is not None else None for s in strata]
    size = _run(of_unit)
    base = np.array([population[s] / run[s] if s is not None else 0.0 for s in strata])
    left_out = [j for j, group in enumerate(of_unit) if group is not None and size[group] >= 2]
    if not left_out:
        return base[None, :]
    code = {group: n for n, group in enumerate(size)}
    codes = np.array([code[g] if g is not None else -1 for g in of_unit])
    m = np.array([size[group] for j in left_out if (group := of_unit[j]) is not None], dtype=np.float64)
    in_group = codes[None, :] == codes[left_out][:, None]  # each row: the left-out unit's group
    rows = base[None, :] * np.where(in_group, (m / (m - 1))[:, None], 1.0)
    rows[np.arange(len(left_out)), left_out] = 0.0
    return np.vstack([base, rows])


def jackknife(values: Any, strata: Sequence[str | None], population: Mapping[str, int]) -> tuple[float | None, int]:
    """(se, degrees of freedom) of a metric from its values on `design_rows`' rows.

    Over the variance groups g (`variance_groups`): v = Σ_g v_g, v_g = (1 − m_g/N_g) (m_g − 1)/m_g
    Σ_j (θ_(gj) − θ̄_g)²; the degrees of freedom are Satterthwaite's, (Σ v_g)² / Σ v_g² / (m_g − 1), at most
    Σ (m_g − 1): a variance that comes from one or two groups counts as few as they give. (None, 0) when no
    group has two units run, or a left-out row leaves the metric undefined."""
    import numpy as np

    groups = variance_groups(strata)
    of_unit = [groups[s] if s is not None else None for s in strata]
    size = _run(of_unit)
    in_group: dict[str, int] = {}
    for stratum, name in groups.items():
        in_group[name] = in_group.get(name, 0) + population[stratum]
    by_group: dict[str, list[float]] = {}
    at = 1
    for group in of_unit:
        if group is not None and size[group] >= 2:
            by_group.setdefault(group, []).append(float(values[at]))
            at += 1
    parts: list[tuple[float, int]] = []
    for group, replicates in by_group.items():
        m, n = size[group], in_group[group]
        column = np.array(replicates)
        if np.isnan(column).any():
            return None, 0
        parts.append(((1 - m / n) * (m - 1) / m * float(((column - column.mean()) ** 2).sum()), m - 1))
    if not parts:
        return None, 0
    total = sum(v for v, _ in parts)
    most = sum(d for _, d in parts)
    spread = sum(v * v / d for v, d in parts)
    df = most if spread == 0 else max(1, min(most, math.floor(total * total / spread)))
    return math.sqrt(total), df


def _counts(subset: Subset, setup: MetricSetup, records: Sequence[Record] | None = None) -> Any:
    """The count path over the subset's units (`records`: another run's records of the same units)."""
    return count_path(subset.layers() if records is None else _aligned(subset, records), setup)


def count_path(layers: Sequence[Sequence[Sequence[Record]]], setup: MetricSetup) -> Any:
    """`scoring.count_bootstrap`'s path over units grouped by task: the benchmark's count metrics (accuracy
    alone when the others cannot take it), or None where even accuracy cannot."""
    from pytest_mllm.scoring.count_bootstrap import CountReplicates
    from pytest_mllm.scoring.metrics import ACCURACY, enabled_metrics, ordered_metrics

    flat_records = [r for layer in layers for unit in layer for r in unit]
    enabled = enabled_metrics(setup.declared, flat_records)
    counted = {m.name for m in ordered_metrics() if m.name in enabled and m.twin is not None}
    for chosen in (counted | {ACCURACY}, {ACCURACY}):
        built = CountReplicates.build(layers, frozenset(chosen), setup.groups, setup.task_order, setup.headline)
        if built is not None:
            return built
    return None


def _aligned(subset: Subset, records: Sequence[Record]) -> list[list[list[Record]]]:
    """Another run's records laid out as the subset's units (by sample id; a missing one is left out)."""
    by_id = {r["id"]: r for r in records}
    layers: dict[str, list[list[Record]]] = {}
    for task, unit in zip(subset.tasks, subset.units):
        layers.setdefault(task, []).append([by_id[r["id"]] for r in unit if r["id"] in by_id])
    return list(layers.values())


def interval(value: float, se: float | None, df: int, units: int, rate: bool, level: float = LEVEL) -> Estimate:
    """The estimate with its interval: estimate ± t_df · se; for a rate, joined with Korn and Graubard's (1998)
    Clopper–Pearson interval on the effective sample size p(1 − p) / se², scaled by (t_{units−1} / t_df)² for
    the variance's degrees of freedom (the number of units run when the subset shows no variance, or a rate of
    0 or 1). The join keeps both safeguards: a draw whose units all agree (a variance of 0) still gets an
    interval, and a variance from very few units keeps Student's wide t."""
    from scipy.stats import beta, t

    if se is None:
        return Estimate(value, None, df, None, None)
    alpha = 1 - level
    half = float(t.ppf(1 - alpha / 2, df)) * se
    if not rate:
        return Estimate(value, se, df, value - half, value + half)
    if se > 0 and 0 < value < 1:
        effective = value * (1 - value) / se ** 2
        if units > 1:
            effective *= (float(t.ppf(1 - alpha / 2, units - 1)) / float(t.ppf(1 - alpha / 2, df))) ** 2
    else:
        effective = float(units)
    hits = effective * value
    low = float(beta.ppf(alpha / 2, hits, effective - hits + 1)) if hits > 0 else 0.0
    high = float(beta.ppf(1 - alpha / 2, hits + 1, effective - hits)) if hits < effective else 1.0
    return Estimate(value, se, df, max(0.0, min(low, value - half)), min(1.0, max(high, value + half)))


def is_rate(key: str) -> bool:
    from pytest_mllm.sections import is_rate_key

    return is_rate_key(key.split(".")[-1])


def estimate(records: Sequence[Record], setup: MetricSetup, level: float = LEVEL) -> dict[str, Estimate]:
    """{flat key: its estimate} of every metric the count path computes, from a subset run's records."""
    subset = Subset.of(records)
    counts = _counts(subset, setup)
    if counts is None:
        raise EstimateError("the benchmark's metrics are not ratios of counts over whole units: no estimate")
    return estimates(counts, subset.strata, subset.population, level=level)


def estimates(counts: Any, strata: Sequence[str | None], population: Mapping[str, int],
              keys: Sequence[str] | None = None, level: float = LEVEL) -> dict[str, Estimate]:
    """The estimates of a design over a count path's units (`strata`: each unit's stratum, None where not
    drawn): every estimable key, or those in `keys`."""
    import numpy as np

    values = counts.flat(design_rows(strata, population))
    found: dict[str, Estimate] = {}
    for key in keys if keys is not None else list(values):
        column = values.get(key)
        if column is None or np.isnan(column[0]) or not is_estimate(key, float(column[0])):
            continue
        found[key] = estimate_column(column, strata, population, is_rate(key), level)
    return found


def estimate_column(column: Any, strata: Sequence[str | None], population: Mapping[str, int], rate: bool,
                    level: float = LEVEL) -> Estimate:
    """A metric's estimate from its values on `design_rows`' rows (the first is the estimate)."""
    value = float(column[0])
    se, df = jackknife(column, strata, population)
    if all(population[s] == m for s, m in _run(strata).items()):  # every unit ran: nothing is estimated
        return Estimate(value, 0.0, df, value, value)
    return interval(value, se, df, sum(s is not None for s in strata), rate, level)


@dataclass(frozen=True)
class Difference:
    """A metric's difference between a run and its baseline over the drawn units, weighted to the full run."""

    value: float  # this run − the baseline
    se: float | None
    df: int
    shared: int  # units both runs answered


def paired_difference(records: Sequence[Record], baseline: Sequence[Record], setup: MetricSetup,
                      keys: Sequence[str]) -> dict[str, Difference]:
    """{key: this run − baseline, estimated for the full benchmark} on the drawn samples both runs hold with the
    same input (`record.same_input`: a sample whose data changed is no pair)."""
    import numpy as np

    from pytest_mllm.record import same_input

    before = {r["id"]: r for r in baseline}
    shared = [r for r in records if r["id"] in before and same_input(before[r["id"]], r)]
    if not shared:
        return {}
    subset = Subset.of(shared)
    head, base = _counts(subset, setup), _counts(subset, setup, [before[r["id"]] for r in shared])
    if head is None or base is None:
        return {}
    rows = subset.weights()
    after, before = head.flat(rows), base.flat(rows)
    found: dict[str, Difference] = {}
    for key in keys:
        if key not in after or key not in before:
            continue
        column = np.asarray(after[key]) - np.asarray(before[key])
        if np.isnan(column[0]):
            continue
        se, df = subset.variance(column)
        found[key] = Difference(float(column[0]), se, df, len(subset.units))
    return found

