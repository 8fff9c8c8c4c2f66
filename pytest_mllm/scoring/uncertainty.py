"""Every score with its uncertainty: a standard error and a 95 % interval suited to the metric.

- Accuracies (a scope's `accuracy`, with its `count`): the binomial Wilson interval (in closed form, equal to
  `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`), se = √(p(1−p)/n).
- Everything else (accuracy+, MME scores, POPE's F1/precision/recall, circular accuracy, VRP
  figures, …): a seeded percentile bootstrap over the benchmark's own *unit*, stratified by task.
  A unit is the set of records that share a `pair_group` (MME's two questions per image, MMBench's
  circular passes of a question), a VRP variant's `source`, or an image within a task;
  units are resampled, never single questions. A record whose image has no name (inline base64, as
  in POPE.tsv: every such image reads "<base64>") is a unit of its own. Each resample is scored by
  the registered metric functions themselves (`scoring.metrics.benchmark_metrics` + `gates.flatten`),
  so no metric is re-implemented here; a unit drawn twice gets renamed copies so pair groups stay apart.
  Which metrics apply is decided once per unit, and a unit's renamed copies are made once per run.
  Where every metric is a ratio of counts (accuracy, and each metric with a count twin: `metrics.CountTwin`),
  `count_bootstrap` forms all resamples at once from per-unit counts, after checking that it
  reproduces the benchmark's own numbers; the draws, and so every number, are the same either way.

scipy and numpy are imported only here, only when an interval is computed (the `stats` extra).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.gates import flatten
from pytest_mllm.scoring.metrics import ACCURACY, applies_tests, benchmark_metrics, enabled_metrics, metrics_shown

STATS_HINT = "intervals need scipy and numpy: pip install 'pytest-mllm[stats]'"
LEVEL = 0.95
BOOTSTRAP_SAMPLES = 1000
SEED = 0
CHUNK = 100  # resamples formed together on the vectorised path

Interval = dict[str, Any]  # {"value", "se", "ci": [low, high], "method"}


def stats_missing() -> str | None:
    """None when scipy and numpy can be imported, else the line saying how to get them."""
    if importlib.util.find_spec("scipy") is None or importlib.util.find_spec("numpy") is None:
        return STATS_HINT
    return None


@dataclass(frozen=True)
class MetricSetup:
    """What recomputing a benchmark's flat metrics on resampled records needs (its spec's metric fields)."""

    declared: tuple[str, ...]
    groups: Mapping[str, Sequence[str]] = field(default_factory=dict)
    task_order: tuple[str, ...] = ()
    headline: str = "accuracy"

    @classmethod
    def from_spec(cls, spec: Any) -> MetricSetup:
        return cls(tuple(spec.metrics), dict(spec.groups), tuple(spec.task_order), spec.headline)

    @classmethod
    def from_document(cls, bench: Mapping[str, Any], records: Sequence[Record]) -> MetricSetup:
        """From a `--mllm-json` benchmark entry: its `setup` key, or (older files) inferred from its metrics."""
        setup = bench.get("setup")
        if isinstance(setup, dict):
            return cls(tuple(setup.get("metrics") or ()), dict(setup.get("groups") or {}),
                       tuple(setup.get("task_order") or ()), bench.get("headline") or "accuracy")
        declared = [ACCURACY, *metrics_shown(bench.get("metrics") or {})]
        groups: dict[str, list[str]] = {}
        for record in records:
            if (group := record.get("group")) and record["task"] not in groups.setdefault(group, []):
                groups[group].append(record["task"])
        tasks = tuple((bench.get("scopes") or {}).get("tasks") or ())
        return cls(tuple(declared), groups, tasks, bench.get("headline") or "accuracy")

    def flat(self, records: Sequence[Record], enabled: frozenset[str] | None = None) -> dict[str, float]:
        """The benchmark's flat metrics over `records` (the registered metric functions); `enabled`: the
        metrics to compute, when already decided."""
        return flatten(benchmark_metrics(records, self.declared, self.groups, self.task_order, enabled), self.headline)


def unit_of(record: Record) -> str:
    """The unit a bootstrap resamples: pair group (an image's questions, a question's rotated passes), VRP source,
    or image within its task."""
    if pair_group := record.get("pair_group"):
        return f"pair_group:{pair_group}"
    variant = record.get("variant")  # VRP's part
    if isinstance(variant, Mapping) and variant.get("source"):
        return f"source:{variant['source']}"
    if names_an_image(record.get("image")):
        return f"image:{record['task']}:{record['image']}"
    return f"id:{record['id']}"


def names_an_image(name: str | None) -> bool:
    """Whether a record's `image` tells its image apart: a file name or key, not a placeholder such as
    "<base64>" (`ImageRef.name` of every inline image), which would make a whole task one unit, and
    every resample that task again: an interval of zero width."""
    return name is not None and name != "" and not (name.startswith("<") and name.endswith(">"))


def renamed(record: Record, copy: int) -> Record:
    """The `copy`-th duplicate of a record drawn more than once: its groups made distinct."""
    if copy == 0:
        return record
    suffix = f"#{copy}"
    head, sep, last = record["id"].rpartition("::")
    # the suffix goes before the id's last part, which metrics may read (MMBench's circular pass index)
    out: dict[str, Any] = {**record, "id": f"{head}{suffix}{sep}{last}" if sep else f"{last}{suffix}"}
    if out.get("pair_group"):
        out["pair_group"] = f"{out['pair_group']}{suffix}"
    if isinstance(out.get("variant"), dict) and out["variant"].get("source"):
        out["variant"] = {**out["variant"], "source": f"{out['variant']['source']}{suffix}"}
    return out  # type: ignore[return-value]


def copy_numbers(picks: Any) -> Any:
    """For the unit indices one stratum drew, each pick's copy number: how often that unit was drawn before
    in that resample (a copy numbered c > 0 is scored as `renamed(record, c)`), computed with numpy."""
    import numpy as np

    order = np.argsort(picks, kind="stable")
    ranked = picks[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    ranks = np.arange(len(picks)) - np.repeat(starts, np.diff(np.r_[starts, len(picks)]))
    copies = np.empty_like(ranks)
    copies[order] = ranks
    return copies


class Resampler:
    """Scores resamples with the registered metric functions: one resample is, per stratum, the unit
    indices drawn (`rng.integers(0, units, units)`, with replacement)."""

    def __init__(self, layers: Sequence[Sequence[Sequence[Record]]], setup: MetricSetup) -> None:
        import numpy as np

        self.layers, self.setup = layers, setup
        self.copies: dict[tuple[int, int, int], list[Record]] = {}
        # a metric that switches itself on does so when one record shows it: decided per unit, once
        self.applies = {name: [np.array([test(unit) for unit in units], dtype=bool) for units in layers]
                        for name, test in applies_tests().items()}

    def records(self, picks: Sequence[Any]) -> list[Record]:
        """The resample's records: each drawn unit's, a unit drawn again as its renamed copy."""
        out: list[Record] = []
        for s, chosen in enumerate(picks):
            units = self.layers[s]
            for u, c in zip(chosen.tolist(), copy_numbers(chosen).tolist()):
                if c == 0:
                    out.extend(units[u])
                    continue
                copy = self.copies.get((s, u, c))
                if copy is None:
                    copy = self.copies[(s, u, c)] = [renamed(record, c) for record in units[u]]
                out.extend(copy)
        return out

    def flat(self, picks: Sequence[Any]) -> dict[str, float]:
        """The resample's flat metrics."""
        records = self.records(picks)
        applying = {name for name, flags in self.applies.items() if any(f[p].any() for f, p in zip(flags, picks))}
        return self.setup.flat(records, enabled_metrics(self.setup.declared, records, applying))


