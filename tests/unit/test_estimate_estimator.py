"""Estimates from a drawn subset: the weighted count metrics, the stratified jackknife, the intervals.

Expected numbers come from the textbook formulas, computed here independently of the estimator: the
stratified mean Σ_h (N_h / N) ȳ_h and its variance Σ_h (N_h / N)² (1 − m_h / N_h) s_h² / m_h (the jackknife
is exact for it), Satterthwaite's degrees of freedom, and Clopper–Pearson's interval from scipy.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_mllm.estimate.estimator import (
    EstimateError,
    Subset,
    estimate,
    interval,
    jackknife,
    paired_difference,
    variance_groups,
)
from pytest_mllm.estimate.parts import DRAW, DrawInfo
from pytest_mllm.record import Record, new_record
from pytest_mllm.scoring.uncertainty import MetricSetup

np = pytest.importorskip("numpy")
stats = pytest.importorskip("scipy.stats")

SETUP = MetricSetup(("accuracy",))


def _info(stratum: str, units: int, draws: int, strata: int = 2) -> DrawInfo:
    return DrawInfo(method="stratified", size="20%", seed=0, panel="sha256:x", stratum=stratum, stratum_units=units,
                    stratum_draws=draws, strata=strata, units=100, samples=100)


def _record(sample_id: str, task: str, right: bool, **fields: Any) -> Record:
    record = new_record(id=sample_id, benchmark="b", task=task, answer="yes", **fields)
    record.update(status="correct" if right else "incorrect", correct=right, parsed="yes" if right else "no")
    return record


def _drawn(values: dict[str, list[int]], population: dict[str, int]) -> list[Record]:
    """One-question units, `values[stratum]` their verdicts, each stratum its own task."""
    records = []
    for stratum, verdicts in values.items():
        for n, right in enumerate(verdicts):
            record = _record(f"{stratum}-{n}", stratum, bool(right))
            DRAW.put(record, _info(stratum, population[stratum], len(verdicts), len(values)))
            records.append(record)
    return records


def test_the_estimate_is_the_stratified_mean_with_its_textbook_variance() -> None:
    values = {"a": [1, 1, 1, 0, 1, 1, 0, 1], "b": [0, 0, 1, 0, 0, 1, 0]}
    population = {"a": 40, "b": 60}
    found = estimate(_drawn(values, population), SETUP)["accuracy"]
    weights = {h: population[h] / 100 for h in values}
    expected = sum(weights[h] * np.mean(v) for h, v in values.items())
    variance = sum(weights[h] ** 2 * (1 - len(v) / population[h]) * np.var(v, ddof=1) / len(v) for h, v in values.items())
    assert found.value == pytest.approx(expected)
    assert found.se == pytest.approx(math.sqrt(variance))
    parts = [weights[h] ** 2 * (1 - len(v) / population[h]) * np.var(v, ddof=1) / len(v) for h, v in values.items()]
    satterthwaite = sum(parts) ** 2 / sum(p * p / (len(v) - 1) for p, v in zip(parts, values.values()))
    assert found.df == math.floor(satterthwaite) and found.df <= 6 + 5
    t = stats.t.ppf(0.975, found.df)
    assert found.low <= expected - t * found.se + 1e-12 and found.high >= expected + t * found.se - 1e-12


def test_the_subset_s_own_value_is_kept_beside_the_weighted_one() -> None:
    values = {"a": [1] * 6, "b": [0] * 6}
    found = estimate(_drawn(values, {"a": 10, "b": 90}), SETUP)
    assert found["accuracy"].value == pytest.approx(0.1)  # 10 of 100 units right, not the subset's 50 %
    assert found["a.accuracy"].value == 1.0 and found["b.accuracy"].value == 0.0


def test_a_census_has_no_uncertainty() -> None:
    values = {"a": [1, 0, 1, 1, 0, 1], "b": [0, 1, 1, 0, 0, 0]}
    found = estimate(_drawn(values, {"a": 6, "b": 6}), SETUP)["accuracy"]
    assert (found.value, found.low, found.high) == (0.5, 0.5, 0.5)


def test_units_that_all_agree_still_get_an_interval() -> None:
    """A variance of 0 (every drawn unit right) would be a zero-width interval; Clopper–Pearson on the units."""
    found = interval(1.0, 0.0, 5, 6, rate=True)
    exact = stats.binomtest(6, 6).proportion_ci(confidence_level=0.95, method="exact")
    assert found.high == 1.0 and found.low == pytest.approx(exact.low)


def test_a_variance_from_few_units_keeps_student_s_t() -> None:
    found = interval(0.5, 0.01, 1, 2, rate=True)  # one degree of freedom: t = 12.7
    assert found.high - found.low >= 2 * 12.7 * 0.01 - 1e-6


def test_bands_join_into_variance_groups_of_six_units_and_small_pools_join() -> None:
    strata = [f"a #{k}" for k in range(1, 9) for _ in range(1)] + ["b #1", "b #2", "c", "c"]
    groups = variance_groups(strata)
    assert groups["a #1"] == groups["a #6"] == "a #1..a #8"  # 8 units: the short last group joins the first
    assert groups["b #1"] == groups["c"]  # pools too small for a group of their own
    assert len(set(groups.values())) == 2


def test_a_group_that_leaves_a_metric_undefined_has_no_variance() -> None:
    column = np.array([0.5, 0.4, np.nan, 0.6])
    assert jackknife(column, ["a", "a", "a"], {"a": 10}) == (None, 0)


def test_records_without_a_draw_are_refused() -> None:
    with pytest.raises(EstimateError, match="not drawn by --mllm-estimate"):
        Subset.of([_record("x", "a", True)])


def test_pairs_stay_whole_and_accuracy_plus_is_weighted_by_units() -> None:
    records = []
    for n, (first, second) in enumerate([(1, 1), (1, 0), (0, 0), (1, 1), (1, 1), (0, 1)]):
        for q, right in (("q1", first), ("q2", second)):
            record = _record(f"img{n}::{q}", "a", bool(right), pair_group=f"a::img{n}")
            DRAW.put(record, _info("a", 30, 6, 1))
            records.append(record)
    found = estimate(records, MetricSetup(("accuracy", "accuracy_plus")))
    assert found["accuracy"].value == pytest.approx(8 / 12) and found["accuracy_plus"].value == pytest.approx(3 / 6)
    pairs = np.array([1.0, 0.5, 0.0, 1.0, 1.0, 0.5])
    assert found["accuracy"].se == pytest.approx(math.sqrt((1 - 6 / 30) * pairs.var(ddof=1) / 6))


def test_the_paired_difference_cancels_what_both_runs_share() -> None:
    values = {"a": [1, 1, 0, 1, 0, 1, 1], "b": [0, 1, 0, 0, 1, 0, 1]}
    head = _drawn(values, {"a": 50, "b": 50})
    same = paired_difference(head, [dict(r) for r in head], SETUP, ["accuracy"])["accuracy"]  # type: ignore[misc]
    assert (same.value, same.se) == (0.0, 0.0)
    base = [dict(r, correct=True, status="correct", parsed="yes") for r in head]
    drop = paired_difference(head, base, SETUP, ["accuracy"])["accuracy"]  # type: ignore[arg-type]
    expected = sum(0.5 * (np.mean(v) - 1) for v in values.values())
    assert drop.value == pytest.approx(expected) and drop.shared == 14


def _pair(head: list[int], base: list[int], population: int) -> tuple[list[Record], list[Record]]:
    """One stratum: the drawn units' verdicts in a subset run (`head`) and in a full baseline (`base`)."""
    drawn = _drawn({"a": head}, {"a": population})
    return drawn, [dict(r, correct=bool(b), status="correct" if b else "incorrect") for r, b in zip(drawn, base)]  # type: ignore[misc]


