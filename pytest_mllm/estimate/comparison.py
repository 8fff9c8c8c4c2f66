"""A subset run against a full baseline run, for the regression limits: the drawn samples paired with the
baseline's records of the same samples.

The change of a metric is estimated for the whole benchmark by weighting the paired drawn units as the
estimate weights them (`estimator.paired_difference`): since both runs answered the same units, what the
models share cancels, and the interval is far narrower than the estimate's own. A limit `DROP@ALPHA` fails
when the one-sided (1 − ALPHA) lower bound of the drop exceeds DROP (Student's t on the jackknife's degrees
of freedom); `significant` fails on a significant drop: McNemar's exact test on the drawn questions for an
accuracy (`scoring.significance`, as a full run's limit does; the draw is nearly self-weighting), the
jackknife's t test for any other metric.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_mllm.estimate.estimator import paired_difference
from pytest_mllm.estimate.parts import DRAW
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import MetricSetup


class EstimatedComparison:
    """A subset run (`head`) against a full baseline (`base`), paired on the drawn samples."""

    def __init__(self, base: Sequence[Record], head: Sequence[Record], setup: MetricSetup) -> None:
        self.base, self.head, self.setup = base, [r for r in head if DRAW.get(r) is not None], setup
        info = DRAW.get(self.head[0]) if self.head else None
        self.about = (f"estimate from {len(self.head)} of {info['samples']} samples ({info['method']}), paired with "
                      "the baseline's records" if info else "estimate")

    def drop_test(self, key: str, max_drop: float, alpha: float, significant: bool) -> tuple[bool, str]:
        """(passes, note) of a regression limit on `key` (see the module's docstring)."""
        from scipy.stats import t

        found = paired_difference(self.head, self.base, self.setup, [key]).get(key)
        if found is None:
            return False, f"{key}: no paired estimate (the baseline holds none of the drawn samples, or the metric " \
                          f"is not a ratio of counts); {self.about}"
        change = f"change {found.value:+.4g}"
        if found.se is None:
            return False, f"{change}, no interval (no stratum with two units in both runs); {self.about}"
        if significant:
            p, method = self._p_value(key, found.value, found.se, found.df)
            fails = found.value < 0 and p < alpha
            return not fails, f"{change}, p={p:.3g} ({method}, {found.shared} drawn units); {self.about}"
        bound = -found.value - float(t.ppf(1 - alpha, found.df)) * found.se
        return bound <= max_drop, (f"{change}, drop ≥ {bound:.4g} with {1 - alpha:.1%} confidence (one-sided; "
                                   f"{found.df} degrees of freedom); {self.about}")

    def _p_value(self, key: str, diff: float, se: float, df: int) -> tuple[float, str]:
        from scipy.stats import t

        from pytest_mllm.scoring.significance import PairedComparison

        ids = {r["id"] for r in self.head}
        mcnemar = PairedComparison([r for r in self.base if r["id"] in ids], self.head, self.setup).mcnemar(key)
        if mcnemar is not None:
            return mcnemar["p"], "McNemar on the drawn samples"
        if se == 0:
            return (1.0 if diff == 0 else 0.0), "jackknife t"
        return float(2 * t.sf(abs(diff / se), df)), "jackknife t"
