"""A subset run against a full baseline run, for the regression limits: the drawn samples paired with the
baseline's records of the same samples.

The change of a metric is estimated for the whole benchmark by weighting the paired drawn units as the
estimate weights them (`estimator.paired_difference`): since both runs answered the same units, what the
models share cancels, and the interval is far narrower than the estimate's own. A limit `DROP@ALPHA` fails
when the one-sided (1 − ALPHA) lower bound of the drop exceeds DROP (Student's t on the jackknife's degrees
of freedom); `significant` fails on a drop significant at ALPHA by the two-sided t test of the same
difference. Samples are paired by id, as `scoring.significance` pairs a full run with its baseline; its
McNemar test is not used here: it counts a unit's questions (a source's VRP variants, say) as independent,
which the draw of whole units does not allow (on the trained ladder it raised false alarms to 10 % on
vrp_shapes at 20 %).
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
            return False, f"{change}, no interval (no variance group with two units in both runs); {self.about}"
        if significant:
            p = 1.0 if found.se == 0 and found.value == 0 else 0.0 if found.se == 0 else \
                float(2 * t.sf(abs(found.value / found.se), found.df))
            fails = found.value < 0 and p < alpha
            return not fails, (f"{change}, p={p:.3g} (two-sided t on {found.df} degrees of freedom, {found.shared} "
                               f"drawn units); {self.about}")
        bound = -found.value - float(t.ppf(1 - alpha, found.df)) * found.se
        return bound <= max_drop, (f"{change}, drop ≥ {bound:.4g} with {1 - alpha:.1%} confidence (one-sided; "
                                   f"{found.df} degrees of freedom); {self.about}")
