"""Replay prints how the recording covers the samples before any runs, and scores a file that
disagrees with them only when the user lowers --mllm-replay-min-match (the refusals themselves are
rows of test_bad_inputs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LMMS_EVAL = FIXTURES / "predictions" / "20260101_000000_samples_pope.jsonl"
BASE = ("-p", "no:cacheprovider", "--mllm-bench=pope", f"--mllm-data={FIXTURES / 'pope_splits'}", "--mllm-cache=off")


def test_the_coverage_is_printed_before_the_samples_run(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*BASE, f"--mllm=replay:{LMMS_EVAL}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    lines = result.outlines
    coverage = lines.index("replay: 30 of 30 pope samples have a recorded answer; the recorded questions or targets "
                           "agree for 30 of 30 (100.0 %)")
    assert coverage < next(n for n, line in enumerate(lines) if line.startswith("pope "))  # the tests' progress line


def test_a_disagreeing_file_is_scored_when_the_threshold_is_lowered(pytester: pytest.Pytester) -> None:
    shifted = pytester.path / "shifted.jsonl"
    shifted.write_text("".join(json.dumps({**json.loads(line), "doc_id": json.loads(line)["doc_id"] + 1}) + "\n"
                               for line in LMMS_EVAL.read_text().splitlines() if line.strip()))
    out = pytester.path / "out.json"
    result = pytester.runpytest(*BASE, f"--mllm=replay:{shifted}", "--mllm-replay-min-match=0", f"--mllm-json={out}")
    result.stdout.fnmatch_lines(["replay: 27 of 30 pope samples have a recorded answer; the recorded questions or "
                                 "targets agree for 0 of 27 (0.0 %)"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the 3 samples the shifted file has no row for error
    records = json.loads(out.read_text())["records"]
    assert len(records) == 30 and sum(r["status"] == "error" for r in records) == 3