def replicates(records: Sequence[Record], setup: MetricSetup, flat: Mapping[str, Any], keys: Sequence[str],
               samples: int, seed: int) -> Any:
    """samples × keys: each key's value on each resample (NaN where a resample lacks it)."""
    return aligned_replicates([records], [flat], setup, keys, samples, seed)[0]


def position_strata(records: Sequence[Record]) -> list[list[list[int]]]:
    """Record positions grouped into units, units grouped by task (the strata a bootstrap resamples within)."""
    by_task: dict[str, dict[str, list[int]]] = {}
    for n, record in enumerate(records):
        by_task.setdefault(record["task"], {}).setdefault(unit_of(record), []).append(n)
    return [list(units.values()) for units in by_task.values()]


def aligned_replicates(sides: Sequence[Sequence[Record]], flats: Sequence[Mapping[str, Any]], setup: MetricSetup,
                       keys: Sequence[str], samples: int, seed: int) -> list[Any]:
    """Per side, samples × keys on the same resamples: the sides' records are aligned position by position
    (one run, or two runs' records of the same samples) and units and strata are the first side's.

    Each side takes the count path (`count_bootstrap`) when it reproduces that side's own numbers
    (`flats`), else every side re-runs the metric functions (`Resampler`); both give the values the
    plain algorithm gives."""
    import numpy as np

    from pytest_mllm.scoring.count_bootstrap import CountReplicates

    positions = position_strata(sides[0])
    sizes = [len(units) for units in positions]
    layers = [[[[side[n] for n in unit] for unit in units] for units in positions] for side in sides]
    rng = np.random.default_rng(seed)
    outs = [np.full((samples, len(keys)), np.nan) for _ in sides]
    if not keys or not positions:  # nothing to estimate, or no records (two runs sharing no sample)
        return outs
    fast: list[Any] = []
    for side, side_layers, flat in zip(sides, layers, flats):
        built = CountReplicates.build(side_layers, enabled_metrics(setup.declared, side), setup.groups,
                                      setup.task_order, setup.headline)
        if built is not None:
            once = built.flat(np.ones((1, built.units)))  # every unit drawn once: the side's own numbers
            if not all(key in once and once[key][0] == flat[key] for key in keys):
                built = None
        fast.append(built)
    if any(built is None for built in fast):
        resamplers = [Resampler(side_layers, setup) for side_layers in layers]
        for b in range(samples):
            picks = [rng.integers(0, n, n) for n in sizes]
            for out, resampler in zip(outs, resamplers):
                again = resampler.flat(picks)
                out[b] = [again.get(key, np.nan) for key in keys]
        return outs
    for start in range(0, samples, CHUNK):
        weights = np.zeros((min(CHUNK, samples - start), sum(sizes)))
        for row in weights:
            offset = 0
            for n in sizes:
                row[offset:offset + n] = np.bincount(rng.integers(0, n, n), minlength=n)
                offset += n
        for out, built in zip(outs, fast):
            found = built.flat(weights)
            for j, key in enumerate(keys):
                if key in found:
                    out[start:start + len(weights), j] = found[key]
    return outs


