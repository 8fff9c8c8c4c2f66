"""Gates on an estimate: they decide on the estimate's interval and say so; a regression limit pairs the
subset with the full baseline's records."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_mllm import sections
from pytest_mllm.estimate.comparison import EstimatedComparison
from pytest_mllm.estimate.parts import DRAW, DrawInfo
from pytest_mllm.record import Record, new_record
from pytest_mllm.scoring.gates import Gate, evaluate_gate, evaluate_regressions, parse_gate, parse_max_drop
from pytest_mllm.scoring.uncertainty import MetricSetup

pytest.importorskip("scipy.stats")


def _flat(value: float, low: float, high: float, measured: float = 0.5) -> dict[str, float]:
    part = {"samples_run": 72, "samples": 360,
            "values": {"accuracy": {"value": value, "ci": [low, high], "se": 0.02, "df": 20, "measured": measured}}}
    section = next(s for s in sections.all_sections() if s.name == "estimate")
    return {"accuracy": measured, "count": 72, **section.flat(part)}


@pytest.mark.parametrize(("gate", "verdict", "says"), [
    ("b.accuracy>=0.90", "fail", "wholly beyond the threshold"),
    ("b.accuracy>=0.80", "fail", "straddles 0.8: inconclusive"),
    ("b.accuracy>=0.70", "pass", "wholly within the threshold"),
    ("b.accuracy<=0.75", "fail", "wholly beyond"),
    ("b.accuracy==0.80", "fail", "straddles"),
    ("b.accuracy==0.95", "fail", "wholly beyond"),
])
def test_a_gate_on_an_estimate_passes_only_when_its_whole_interval_passes(gate: str, verdict: str, says: str) -> None:
    found = evaluate_gate(parse_gate(gate), {"b": _flat(0.8, 0.76, 0.84)})
    assert found.verdict == verdict and says in found.note
    assert found.value == 0.8  # the estimate, not the subset's own 0.5
    assert "estimate from 72 of 360 samples" in found.note and "95% interval [0.76, 0.84]" in found.note


def test_a_gate_on_a_full_run_is_untouched() -> None:
    found = evaluate_gate(parse_gate("b.accuracy>=0.6"), {"b": {"accuracy": 0.5, "count": 10}})
    assert (found.verdict, found.note) == ("fail", "")


def test_a_value_a_subset_does_not_estimate_is_the_subset_s_and_never_passes() -> None:
    flat = {**_flat(0.8, 0.76, 0.84), "mean_score": 0.4}
    found = evaluate_gate(parse_gate("b.mean_score>=0.3"), {"b": flat})
    assert found.verdict == "fail" and "the subset's own value, 72 of 360 samples" in found.note
    assert found.withheld.startswith("not passed")  # a subset's own value never passes for the full run's


def test_an_estimate_s_own_keys_may_be_gated_too() -> None:
    found = evaluate_gate(parse_gate("b.estimate.accuracy>=0.9"), {"b": _flat(0.8, 0.76, 0.84)})
    assert found.verdict == "fail" and "interval" in found.note


def _record(i: int, right: bool, draw: bool) -> Record:
    record = new_record(id=f"s{i}", benchmark="b", task="t", answer="yes")
    record.update(status="correct" if right else "incorrect", correct=right, parsed="yes" if right else "no")
    if draw:
        DRAW.put(record, DrawInfo(method="stratified", size="20%", seed=0, panel="sha256:x", stratum="t",
                                  stratum_units=100, stratum_draws=20, strata=1, units=100, samples=100))
    return record


def _limit(head: list[Record], base: list[Record], text: str) -> Any:
    comparison = EstimatedComparison(base, head, MetricSetup(("accuracy",)))
    flat = _flat(sum(r["correct"] for r in head) / len(head), 0.0, 1.0)
    return evaluate_regressions([parse_max_drop(text)], {"b": flat}, {"b": {"accuracy": 0.9}}, {"b": "accuracy"},
                                lambda bench: comparison)[0]


def test_a_regression_limit_on_an_estimate_pairs_the_drawn_samples_with_the_baseline() -> None:
    base = [_record(i, i % 10 != 0, draw=False) for i in range(100)]
    worse = [_record(i, i % 10 != 0 and i % 3 != 1, draw=True) for i in range(20)]  # 6 of the 20 drawn now wrong
    failed = _limit(worse, base, "b.accuracy=0.02")
    assert failed.verdict == "fail" and "paired with the baseline's records" in failed.note
    assert "97.5% confidence" in failed.note  # a plain limit on an estimate: the whole 95 % interval of the drop
    same = [_record(i, i % 10 != 0, draw=True) for i in range(20)]
    assert _limit(same, base, "b.accuracy=0.02").verdict == "pass"
    significant = _limit(worse, base, "b.accuracy=significant")
    assert significant.verdict == "fail" and "two-sided t on" in significant.note


def test_a_regression_limit_needs_the_drawn_samples_in_the_baseline() -> None:
    base = [_record(i, True, draw=False) for i in range(200, 220)]
    found = _limit([_record(i, True, draw=True) for i in range(20)], base, "b.accuracy=0.02")
    assert found.verdict == "fail" and "no paired estimate" in found.note


def test_a_plain_limit_on_a_full_run_is_untouched() -> None:
    found = evaluate_regressions([parse_max_drop("b.accuracy=0.02")], {"b": {"accuracy": 0.85}},
                                 {"b": {"accuracy": 0.9}}, {"b": "accuracy"})[0]
    assert isinstance(found.gate, Gate) and found.verdict == "fail" and found.limit == pytest.approx(0.88)


def test_a_sample_s_draw_is_not_part_of_its_input() -> None:
    """A subset run's records pair with a full run's by input digest: the draw says how the run chose the
    sample, not what the model is asked."""
    import dataclasses

    from pytest_mllm.engine.data_identity import input_digest
    from pytest_mllm.sample import Sample

    sample = Sample(id="s1", benchmark="b", task="t", question="Is it red?", answer="Yes", metadata={"hint": "h"})
    info = DrawInfo(method="stratified", size="20%", seed=0, panel="sha256:x", stratum="t", stratum_units=10,
                    stratum_draws=2, strata=1, units=10, samples=10)
    drawn = dataclasses.replace(sample, metadata={**sample.metadata, DRAW.key: info})
    assert input_digest(drawn) == input_digest(sample)
    assert input_digest(dataclasses.replace(sample, metadata={"hint": "other"})) != input_digest(sample)
