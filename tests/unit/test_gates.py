"""Gate expressions, thresholds and regression limits."""

from __future__ import annotations

import pytest

from pathlib import Path

from pytest_mllm.scoring.gates import (
    GateSyntaxError,
    MetricSpace,
    evaluate_gate,
    evaluate_regressions,
    flatten,
    gate_path_problems,
    parse_gate,
    parse_max_drop,
)

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


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("bench, model, data", [
    ("shapes", "baseline:yes", None),
    ("pope", f"replay:{FIXTURES / 'pope_splits' / 'responses.jsonl'}", FIXTURES / "pope_splits"),
    ("mmbench", "baseline:random", FIXTURES / "mmbench_circular"),
])
def test_every_key_a_run_reports_is_known_before_it_runs(bench: str, model: str, data: Path | None) -> None:
    """The metric space a gate is checked against before the run holds every flat key the run reports."""
    from pytest_mllm.engine.spec import find_spec
    from pytest_mllm.evaluation import Evaluation, EvaluationSettings
    from pytest_mllm.sample import Sample

    evaluation = Evaluation(EvaluationSettings(model=model, cache_mode="off", data={"": str(data)} if data else {}))
    spec = evaluation.spec(find_spec(bench))
    samples = [s for s in evaluation.samples_for(spec) if isinstance(s, Sample)]
    records = evaluation.answer([(s, spec) for s in samples])
    for order, record in enumerate(records):
        record["order"] = order  # the harness numbers records in collection order
    evaluation.gather(records)
    reported = evaluation.results()[spec.name].metrics
    space = MetricSpace.of(spec.metrics, {*spec.task_order, *spec.groups, *(s.task for s in samples)})
    assert [key for key in reported if space.problem(key)] == []
    assert len(reported) > 10


def test_a_misspelled_path_is_told_the_closest_names() -> None:
    space = MetricSpace.of(["accuracy", "accuracy_plus", "mme_score", "category"], {"existence", "perception"})
    assert space.problem("perception.score") is None and space.problem("category.anything.accuracy") is None
    assert space.problem("existance") == ("no metric 'existance'; did you mean 'existence' or 'existence.score' or "
                                          "'existence.count'?")
    assert "did you mean 'category.x.accuracy_plus'" in space.problem("category.x.accuracy_pls")
    assert space.problem("vrp.level.partial.accuracy") is None and space.problem("judge.cee_accuracy") is None
    problems = gate_path_problems([parse_gate("mme.existance>=0.5"), parse_gate("pope.f1>=0.5")], {"mme": space})
    assert problems == ["gate 'mme.existance>=0.5': benchmark 'mme' has no metric 'existance'; did you mean "
                        "'existence' or 'existence.score' or 'existence.count'?"]
