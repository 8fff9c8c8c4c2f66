"""Other tools' names for a benchmark work wherever a benchmark is named: --mllm-bench, --mllm-data keys,
MLLM_DATA_* variables, gate paths and -m markers (lmms-eval's mmbench_en_dev and VLMEvalKit's
MMBench_DEV_EN both name the bundled mmbench). Each run is a subprocess, as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmbench_circular"
GOLDEN = json.loads((FIXTURE / "vlmevalkit_scores.json").read_text())["report_acc"]  # VLMEvalKit's run
REPLAY = f"--mllm=replay:{FIXTURE / 'responses.jsonl'}"


def test_peer_names_in_data_gates_and_markers(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--strict-markers", "--mllm-bench=mmbench_en_dev", f"--mllm-data=mmbench_en_dev={FIXTURE}",
        REPLAY, "--mllm-cache=off", f"--mllm-json={out}", "-m", "MMBench_DEV_EN",
        "--mllm-gate=MMBench_DEV_EN.circular_accuracy>=0.4", "--mllm-gate=mmbench_en_dev.circular_accuracy>=0.99")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the second gate: VLMEvalKit gives 0.44
    document = json.loads(out.read_text())
    assert document["benchmarks"]["mmbench"]["metrics"]["circular_accuracy"] == GOLDEN["circular"]["Overall"][0]
    assert {g["gate"]: g["verdict"] for g in document["gates"]} == {
        "MMBench_DEV_EN.circular_accuracy>=0.4": "pass", "mmbench_en_dev.circular_accuracy>=0.99": "fail"}
    assert len(document["records"]) == 67  # -m MMBench_DEV_EN selected every sample
    result.stdout.fnmatch_lines(["gate failed: mmbench.circular_accuracy 0.4444 < 0.99"])


def test_a_peer_names_data_variable_and_marker(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLLM_DATA_MMBENCH_DEV_EN", str(FIXTURE))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=MMBench_DEV_EN", REPLAY,
                                           "--collect-only", "-q", "-m", "not mmbench_en_dev")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, result.stdout.str()
    result.stdout.fnmatch_lines(["no tests collected (67 deselected)*"])


@pytest.mark.parametrize("data, message", [
    ("mmbnch", "--mllm-data=mmbnch={fixture}: no benchmark 'mmbnch' in this run (benchmarks: mmbench); did you mean "
               "'mmbench'?"),
    ("POPE", "--mllm-data=POPE={fixture}: no benchmark 'POPE' in this run (benchmarks: mmbench); use one of those "
             "names, or add --mllm-bench=POPE to run that benchmark too"),
])
def test_a_data_key_no_benchmark_of_the_run_answers_to(pytester: pytest.Pytester, data: str, message: str) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=mmbench_en_dev",
                                           f"--mllm-data={data}={FIXTURE}", REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert [line for line in result.stderr.lines if line.startswith("ERROR")] == [
        "ERROR: " + message.format(fixture=FIXTURE)]


def test_pytest_markers_lists_the_peer_names(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.mmbench_en_dev: pytest-mllm benchmark of mmbench",
                                 "@pytest.mark.MMT_Bench_VAL: pytest-mllm benchmark of mmt_bench"])
