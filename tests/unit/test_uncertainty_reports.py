"""Intervals in the results JSON and the terminal; paired differences and statistical limits in the comparison."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation, EvaluationSettings
from pytest_mllm.report.results import BenchmarkResult, compute_results, results_document
from pytest_mllm.scoring.gates import flatten, parse_max_drop

pytest.importorskip("scipy.stats")


def shapes_run(model: str) -> tuple[BenchmarkResult, dict[str, Any]]:
    evaluation = Evaluation(EvaluationSettings(model=model, cache_mode="off"))
    spec = evaluation.spec(find_spec("shapes"))
    records = evaluation.answer([(s, spec) for s in evaluation.samples_for(spec)])
    for order, record in enumerate(records):
        record["order"] = order
    result = compute_results({spec.name: spec}, records)["shapes"]
    return result, results_document({"shapes": result}, [], {"model": model})


@pytest.fixture(scope="module")
def runs() -> list[tuple[BenchmarkResult, dict[str, Any]]]:
    return [shapes_run("baseline:random:1"), shapes_run("baseline:random:2")]


def test_the_document_keeps_its_keys_and_adds_intervals(runs: list[tuple[BenchmarkResult, dict[str, Any]]]) -> None:
    result, document = runs[0]
    bench = json.loads(json.dumps(document))["benchmarks"]["shapes"]
    assert bench["metrics"] == result.metrics == flatten(result.scopes, "accuracy")
    assert bench["scopes"] == json.loads(json.dumps(result.scopes))
    intervals = bench["intervals"]
    assert set(intervals) <= set(bench["metrics"])
    for key in ("accuracy", "perception", "existence.accuracy", "category.shape.accuracy"):
        assert intervals[key]["method"] == "wilson"
    for key in ("accuracy_plus", "score", "perception.score", "f1"):
        low, high = intervals[key]["ci"]
        assert intervals[key]["method"] == "bootstrap" and low <= bench["metrics"][key] <= high
    assert bench["setup"]["metrics"] == ["accuracy", "accuracy_plus", "mme_score", "pope", "category"]
    assert bench["intervals_method"]["level"] == 0.95


def test_the_terminal_shows_the_headline_interval(runs: list[tuple[BenchmarkResult, dict[str, Any]]]) -> None:
    from pytest_mllm.report.terminal import benchmark_tables, render

    text = render(benchmark_tables(runs[0][0]), 120, False)
    assert "acc ±95%" in text and "±5." in text


def test_without_scipy_the_run_works_and_says_how_to_get_intervals(
        runs: list[tuple[BenchmarkResult, dict[str, Any]]], monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_mllm.report.terminal import benchmark_tables, render
    from pytest_mllm.scoring import uncertainty

    monkeypatch.setattr(uncertainty, "stats_missing", lambda: uncertainty.STATS_HINT)
    result = BenchmarkResult(runs[0][0].spec, runs[0][0].records, runs[0][0].scopes, runs[0][0].metrics)
    bench = results_document({"shapes": result}, [], {})["benchmarks"]["shapes"]
    assert "intervals" not in bench and "pytest-mllm[stats]" in bench["intervals_note"]
    assert "pip install 'pytest-mllm[stats]'" in render(benchmark_tables(result), 120, False)


def test_compare_pairs_the_runs_and_decides_statistical_limits(
        runs: list[tuple[BenchmarkResult, dict[str, Any]]], tmp_path: Path) -> None:
    from pytest_mllm.report.compare import compare, paired_rows, write_compare_html

    documents = [json.loads(json.dumps(doc)) for _, doc in runs]
    documents[1]["records"] = documents[1]["records"][:-10]  # ten samples ran in the base only
    limits = [parse_max_drop(t) for t in ("shapes.accuracy=significant", "shapes.score=100@0.05", "shapes.accuracy=0")]
    comparison = compare(documents, ["a", "b"], limits)
    paired = comparison["benchmarks"]["shapes"]["paired"]["b"]
    assert paired["shared"] == 350 and len(paired["only_base"]) == 10 and paired["only_head"] == []
    accuracy = paired["metrics"]["accuracy"]
    assert accuracy["method"] == "mcnemar" and 0 <= accuracy["p"] <= 1 and accuracy["ci"][0] <= accuracy["diff"]
    assert paired["metrics"]["score"]["method"] == "bootstrap"
    verdicts = {g["gate"]: g for g in comparison["gates"]}
    assert verdicts["shapes.accuracy drop significant@0.05"]["verdict"] == "pass"  # two random runs: noise
    assert verdicts["shapes.score drop<=100@0.05"]["verdict"] == "pass"
    assert "350 shared samples, 10 only in baseline" in verdicts["shapes.accuracy drop significant@0.05"]["note"]
    assert comparison["benchmarks"]["shapes"]["intervals"][0]["accuracy"]["method"] == "wilson"
    rows = paired_rows(comparison)
    assert rows[0]["metric"] == "shapes.accuracy" and "left out: 10 only in base" in rows[0]["note"]
    write_compare_html(comparison, tmp_path / "c.html")
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    assert "Paired differences" in page and "mcnemar" in page
    assert '<span class="muted"> ±5.' in page  # each run's accuracy with its interval


def test_compare_without_records_says_why(runs: list[tuple[BenchmarkResult, dict[str, Any]]]) -> None:
    from pytest_mllm.report.compare import compare

    documents = [dict(json.loads(json.dumps(doc)), records=[]) for _, doc in runs]
    comparison = compare(documents, ["a", "b"], [parse_max_drop("shapes.accuracy=significant")])
    assert "no per-sample records" in comparison["benchmarks"]["shapes"]["paired"]["b"]["note"]
    assert comparison["gates"][0]["verdict"] == "fail" and "no per-sample records" in comparison["gates"][0]["note"]
