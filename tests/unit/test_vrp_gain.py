"""VRPTEST §3.3: how much a visual referring prompting strategy moves accuracy, relative to no intervention."""

from __future__ import annotations

import pytest
from metric_records import vrp_rec

from pytest_mllm.scoring.metrics import benchmark_metrics


def test_gain_is_accuracy_minus_no_intervention_accuracy() -> None:
    records = [
        vrp_rec("s1", "none", "none", "yes"), vrp_rec("s1", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s1", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
        vrp_rec("s2", "none", "none", "no"), vrp_rec("s2", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s2", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
    ]
    m = benchmark_metrics(records, ["accuracy", "vrp"], {})["vrp"]
    base = m["levels"]["none"]["accuracy"]
    assert m["gain"]["levels"] == {"partial": pytest.approx(m["levels"]["partial"]["accuracy"] - base),
                                   "full": pytest.approx(m["levels"]["full"]["accuracy"] - base)}
    assert m["gain"]["axes"]["C_Red"] == pytest.approx(m["axes"]["C_Red"]["accuracy"] - base)
    assert "Base" not in m["gain"]["axes"]


def test_no_gain_without_un_intervened_answers() -> None:
    records = [vrp_rec("s1", "partial-red-box", "partial", "yes", color="red", shape="box")]
    assert benchmark_metrics(records, ["accuracy", "vrp"], {})["vrp"]["gain"] is None
