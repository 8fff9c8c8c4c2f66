"""One unit rule in every table: rates in % in score tables (said in headers), gates in the gate's unit, MME in points."""

from __future__ import annotations

import pytest

from pytest_mllm.report.compare import unit_label
from pytest_mllm.report.terminal import _gate_note, gate_number, header
from pytest_mllm.scoring.gates import Gate, Verdict
from pytest_mllm.sections import columns


def test_every_score_header_names_its_unit() -> None:
    for column in ["accuracy", *(c.key for c in columns() if c.unit != "number")]:
        assert header(column).endswith((" %", " pts")), (column, header(column))
    assert header("score") == "score pts"


@pytest.mark.parametrize(("value", "text"), [(0.5, "0.50"), (0.875, "0.875"), (0.49722, "0.4972"), (1.0, "1.00"),
                                             (491.6667, "491.6667"), (None, "–")])
def test_gate_values_are_shown_as_the_gate_is_written(value: float | None, text: str) -> None:
    assert gate_number(value) == text


def test_a_rate_gate_written_in_percent_gets_a_hint() -> None:
    percent = Verdict(Gate("mme.accuracy>=60", "mme", "accuracy", ">=", 60.0), 0.57, 60.0, "fail")
    assert "fraction 0–1: 60 % is 0.6" in _gate_note(percent)
    points = Verdict(Gate("mme.perception>=1400", "mme", "perception", ">=", 1400.0), 491.7, 1400.0, "fail")
    assert _gate_note(points) == ""
    drop = Verdict(Gate("shapes.accuracy drop<=2", "shapes", "accuracy", max_drop=2.0), 0.5, -1.5, "pass", "baseline 0.5")
    assert _gate_note(drop).startswith("baseline 0.5; ") and "2 pp is 0.02" in _gate_note(drop)


@pytest.mark.parametrize(("key", "value", "headline", "unit"), [
    ("accuracy", 0.5, "accuracy", "%"), ("perception", 0.5, "accuracy", "%"), ("score", 541.7, "score", "points"),
    ("perception", 491.7, "score", "points"), ("count", 28, "score", "count"), ("existence.count", 6, "accuracy", "count"),
])
def test_compared_metrics_name_their_unit(key: str, value: object, headline: str, unit: str) -> None:
    assert unit_label(key, [None, value], headline) == unit
