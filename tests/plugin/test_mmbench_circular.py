"""MMBench end to end: CircularEval's numbers in the JSON, the terminal and the gates equal
VLMEvalKit's on the recorded fixture (see tests/unit/test_circular.py and
fixtures/mmbench_circular/README.md for the reference run).
Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmbench_circular"
GOLDEN = json.loads((FIXTURE / "vlmevalkit_scores.json").read_text())["report_acc"]
ARGS = ("-p", "no:cacheprovider", "--mllm-bench=mmbench", f"--mllm-data={FIXTURE}",
        f"--mllm=replay:{FIXTURE / 'responses.jsonl'}", "--mllm-cache=off")


def test_circular_scores_reach_json_terminal_and_gates(pytester: pytest.Pytester) -> None:
    out, html = pytester.path / "out.json", pytester.path / "report.html"
    result = pytester.runpytest_subprocess(*ARGS, f"--mllm-json={out}", f"--mllm-html={html}",
                                           "--mllm-gate=mmbench.circular_accuracy>=0.4",
                                           "--mllm-gate=mmbench.category.object_localization.circular_accuracy>=0.5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the second gate: VLMEvalKit gives it 0.25
    result.stdout.fnmatch_lines(["*circular %*vanilla %*", "*overall*82.09*44.44*66.67*",
                                 "*object_localization*81.25*25.00*75.00*"])
    bench = json.loads(out.read_text())["benchmarks"]["mmbench"]
    assert bench["headline"] == "circular_accuracy"
    metrics = bench["metrics"]
    assert metrics["circular_accuracy"] == GOLDEN["circular"]["Overall"][0]
    assert metrics["vanilla_accuracy"] == GOLDEN["vanilla_0"]["Overall"][0]
    assert metrics["accuracy"] == GOLDEN["vanilla_all"]["Overall"][0]
    for category in ("attribute_recognition", "image_scene", "spatial_relationship", "object_localization"):
        assert metrics[f"category.{category}.circular_accuracy"] == GOLDEN["circular"][category][0]
    assert metrics["l2_category.coarse_perception.circular_accuracy"] == GOLDEN["circular"]["CP"][0]
    gates = {g["gate"]: g["verdict"] for g in json.loads(out.read_text())["gates"]}
    assert sorted(gates.values()) == ["fail", "pass"], gates
    page = html.read_text()
    assert "circular %" in page and "vanilla %" in page
