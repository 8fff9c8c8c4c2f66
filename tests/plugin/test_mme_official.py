"""MME numbers equal the official calculation script's to the last digit, and our export of
MME's results format is what that script reads (it gives our numbers back)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[2] / "fixtures" / "mme_results"
MME_ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "mme" / "MME_Benchmark_release_version"


def _run(pytester: pytest.Pytester, *args: str) -> dict:
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm-json={out}", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return json.loads(out.read_text())


def test_scores_equal_the_official_script_to_the_last_digit(pytester: pytest.Pytester) -> None:
    golden = json.loads((RESULTS / "official_scores.json").read_text())
    data = _run(pytester, "--mllm-bench=mme_results", f"--mllm-data={RESULTS}", f"--mllm=replay:{RESULTS}")
    metrics = data["benchmarks"]["mme"]["metrics"]
    for group in ("perception", "cognition"):
        assert metrics[group] == golden[group]["total"]  # exact float equality, no rounding
        for task, score in golden[group]["tasks"].items():
            assert metrics[f"{task}.score"] == score, task
            assert metrics[f"{task}.accuracy"] == golden["acc"][task], task
            assert metrics[f"{task}.accuracy_plus"] == golden["acc_plus"][task], task


def test_exported_results_reproduce_the_input_files(pytester: pytest.Pytester) -> None:
    out_dir = pytester.path / "mme_out"
    _run(pytester, "--mllm-bench=mme_results", f"--mllm-data={RESULTS}", f"--mllm=replay:{RESULTS}",
         f"--mllm-mme-results={out_dir}")
    for source in sorted(RESULTS.glob("*.txt")):
        assert (out_dir / source.name).read_text().splitlines() == source.read_text().splitlines(), source.name


def test_export_then_rescore_gives_the_same_numbers(pytester: pytest.Pytester) -> None:
    out_dir = pytester.path / "exported"
    first = _run(pytester, "--mllm-bench=mme", f"--mllm-data={MME_ROOT}", "--mllm=baseline:random:7",
                 f"--mllm-mme-results={out_dir}")
    second = _run(pytester, "--mllm-bench=mme_results", f"--mllm-data={out_dir}", f"--mllm=replay:{out_dir}")
    assert first["benchmarks"]["mme"]["metrics"] == second["benchmarks"]["mme"]["metrics"]
    lines = (out_dir / "existence.txt").read_text().splitlines()
    assert len(lines) == 6 and all(len(line.split("\t")) == 4 for line in lines)


def test_mme_release_folder_runs_with_ids_per_image_question(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm-bench=mme", f"--mllm-data={MME_ROOT}",
                                "--mllm=baseline:yes", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["mme::existence::000000006040.jpg::q1", "mme::artwork::*.jpg::q2",
                                 "mme::code_reasoning::*.png::q1", "*28 tests collected*"])


def test_replay_with_missing_answers_errors_only_those(pytester: pytest.Pytester) -> None:
    spec = RESULTS.parents[0] / "jsonl" / "bench.yaml"
    partial = RESULTS.parents[0] / "bad" / "replay_partial.jsonl"
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), f"--mllm=replay:{partial}", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*no recorded answer for sample my_bench::colors::q3 in*replay_partial.jsonl*"])
    statuses = {r["id"]: r["status"] for r in json.loads(out.read_text())["records"]}
    assert statuses["colors::q1"] == "correct" and statuses["colors::q2"] == "correct"
    assert statuses["colors::q3"] == "error" and statuses["shapes::q6"] == "error"
    assert statuses["shapes::q7"] == "correct"  # "The answer is (B) two."
