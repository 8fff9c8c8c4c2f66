"""Gate expressions, thresholds and regression limits."""

from __future__ import annotations

import pytest

from pytest_mllm.scoring.gates import GateSyntaxError, evaluate_gate, evaluate_regressions, flatten, parse_gate, parse_max_drop

METRICS = {"mme": {"score": 1500.0, "perception": 1200.0, "perception.accuracy": 0.8, "existence": 190.0}}


@pytest.mark.parametrize("text", ["mme.perception>=1400", " pope.f1 >= 0.85 ", "mme.existence.score<200",
                                  "shapes.category.shape.accuracy==1", "x.y>-1e-3"])
def test_valid_gates_parse(text: str) -> None:
    gate = parse_gate(text)
    assert gate.text == text.strip() and gate.op in (">=", "<", "==", ">")


@pytest.mark.parametrize("text", ["perception>=1400", "mme.perception=>1400", "mme.perception>=", "mme>=1",
                                  "mme.perception >= high"])
def test_invalid_gates_explain_the_form(text: str) -> None:
    with pytest.raises(GateSyntaxError, match="expected BENCHMARK.METRIC OP NUMBER"):
        parse_gate(text)


def test_gate_verdicts() -> None:
    assert evaluate_gate(parse_gate("mme.perception>=1100"), METRICS).verdict == "pass"
    failed = evaluate_gate(parse_gate("mme.perception>=1400"), METRICS)
    assert (failed.verdict, failed.value, failed.limit) == ("fail", 1200.0, 1400.0)
    assert evaluate_gate(parse_gate("pope.f1>=0.8"), METRICS).verdict == "not run"
    missing = evaluate_gate(parse_gate("mme.precision>=0.8"), METRICS)
    assert missing.verdict == "fail" and "no metric 'precision'" in missing.note
    deselected = evaluate_gate(parse_gate("mme.cognition>=300"), METRICS, {"mme": ["perception", "cognition"]})
    assert deselected.verdict == "not run" and "no sample of 'cognition' ran" in deselected.note


def test_regressions_compare_with_the_baseline() -> None:
    baseline = {"mme": {"score": 1520.0, "perception": 1250.0}}
    limits = [parse_max_drop("mme.perception=40"), parse_max_drop("10")]
    verdicts = evaluate_regressions(limits, METRICS, baseline, {"mme": "score"})
    assert [(v.gate.key, v.verdict) for v in verdicts] == [("perception", "fail"), ("score", "fail")]
    assert verdicts[0].limit == 1210.0
    relaxed = evaluate_regressions([parse_max_drop("mme.perception=50")], METRICS, baseline, {"mme": "score"})
    assert relaxed[0].verdict == "pass"


def test_flatten_names_scopes_by_headline() -> None:
    scopes = {"overall": {"accuracy": 0.5, "score": 300.0}, "groups": {"perception": {"score": 300.0, "accuracy": 0.5}},
              "tasks": {"existence": {"score": 150.0}}, "categories": {"x": {"accuracy": 1.0}}}
    flat = flatten(scopes, "score")
    assert flat["perception"] == 300.0 and flat["existence"] == 150.0
    assert flat["perception.accuracy"] == 0.5 and flat["category.x.accuracy"] == 1.0
