"""LIME-M's per-subtask metrics end to end: fixtures/lime (one task per reference-scored parser)
replayed from recorded answers built to hit known scores, checked in the --mllm-json document:
each record's score and verdict, and accuracy next to mean_score per task, group and overall."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

LIME = Path(__file__).resolve().parents[2] / "fixtures" / "lime"

CAPTION_K2 = (6 / 35) ** 0.25  # one word changed in seven: n-gram precisions 6/7, 4/6, 3/5, 2/4
CAPTION_K4 = (3 / 3640) ** 0.25  # one shared 4-gram in sixteen words: 6/16, 3/15, 2/14, 1/13
# pycocoevalcap's BLEU adds 1e-15 to matches and 1e-9 to candidates: 1.0 is 1 - 3e-10, 0 a few 1e-8
CAPTION = {"rel": 1e-9, "abs": 1e-6}

# record id → (parsed answer, score, correct)
EXPECTED = {
    "docvqa::d1": ("inv-0042", 1.0, True),
    "docvqa::d2": ("Jane Smyth", 0.9, False),
    "docvqa::d3": ("$19.99", 0.5, False),  # the ANLS threshold: kept, but not an exact match
    "docvqa::d4": ("unknown", 0.0, False),
    "chartqa::c1": ("105", 1.0, True),  # exactly 5 % off
    "chartqa::c2": ("105.01", 0.0, False),
    "chartqa::c3": ("50%", 1.0, True),
    "chartqa::c4": ("blue\nThe bars are blue.", 0.0, False),  # the whole response, as LIME's chartqa_suit reads it
    "caption::k1": ("A red square on a white background.", 1.0, True),
    "caption::k2": ("a red square on a white background", CAPTION_K2, True),
    "caption::k3": ("a picture", 0.0, False),
    "caption::k4": ("a green circle in a field of tall grass under a dark and cloudy night sky", CAPTION_K4, False),
    "textvqa::t1": ("Two", 1.0, True),  # 4 of 10 humans
    "textvqa::t2": ("stop.", 0.9, True),  # 3 of 10
    "textvqa::t3": ("The Exit", 0.6, True),  # 2 of 10: the threshold
    "textvqa::t4": ("cat!", 0.3, False),  # 1 of 10
}


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", str(LIME / "bench.yaml"),
                                           f"--mllm=replay:{LIME / 'predictions.jsonl'}", f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


def _exact(value: float, fraction: Fraction) -> bool:
    return Fraction(value).limit_denominator(1000) == fraction


@pytest.mark.parametrize("workers", ["0", "2"])
def test_per_task_mean_score_and_accuracy(pytester: pytest.Pytester, workers: str) -> None:
    result, data = _run(pytester, "-n", workers, "--mllm-gate=lime_mini.textvqa.mean_score>=0.7")
    assert result.ret == pytest.ExitCode.OK  # incorrect answers are reported, not failures
    result.stdout.fnmatch_lines(["*mean score %*", "*docvqa*4*0*25.00*60.00*", "*textvqa.mean_score>=0.7*pass*",
                                 "*docvqa::d2*Jane Smyth*(score 0.900)*"])
    records = {r["id"]: r for r in data["records"]}
    assert set(records) == set(EXPECTED)
    for rid, (parsed, score, correct) in EXPECTED.items():
        record = records[rid]
        assert record["parsed"] == parsed and record["correct"] is correct, rid
        assert record["score"] == pytest.approx(score, **CAPTION if rid.startswith("caption") else {"rel": 1e-12}), rid
        assert record["status"] == ("correct" if correct else "incorrect")

    scopes = data["benchmarks"]["lime_mini"]["scopes"]
    tasks = scopes["tasks"]
    assert list(tasks) == ["docvqa", "chartqa", "caption", "textvqa"]
    assert tasks["docvqa"] == {"count": 4, "errors": 0, "accuracy": 0.25, "mean_score": 0.6}
    assert tasks["chartqa"] == {"count": 4, "errors": 0, "accuracy": 0.5, "mean_score": 0.5}
    assert tasks["textvqa"]["accuracy"] == 0.75 and _exact(tasks["textvqa"]["mean_score"], Fraction(7, 10))
    assert tasks["caption"]["accuracy"] == 0.5
    assert tasks["caption"]["mean_score"] == pytest.approx((1 + CAPTION_K2 + 0 + CAPTION_K4) / 4, **CAPTION)

    reading = scopes["groups"]["reading"]  # docvqa, chartqa, textvqa: 12 samples, weighted by sample
    assert reading["count"] == 12 and _exact(reading["accuracy"], Fraction(6, 12))
    assert _exact(reading["mean_score"], Fraction(36, 60))  # (2.4 + 2 + 2.8) / 12
    overall = scopes["overall"]
    assert overall["count"] == 16 and overall["errors"] == 0 and overall["accuracy"] == 8 / 16
    assert overall["mean_score"] == pytest.approx((7.2 + 1 + CAPTION_K2 + CAPTION_K4) / 16, **CAPTION)

    metrics = data["benchmarks"]["lime_mini"]["metrics"]  # the headline is mean_score
    assert data["benchmarks"]["lime_mini"]["headline"] == "mean_score"
    assert metrics["docvqa"] == 0.6 and metrics["chartqa.accuracy"] == 0.5 and metrics["mean_score"] == overall[
        "mean_score"]