def test_the_paired_jackknife_is_the_textbook_standard_error_of_the_mean_difference() -> None:
    """Six units of 60 drawn; three right before and wrong now, three unchanged: differences d = (−1, −1, −1, 0,
    0, 0), mean −0.5, s² = 1.5 / 5 = 0.3, se = √((1 − 6/60) · 0.3 / 6) = √0.045, 5 degrees of freedom."""
    head, base = _pair([0, 0, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1], 60)
    found = paired_difference(head, base, SETUP, ["accuracy"])["accuracy"]
    assert found.value == pytest.approx(-0.5) and found.se == pytest.approx(math.sqrt(0.045))
    assert (found.df, found.shared) == (5, 6)


@pytest.mark.parametrize(("limit", "passes", "says"), [
    # one-sided 95 % lower bound of the drop: 0.5 − t_{0.95, 5} · √0.045 = 0.5 − 2.01505 · 0.21213 = 0.07254
    ((0.05, 0.05, False), False, "drop ≥ 0.07254 with 95.0% confidence"),
    ((0.10, 0.05, False), True, "drop ≥ 0.07254 with 95.0% confidence"),
    # two-sided t test: t = 0.5 / 0.2121 = 2.357 on 5 degrees of freedom, p = 0.0650
    ((0.0, 0.05, True), True, "p=0.065 (two-sided t on 5 degrees of freedom, 6 drawn units)"),
    ((0.0, 0.10, True), False, "p=0.065"),
])
def test_the_paired_t_test_of_a_subset_against_its_baseline(limit: tuple[float, float, bool], passes: bool,
                                                            says: str) -> None:
    from pytest_mllm.estimate.comparison import EstimatedComparison

    head, base = _pair([0, 0, 0, 1, 0, 1], [1, 1, 1, 1, 0, 1], 60)
    verdict, note = EstimatedComparison(base, head, SETUP).drop_test("accuracy", *limit)
    assert verdict is passes and says in note and "estimate from 6 of 100 samples" in note
    t = math.sqrt(0.25 / 0.045)
    assert t == pytest.approx(2.357, abs=1e-3) and 2 * stats.t.sf(t, 5) == pytest.approx(0.0650, abs=5e-4)


def test_a_paired_sample_whose_input_changed_is_left_out() -> None:
    head, base = _pair([0, 0, 0, 1, 0, 1, 1], [1, 1, 1, 1, 0, 1, 1], 70)
    for record, other in zip(head, base):
        record["input_digest"] = other["input_digest"] = "same"
    base[0]["input_digest"] = "changed"
    found = paired_difference(head, base, SETUP, ["accuracy"])["accuracy"]
    assert found.shared == 6 and found.value == pytest.approx(-2 / 6)  # the first unit (a −1) is out