def wilson(k: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of k successes in n trials: the closed form of
    `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")` (the tests hold them equal), kept
    free of scipy so that a run's terminal summary does not pay for importing scipy.stats."""
    from statistics import NormalDist

    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = k / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def accuracy_count_key(key: str, flat: Mapping[str, Any]) -> str | None:
    """`X.count` for an accuracy key `X.accuracy` whose scope counts its records, else None."""
    if key != "accuracy" and not key.endswith(".accuracy"):
        return None
    count_key = key[: -len("accuracy")] + "count"
    return count_key if isinstance(flat.get(count_key), int) and flat[count_key] > 0 else None


def is_estimate(key: str, value: Any) -> bool:
    """A metric with an uncertainty: numeric, not a count of records."""
    last = key.split(".")[-1]
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and last not in ("count", "errors") and not last.endswith(("_count", "_errors")))


def intervals(records: Sequence[Record], setup: MetricSetup, flat: Mapping[str, Any] | None = None, *,
              keys: Sequence[str] | None = None, samples: int = BOOTSTRAP_SAMPLES, seed: int = SEED,
              level: float = LEVEL) -> dict[str, Interval]:
    """{flat key: {value, se, ci, method}} for every estimate of one benchmark (or those in `keys`);
    the same seed gives the same numbers (numpy imported only when some estimate needs the bootstrap)."""
    flat = dict(flat if flat is not None else setup.flat(records))
    wanted = set(flat) if keys is None else {k for key in keys for k in (key, f"{key}.{setup.headline}")}
    out: dict[str, Interval] = {}
    boot_keys = []
    for key, value in flat.items():
        if key not in wanted or not is_estimate(key, value):
            continue
        count_key = accuracy_count_key(key, flat)
        if count_key:
            n = flat[count_key]
            k = round(value * n)
            low, high = wilson(k, n, level)
            out[key] = {"value": value, "se": (value * (1 - value) / n) ** 0.5, "ci": [low, high], "method": "wilson"}
        elif "." not in key and f"{key}.{setup.headline}" in flat:
            continue  # a scope's headline alias: the interval of `<scope>.<headline>`, filled in below
        else:
            boot_keys.append(key)
    if boot_keys and samples > 0:
        import numpy as np

        values = replicates(records, setup, flat, boot_keys, samples, seed)
        alpha = 1 - level
        for j, key in enumerate(boot_keys):
            column = values[:, j][~np.isnan(values[:, j])]
            if len(column) < 2:
                continue
            low, high = np.quantile(column, [alpha / 2, 1 - alpha / 2])
            out[key] = {"value": flat[key], "se": float(np.std(column, ddof=1)), "ci": [float(low), float(high)],
                        "method": "bootstrap"}
    for key in flat:
        alias = f"{key}.{setup.headline}"
        if "." not in key and key not in out and alias in out and flat[key] == flat[alias]:
            out[key] = out[alias]
    return {key: out[key] for key in flat if key in out and key in wanted}


def half_width(interval: Mapping[str, Any]) -> float:
    """Half the interval's width: the "±" shown next to a score."""
    low, high = interval["ci"]
    width: float = high - low
    return width / 2


def minimum_detectable_effect(n: int, *, p: float = 0.5, discordant: float | None = None,
                              alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest accuracy difference a two-sided test at `alpha` detects with `power` on n samples.

    Unpaired (two independent runs, accuracy near p): z·√(2p(1−p)/n). Paired on the same samples
    (McNemar, a fraction `discordant` of samples answered differently by the two runs): z·√(d/n).
    """
    from scipy.stats import norm

    z = float(norm.ppf(1 - alpha / 2) + norm.ppf(power))
    variance = discordant if discordant is not None else 2 * p * (1 - p)
    root: float = (variance / n) ** 0.5
    return z * root
