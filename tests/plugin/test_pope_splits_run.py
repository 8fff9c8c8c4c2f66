"""POPE end to end on rows naming several splits: per split and the mean of the splits' F1 in
the JSON, the terminal and the gates equal POPE's official evaluate.py (see
tests/unit/test_pope_splits.py and fixtures/pope_splits/README.md for the reference run).
Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pope_splits"
OFFICIAL = json.loads((FIXTURE / "official_scores.json").read_text())


def test_splits_mean_and_pooled_f1_reach_json_terminal_html_and_gates(pytester: pytest.Pytester) -> None:
    out, html = pytester.path / "out.json", pytester.path / "report.html"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=pope", f"--mllm-data={FIXTURE}",
                                f"--mllm=replay:{FIXTURE / 'responses.jsonl'}", "--mllm-cache=off",
                                f"--mllm-json={out}", f"--mllm-html={html}",
                                "--mllm-gate=pope.mean_f1>=0.72", "--mllm-gate=pope.popular.f1>=0.72")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # popular's F1 is 0.714…
    result.stdout.fnmatch_lines(["*overall*30*68.42*76.47*72.22*72.29*63.33*",
                                 "*popular*10*71.43*71.43*71.43*"])
    bench = json.loads(out.read_text())["benchmarks"]["pope"]
    metrics = bench["metrics"]
    assert bench["headline"] == "mean_f1"
    splits = OFFICIAL["splits"]
    assert metrics["mean_f1"] == sum(splits[s]["F1 score"] for s in ("adversarial", "popular", "random")) / 3
    assert metrics["pooled_f1"] == metrics["f1"] == OFFICIAL["pooled"]["F1 score"]
    for split, theirs in splits.items():
        assert metrics[f"{split}.f1"] == theirs["F1 score"] and metrics[f"{split}.count"] == theirs["n"]
    assert [g["verdict"] for g in json.loads(out.read_text())["gates"]] == ["pass", "fail"]
    assert "mean F1 %" in html.read_text()
