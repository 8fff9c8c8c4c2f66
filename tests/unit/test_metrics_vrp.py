"""VRPTEST's metrics (vrp/metrics.py): levels, radar axes, consistency and sensitivity."""

from __future__ import annotations

from metric_records import vrp_rec

from pytest_mllm.scoring.metrics import benchmark_metrics


def test_vrp_levels_axes_consistency_and_sensitivity() -> None:
    records = [
        vrp_rec("s1", "none", "none", "yes"), vrp_rec("s1", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s1", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
        vrp_rec("s2", "none", "none", "no"), vrp_rec("s2", "partial-red-box", "partial", "yes", color="red", shape="box"),
        vrp_rec("s2", "full-red-box", "full", "no", color="red", shape="box", font="arial", position="upper"),
    ]
    m = benchmark_metrics(records, ["accuracy", "vrp"], {})["vrp"]
    assert m["levels"]["none"]["accuracy"] == 0.5 and m["levels"]["partial"]["accuracy"] == 1.0
    assert m["levels"]["full"]["accuracy"] == 0.0
    assert m["axes"]["C_Red"] == {"count": 4, "accuracy": 0.5} and m["axes"]["Base"]["count"] == 2
    assert "C_Blue" not in m["axes"]
    assert m["consistency"] == 0.5  # s1 partial = yes = base; s1 full ≠; s2 partial ≠; s2 full = base
    assert m["relation_holds"] == 0.25  # correct and equal to the un-intervened answer: s1 partial only
    assert m["sensitivity"] == 1.0
