"""The generic aggregation and the metric registry: counts, errors, scopes, and a metric added
(registered, declared by a spec, or applying on its own) without touching the generic code."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Sequence

import pytest
from metric_records import rec

from pytest_mllm.engine.spec import SpecError, load_spec
from pytest_mllm.scoring.gates import flatten
from pytest_mllm.scoring.metrics import (METRICS, BenchmarkView, Metric, Scope, ScopeView, benchmark_metrics,
                                         known_metrics, register)
from pytest_mllm.scoring.pope import scope_pope


def test_all_errors_leave_no_accuracy() -> None:
    m = benchmark_metrics([rec("t", None, "yes", "", status="error")], ["accuracy"], {})
    assert m["overall"] == {"count": 0, "errors": 1}
    with pytest.raises(KeyError):
        m["overall"]["accuracy"]


def test_known_metrics_are_the_declarable_registered_names() -> None:
    # among them (a metric added is one module: the architecture test holds the index and the registrations equal)
    assert set(known_metrics()) >= {"accuracy", "accuracy_plus", "mme_score", "pope", "category", "vrp", "judge",
                                  "mean_score", "circular", "mmmu", "category_mean", "ocrbench", "hallusionbench",
                                  "captions", "ocrbench_accuracy", "lime_score", "cider", "ocr_f1", "mathvista",
                                  "llavabench"}
    assert "tp_eval" not in known_metrics()  # registered, but switched on by the records only
    with pytest.raises(ValueError, match="already registered"):
        register(Metric("pope", scope_pope))


# --------------------------------------------------------------------------- a test-local metric


def scope_abstentions(scope: ScopeView) -> Scope:
    """Test metric: answers the parser could not read, in every scope."""
    return {"abstentions": sum(1 for r in scope.scored if not r["parsed"])}


def has_latency(records: Sequence[dict[str, Any]]) -> bool:
    return any(r.get("latency_s") is not None for r in records)


def latency_section(benchmark: BenchmarkView) -> dict[str, Any]:
    """Test section: the slowest answer, and a scope per task kind computed by the generic code."""
    timed = [r for r in benchmark.records if r.get("latency_s") is not None]
    return {"latency": {"max_s": max(r["latency_s"] or 0.0 for r in timed), "timed": benchmark.scope(timed, "timed")}}


@pytest.fixture
def registry() -> Iterator[None]:
    """The built-in registry again after the test, whatever it registered."""
    before = set(METRICS.names())
    yield
    for name in set(METRICS.names()) - before:
        METRICS.remove(name)


def test_a_registered_metric_is_declared_by_a_spec(registry: None, tmp_path: Path) -> None:
    spec_file = tmp_path / "bench.yaml"
    spec_file.write_text("name: bench\nloader: jsonl\nmetrics: [accuracy, abstentions]\n", encoding="utf-8")
    with pytest.raises(SpecError, match="'abstentions' is not one of"):
        load_spec(spec_file)

    register(Metric("abstentions", scope_abstentions))
    spec = load_spec(spec_file)
    records = [rec("a", None, "yes", "yes"), rec("a", None, "no", ""), rec("b", None, "no", ""),
               rec("b", None, "no", "", status="error")]
    m = benchmark_metrics(records, spec.metrics, {"all": ["a", "b"]})
    assert m["tasks"]["a"] == {"count": 2, "errors": 0, "accuracy": 0.5, "abstentions": 1}
    assert m["groups"]["all"]["abstentions"] == m["overall"]["abstentions"] == 2  # errors never enter a metric
    assert flatten(m, "accuracy")["b.abstentions"] == 1
    assert "abstentions" not in benchmark_metrics(records, ["accuracy"], {})["overall"]


def test_a_registered_section_applies_on_its_own(registry: None) -> None:
    register(Metric("latency", latency_section, section=True, applies=has_latency, declarable=False))
    records = [rec("a", None, "yes", "yes"), rec("a", None, "no", "yes")]
    assert list(benchmark_metrics(records, ["accuracy"], {})) == ["overall", "tasks", "groups"]
    records[1]["latency_s"] = 2.5
    m = benchmark_metrics(records, ["accuracy", "category"], {})
    assert list(m) == ["overall", "tasks", "groups", "categories", "l2_categories", "latency"]
    assert m["latency"] == {"max_s": 2.5, "timed": {"count": 1, "errors": 0, "accuracy": 0.0}}
