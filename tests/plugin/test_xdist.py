"""Results are identical with and without xdist: records ride on the reports to the controller."""

from __future__ import annotations

import json

import pytest


def _strip_timing(data: dict) -> dict:
    for record in data["records"]:
        record.pop("duration_s"), record.pop("latency_s")
    return {"benchmarks": data["benchmarks"], "records": data["records"]}


def test_same_scores_and_records_with_two_workers(pytester: pytest.Pytester) -> None:
    runs = {}
    for workers in ("0", "2"):
        out = pytester.path / f"out{workers}.json"
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", workers, "--mllm=baseline:random",
                                               "--mllm-bench=shapes", f"--mllm-json={out}")
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(["*pytest-mllm scores*", "*overall*360*"])
        runs[workers] = _strip_timing(json.loads(out.read_text()))
        for volatile in ("spec",):
            runs[workers]["benchmarks"]["shapes"].pop(volatile)
    assert runs["0"] == runs["2"]


def test_gate_failure_decides_the_exit_status_under_xdist(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--mllm=baseline:yes",
                                           "--mllm-bench=shapes", "--mllm-gate=shapes.perception.accuracy>=0.9")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*shapes.perception.accuracy>=0.9*0.50*0.9*fail*"])
