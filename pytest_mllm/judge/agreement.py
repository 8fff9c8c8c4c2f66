"""Agreement between two raters of correct/incorrect (e.g. a judge and human labels).

Both take paired labels of the same samples; leave out samples a rater could not score
(a judge error) before calling.
"""

from __future__ import annotations

import math
from typing import Sequence


def _pairs(a: Sequence[bool], b: Sequence[bool]) -> list[tuple[bool, bool]]:
    if len(a) != len(b):
        raise ValueError(f"the two label lists differ in length: {len(a)} and {len(b)}")
    if not a:
        raise ValueError("agreement needs at least one labelled sample")
    return list(zip(a, b))


def agreement(a: Sequence[bool], b: Sequence[bool]) -> float:
    """The fraction of samples on which the two raters give the same label."""
    pairs = _pairs(a, b)
    return sum(x == y for x, y in pairs) / len(pairs)


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Cohen's kappa: agreement corrected for chance, (p_o - p_e) / (1 - p_e).

    NaN when chance agreement is 1 (both raters gave one and the same label to every
    sample), where kappa is undefined; scikit-learn also gives NaN there.
    """
    pairs = _pairs(a, b)
    n = len(pairs)
    observed = sum(x == y for x, y in pairs) / n
    a_true, b_true = sum(x for x, _ in pairs) / n, sum(y for _, y in pairs) / n
    expected = a_true * b_true + (1 - a_true) * (1 - b_true)
    if expected == 1:
        return math.nan
    return (observed - expected) / (1 - expected)
