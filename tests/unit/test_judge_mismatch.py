"""A difference between runs graded by different judges is never called a regression: `pytest-mllm-compare` and
the baseline gate leave such a benchmark's limits "not run", saying why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_mllm.judge.graded_section import judge_mismatch
from pytest_mllm.report.compare import compare
from pytest_mllm.scoring.gates import GateSettings, parse_max_drop

GPT = {"kind": "served", "model": "openai:gpt-4-turbo", "url": "https://api.openai.com/v1", "revision": None,
       "server": None, "prompt": "sha256:aa"}
LOCAL = {**GPT, "model": "openai:Qwen2.5-7B-Instruct", "url": "http://127.0.0.1:8000/v1"}


def _scopes(judges: list[dict[str, Any]]) -> dict[str, Any]:
    return {"overall": {}, "graded": {"judges": judges} if judges else {}}


def _document(score: float, judges: list[dict[str, Any]]) -> dict[str, Any]:
    return {"settings": {"model": "m"}, "records": [],
            "benchmarks": {"mmvet": {"headline": "mean_score", "metrics": {"mean_score": score}, "scopes": _scopes(judges)},
                           "shapes": {"headline": "accuracy", "metrics": {"accuracy": score}, "scopes": _scopes([])}}}


def test_runs_graded_by_different_judges_or_prompts_are_not_compared() -> None:
    assert judge_mismatch([GPT], [GPT]) is None and judge_mismatch([], None) is None
    assert "baseline: openai:gpt-4-turbo (sha256:aa); this run: openai:Qwen2.5-7B-Instruct" in str(judge_mismatch([GPT], [LOCAL]))
    assert judge_mismatch([GPT], [{**GPT, "prompt": "sha256:bb"}]) is not None  # reworded: another judge
    assert judge_mismatch([GPT], []) is not None


def test_compare_leaves_a_benchmark_graded_by_another_judge_unjudged() -> None:
    limits = [parse_max_drop("0.01")]
    gates = compare([_document(0.8, [GPT]), _document(0.5, [LOCAL])], ["base", "head"], limits)["gates"]
    verdicts = {g["gate"].split(".")[0]: g for g in gates}
    assert verdicts["mmvet"]["verdict"] == "not run" and "graded by different judges" in verdicts["mmvet"]["note"]
    assert verdicts["shapes"]["verdict"] == "fail"  # no judge on either side: compared as ever
    same = compare([_document(0.8, [GPT]), _document(0.5, [GPT])], ["base", "head"], limits)["gates"]
    assert {g["verdict"] for g in same} == {"fail"}


def test_the_baseline_gate_says_why_it_cannot_judge(tmp_path: Path) -> None:
    baseline = tmp_path / "main.json"
    baseline.write_text(json.dumps(_document(0.8, [GPT])))
    gates = GateSettings(gates=[], max_drops=[parse_max_drop("mmvet.mean_score=0.01")], baseline=baseline)
    [verdict] = gates.verdicts({"mmvet": {"mean_score": 0.5}}, {"mmvet": []}, {"mmvet": "mean_score"},
                               parts={"mmvet": _scopes([LOCAL])})
    assert verdict.verdict == "fail" and verdict.note.startswith("not evaluated: not compared: graded by different judges")
    [same] = gates.verdicts({"mmvet": {"mean_score": 0.5}}, {"mmvet": []}, {"mmvet": "mean_score"},
                            parts={"mmvet": _scopes([GPT])})
    assert same.verdict == "fail" and same.note.startswith("baseline 0.8")
