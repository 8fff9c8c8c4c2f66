"""`--mllm=replay:PATH` reads the plugin's own `--mllm-json` files as well as JSON Lines; a file it cannot
read is one usage error naming the formats; a sample without a recorded answer errors in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SUBSET = ("-k", "existence and (img_000 or img_001 or img_002)")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    # A subprocess: each run gets a fresh interpreter (extension modules load once per process).
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--mllm-bench=shapes",
                                         *SUBSET, *args)


@pytest.fixture
def recorded(pytester: pytest.Pytester) -> Path:
    """A --mllm-json file of a seeded random baseline on 6 shapes samples."""
    out = pytester.path / "recorded.json"
    result = run(pytester, "--mllm=baseline:random:3", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return out


def test_replay_reads_its_own_json_results(pytester: pytest.Pytester, recorded: Path) -> None:
    again = pytester.path / "again.json"
    result = run(pytester, f"--mllm=replay:{recorded}", f"--mllm-json={again}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    first, second = json.loads(recorded.read_text()), json.loads(again.read_text())
    assert [r["response"] for r in second["records"]] == [r["response"] for r in first["records"]]
    assert len(second["records"]) == 6 and not [r for r in second["records"] if r["status"] == "error"]
    assert second["benchmarks"]["shapes"]["metrics"] == first["benchmarks"]["shapes"]["metrics"]


def test_replay_still_reads_json_lines(pytester: pytest.Pytester, recorded: Path) -> None:
    records = json.loads(recorded.read_text())["records"]
    lines = pytester.path / "preds.jsonl"
    lines.write_text("".join(json.dumps({"id": r["id"], "prediction": r["response"]}) + "\n" for r in records))
    again = pytester.path / "again.json"
    result = run(pytester, f"--mllm=replay:{lines}", f"--mllm-json={again}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert [r["response"] for r in json.loads(again.read_text())["records"]] == [r["response"] for r in records]


@pytest.mark.parametrize("content", ["just some text\n", "[1, 2, 3]", '{"benchmarks": {}}', '{"id": "x"}\nnope\n'])
def test_an_unreadable_recording_is_one_usage_error_naming_the_formats(pytester: pytest.Pytester,
                                                                        content: str) -> None:
    bad = pytester.path / "bad.json"
    bad.write_text(content)
    result = run(pytester, f"--mllm=replay:{bad}")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output
    assert output.count("--mllm-json results file") == 1 and "JSON Lines" in output and str(bad) in output, output
    assert "Traceback" not in output


def test_a_missing_answer_is_one_line_naming_the_sample_and_the_file(pytester: pytest.Pytester,
                                                                     recorded: Path) -> None:
    document = json.loads(recorded.read_text())
    missing = document["records"].pop(2)
    partial = pytester.path / "partial.json"
    partial.write_text(json.dumps(document))
    result = run(pytester, f"--mllm=replay:{partial}", "-rE")
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    line = f"model error: no recorded answer for sample shapes::{missing['id']} in {partial}"
    assert result.stdout.lines.count(line) == 1, output  # the error section holds this one line
    assert "Traceback" not in output and "MissingPrediction" not in output
    result.stdout.fnmatch_lines(["*1 error*"])
