"""Two runs compared on the same samples: per metric the difference, its interval and a p-value.

Records are matched by benchmark and sample id; samples present in one run only are reported and
left out. Accuracies get McNemar's exact test (`scipy.stats.binomtest` on the discordant pairs);
every metric gets a paired bootstrap over shared units (the same resampled units scored in both
runs, stratified by task, see `uncertainty`), which gives the difference's interval, a p-value for
the metrics McNemar does not cover, and the one-sided bounds the regression gates use
(`--mllm-max-drop=mme.perception=20@0.05`). The bootstrap runs only when something asks for it, on
the intervals' paths (`uncertainty.aligned_replicates`: the count path where it applies, 1000 resamples
of 10,000 records in a fraction of a second; `scripts/paired_bootstrap_speed.py`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Mapping, Sequence

from pytest_mllm.sections import paired as section_paired
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import (
    BOOTSTRAP_SAMPLES,
    LEVEL,
    SEED,
    MetricSetup,
    accuracy_count_key,
    aligned_replicates,
    is_estimate,
)


class PairedComparison:
    """`head` against `base` on the samples both ran, for one benchmark."""

    def __init__(self, base: Sequence[Record], head: Sequence[Record], setup: MetricSetup, *,
                 samples: int = BOOTSTRAP_SAMPLES, seed: int = SEED, level: float = LEVEL) -> None:
        from pytest_mllm.record import same_input

        before = {r["id"]: r for r in base}
        after = {r["id"]: r for r in head}
        self.setup, self.samples, self.seed, self.level = setup, samples, seed, level
        self.only_base = [i for i in before if i not in after]
        self.only_head = [i for i in after if i not in before]
        both = [i for i in before if i in after]
        shared = [i for i in both if same_input(before[i], after[i])]  # the same sample, the same inputs
        self.changed_inputs = [i for i in both if not same_input(before[i], after[i])]
        self.base = [before[i] for i in shared]
        self.head = [after[i] for i in shared]
        self.shared = len(shared)
        self.before = setup.flat(self.base) if shared else {}
        self.after = setup.flat(self.head) if shared else {}
        self.keys = [k for k in self.after if k in self.before and is_estimate(k, self.after[k])
                     and is_estimate(k, self.before[k])]

    # -- McNemar for accuracies ---------------------------------------------------------------

    def _members(self, key: str) -> Any:
        """A predicate on records for the scope an accuracy key measures, or None if unknown."""
        setup = self.setup
        if "." not in key and f"{key}.{setup.headline}" in self.after and setup.headline == "accuracy":
            key = f"{key}.accuracy"
        if accuracy_count_key(key, self.after) is None:
            return None
        parts = key.split(".")
        if parts == ["accuracy"]:
            return lambda r: True
        if len(parts) == 2:
            scope = parts[0]
            if scope in setup.groups:
                members = set(setup.groups[scope])
                return lambda r: r["task"] in members
            return lambda r: r["task"] == scope
        if len(parts) == 3 and parts[0] in ("category", "l2_category"):
            field, name = parts[0], parts[1]
            return lambda r: r.get(field) == name
        return None

    def mcnemar(self, key: str) -> dict[str, Any] | None:
        """{b, c, p}: b right before and wrong now, c the other way; None for a key that is not an accuracy."""
        member = self._members(key)
        if member is None:
            return None
        from scipy.stats import binomtest

        b = c = 0
        for old, new in zip(self.base, self.head):
            if old["status"] == "error" or new["status"] == "error" or not member(old):
                continue
            b += bool(old["correct"]) and not new["correct"]
            c += (not old["correct"]) and bool(new["correct"])
        p = 1.0 if b + c == 0 else float(binomtest(c, b + c, 0.5).pvalue)
        return {"b": b, "c": c, "p": p}

    # -- the paired bootstrap ------------------------------------------------------------------

    @cached_property
    def replicates(self) -> dict[str, Any]:
        """{key: array of head − base over resamples of the shared units} (computed once, seeded)."""
        import numpy as np

        base, head = aligned_replicates([self.base, self.head], [self.before, self.after], self.setup, self.keys,
                                        self.samples, self.seed)
        diffs = head - base
        return {k: diffs[:, j][~np.isnan(diffs[:, j])] for j, k in enumerate(self.keys)}

    def diff(self, key: str) -> float:
        return float(self.after[key] - self.before[key])

    def interval(self, key: str, level: float | None = None) -> tuple[float, float] | None:
        """The two-sided percentile interval of head − base."""
        import numpy as np

        column = self.replicates.get(key)
        if column is None or len(column) < 2:
            return None
        alpha = 1 - (level or self.level)
        low, high = np.quantile(column, [alpha / 2, 1 - alpha / 2])
        return float(low), float(high)

    def drop_lower_bound(self, key: str, alpha: float) -> float | None:
        """The one-sided (1 − alpha) lower confidence bound of the drop, base − head."""
        import numpy as np

        column = self.replicates.get(key)
        if column is None or len(column) < 2:
            return None
        return float(-np.quantile(column, 1 - alpha))

    def p_value(self, key: str) -> tuple[float | None, str]:
        """The two-sided p-value of "no change" and its method: McNemar for accuracies, else the bootstrap."""
        test = self.mcnemar(key)
        if test is not None:
            return test["p"], "mcnemar"
        column = self.replicates.get(key)
        if column is None or len(column) < 2:
            return None, "none"
        if not column.any() and self.diff(key) == 0:
            return 1.0, "bootstrap"
        p = 2 * min(float((column <= 0).mean()), float((column >= 0).mean()))
        return min(1.0, p), "bootstrap"

    def metric(self, key: str) -> dict[str, Any]:
        """{before, after, diff, ci, p, method} on the shared samples."""
        p, method = self.p_value(key)
        ci = self.interval(key)
        return {"before": self.before[key], "after": self.after[key], "diff": self.diff(key),
                "ci": list(ci) if ci else None, "p": p, "method": method}

    def drop_test(self, key: str, max_drop: float, alpha: float, significant: bool) -> tuple[bool, str]:
        """A statistical regression limit: (passes, note). `significant`: fails when the drop is
        significant at `alpha` (two-sided); else fails when the one-sided (1 − alpha) lower bound
        of the drop exceeds `max_drop`."""
        if key not in self.keys:
            return False, f"{key} missing in the paired comparison ({self.shared} shared samples)"
        diff = self.diff(key)
        shared = f"{self.shared} shared samples" + (
            f", {len(self.only_base)} only in baseline, {len(self.only_head)} only in this run"
            if self.only_base or self.only_head else "") + (
            f", {len(self.changed_inputs)} left out: their inputs changed" if self.changed_inputs else "")
        if significant:
            p, method = self.p_value(key)
            if p is None:
                return False, f"no p-value for {key} ({shared})"
            fails = diff < 0 and p < alpha
            return not fails, f"change {diff:+.4g}, p={p:.3g} ({method}, {shared})"
        bound = self.drop_lower_bound(key, alpha)
        if bound is None:
            return False, f"no bootstrap for {key} ({shared})"
        return bound <= max_drop, (f"change {diff:+.4g}, drop ≥ {bound:.4g} with {1 - alpha:.0%} confidence "
                                   f"(paired bootstrap, {shared})")

    def summary(self, keys: Sequence[str] | None = None) -> dict[str, Any]:
        """The JSON-ready comparison: shared and one-sided samples, and every (or the given) metric."""
        return {"shared": self.shared, "only_base": self.only_base, "only_head": self.only_head,
                "changed_inputs": self.changed_inputs,
                "level": self.level, "samples": self.samples, "seed": self.seed,
                "metrics": {k: self.metric(k) for k in (keys if keys is not None else self.keys) if k in self.keys}}


class BaselinePairing:
    """Paired comparisons against a baseline document, per benchmark, built on first request.

    `current` maps a benchmark to (records, setup) of this run. Calling it with a benchmark
    name returns its `PairedComparison`, or a string saying why there is none.
    """

    def __init__(self, baseline: Mapping[str, Any] | None, current: Mapping[str, tuple[Sequence[Record], MetricSetup]],
                 problem: str | None = None) -> None:
        self.baseline, self.current, self.problem = baseline, current, problem
        self._done: dict[str, PairedComparison | str] = {}

    @classmethod
    def from_path(cls, path: Any, current: Mapping[str, tuple[Sequence[Record], MetricSetup]]) -> BaselinePairing:
        """Against a `--mllm-json` file (read again here: the regression gate's reader keeps metrics only)."""
        import json

        try:
            document = json.loads(open(path, encoding="utf-8").read())
            if not isinstance(document, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            return cls(None, current, f"cannot read baseline {path}: {exc}")
        return cls(document, current)

    def __call__(self, bench: str) -> PairedComparison | str:
        if bench not in self._done:
            self._done[bench] = self._compare(bench)
        return self._done[bench]

    def _compare(self, bench: str) -> PairedComparison | str:
        from pytest_mllm.scoring.uncertainty import stats_missing

        missing = self.problem or stats_missing()
        if missing:
            return missing
        if bench not in self.current:
            return f"benchmark {bench!r} did not run"
        base = [r for r in (self.baseline or {}).get("records") or () if r.get("benchmark") == bench]
        if not base:
            return (f"the baseline has no per-sample records of {bench!r}: a statistical limit needs a "
                    "--mllm-json file of the baseline run")
        records, setup = self.current[bench]
        if not records:
            return f"this run has no per-sample records of {bench!r} (a statistical limit compares samples)"
        own = section_paired(base, records, setup)
        if own is not None:
            return own  # type: ignore[no-any-return]
        comparison = PairedComparison(base, records, setup)
        if not comparison.shared:
            return f"no sample of {bench!r} is in both runs (matched by id)"
        return comparison
