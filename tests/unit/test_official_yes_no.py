"""MME (release folder and results format) and POPE score the awkward lines and cells of their real files
as their reference code does.

`fixtures/official/{mme,mme_results,pope}/` (written by `fixtures/official/make_yes_no.py`) hold our own
rows of the real files' shape: MME txt files with Windows line endings, a trailing empty line, answers
"Yes " and "No  ", a byte-order mark, both release layouts, `.jpg` and `.png`; MME results files with a
byte-order mark, ground truth "YES"/"yes", responses "", "ye", "n", "  yes", "nope", "yesterday", and
files the script cannot score (a tab or a line break in a response, a blank line, …); POPE.tsv rows in
several splits ("popular,random") answered "No, there is not.", "There is a car.", "NO", "Yes, no." …, and
`pope_undefined/`, splits where evaluate.py divides by zero (no answer reads yes; no answer is yes).

Expected numbers (`fixtures/official/reference_scores_yes_no.json`), from the reference code run outside
the project by `fixtures/official/run_reference_yes_no.py` (command in fixtures/official/README.md):
MME: BradyFU/Awesome-Multimodal-Large-Language-Models, branch Evaluation, commit
dd2950902889cd614d4edf606827240166d29381, `tools/eval_tool.zip` → `eval_tool/calculation.py`
(`calculate_metrics`); POPE: AoiDragon/POPE, commit 08d957b917e5a378a2f99d35b6293c536a66298b, `evaluate.py`.
`cd /tmp/ref_i26y/mme/eval_tool && PYTHONPATH=. /tmp/ref_i26y/venv/bin/python
<repo>/fixtures/official/run_reference_yes_no.py <repo>/fixtures/official /tmp/ref_i26y/pope_evaluate.py
<repo>/fixtures/official/reference_scores_yes_no.json`.
"""

from __future__ import annotations

import subprocess
import sys
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import SpecError, find_spec
from pytest_mllm.harness.junit import suite_properties
from pytest_mllm.harness.listing import gate_paths
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult, results_document
from pytest_mllm.scoring.gates import MetricSpace, evaluate_gate, parse_gate, shadowed_scopes

from official_runs import assert_one_run_exits_0, replay_run

pytest.importorskip("numpy")  # loaded once before pytester's in-process runs, which cannot load it anew

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official"
REFERENCE = json.loads((FIXTURES / "reference_scores_yes_no.json").read_text(encoding="utf-8"))
# spec → (data folder, replay recording)
CASES = {
    "mme": (FIXTURES / "mme" / "MME_Benchmark_release_version", FIXTURES / "mme" / "responses.jsonl"),
    "mme_results": (FIXTURES / "mme_results", FIXTURES / "mme_results"),
    "pope": (FIXTURES / "pope", FIXTURES / "pope" / "responses.jsonl"),
}


def run(spec_name: str, data: Path, recording: Path, spec_path: Path | None = None) -> tuple[list[Record],
                                                                                          BenchmarkResult]:
    done = replay_run(spec_name, data, recording, spec_path)
    return done.records, done.result


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[list[Record], BenchmarkResult]]:
    return {name: run(name, *paths) for name, paths in CASES.items()}


def test_the_fixtures_are_what_the_writer_writes() -> None:
    done = subprocess.run([sys.executable, str(FIXTURES / "make_yes_no.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["mme", "mme_results"])
def test_mme_rows_and_scores_equal_calculation_py(runs: dict[str, Any], name: str) -> None:
    records, result = runs[name]
    reference = REFERENCE[name]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    if name == "mme":  # the release: rows by sample id; its questions already ask for yes or no, once
        assert all(r["prompt"].count("Please answer yes or no.") == 1 for r in records)
        ours = {r["id"]: (r["parsed"], r["correct"], r["question"]) for r in records}
        # the questions as MME's Your_Results templates hold them: no byte-order mark (color's txt has one)
        assert ours == {i: (row["parsed"], row["hit"], row["question"])
                        for i, row in zip(reference["ids"], reference["rows"])}
        assert not any("\ufeff" in r["question"] or "\ufeff" in r["prompt"] for r in records)
    else:  # the results files: rows by subtask and question, in file order
        assert not any("\ufeff" in r["id"] for r in records)  # the byte-order mark is not the image's name
        ours_rows = [(r["task"], r["question"], r["parsed"], r["correct"]) for r in records]
        assert ours_rows == [(row["task"], row["question"], row["parsed"], row["hit"]) for row in reference["rows"]]
    metrics = result.metrics
    assert metrics["perception"] == reference["perception"]  # exact: the script's own float order
    assert metrics["cognition"] == reference["cognition"]
    assert metrics["score"] == reference["perception"] + reference["cognition"]
    for task, score in reference["score"].items():
        assert metrics[f"{task}.score"] == score, task
        assert metrics[f"{task}.accuracy"] == pytest.approx(reference["acc"][task]), task


def test_pope_rows_and_splits_equal_evaluate_py(runs: dict[str, Any]) -> None:
    records, result = runs["pope"]
    reference = REFERENCE["pope"]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    assert reference["read"]["answer"][:2] == ["Yes", "No"] and "popular,random" in reference["read"]["category"]
    metrics = result.metrics
    for split, expected in reference["splits"].items():
        ours = {int(r["id"].rsplit("::", 1)[1]): (r["parsed"], r["correct"]) for r in records if r["task"] == split}
        assert ours == {i: (p, h) for i, p, h in zip(expected["index"], expected["parsed"], expected["hit"])}, split
        for ours_key, key in (("accuracy", "acc"), ("precision", "precision"), ("recall", "recall"), ("f1", "f1"),
                              ("yes_ratio", "yes_ratio")):
            assert metrics[f"{split}.{ours_key}"] == pytest.approx(expected[key]), (split, key)
    assert metrics[result.spec.headline] == pytest.approx(reference["mean_f1"])
    assert metrics["pooled_f1"] == pytest.approx(reference["pooled"]["f1"])


@pytest.mark.parametrize("name", sorted(REFERENCE["mme_results"]["unscorable"]))
def test_results_files_the_script_cannot_score_say_so(name: str) -> None:
    """Each stops MME's script (a tab or a line break in a response: a line of other than four parts; ground
    truth "Yes "; a line without its pair): the file is refused, or that row errors alone, saying why."""
    assert REFERENCE["mme_results"]["unscorable"][name].split(":")[0] in ("ValueError", "AssertionError")
    folder = FIXTURES / "mme_results" / name
    try:
        records, result = run("mme_results", folder, folder)
    except SpecError as exc:
        assert name in ("tab_in_response", "line_break_in_response", "blank_line", "trailing_blank_line")
        assert "MME's calculation.py cannot score this file either" in str(exc)
        assert ("a blank line" in str(exc)) is name.endswith("blank_line")
        return
    errors = [r["error"] for r in records if r["status"] == "error"]
    assert len(errors) == 1 and "MME's calculation.py cannot score the file either" in errors[0], errors
    assert len(records) - 1 == sum(r["status"] != "error" for r in records)
    if name == "ground_truth_with_space":  # an error is not a wrong answer: its pair is left out of accuracy+
        assert "existence.accuracy_plus" not in result.metrics and result.metrics["existence.accuracy"] == 1.0


def test_pope_splits_evaluate_py_cannot_score_are_undefined_not_0(capsys: pytest.CaptureFixture[str]) -> None:
    """evaluate.py stops on a split with no answer read as yes (adversarial: precision 0/0) or no answer that
    is yes (random: recall 0/0): those values, their F1 and the mean F1 are left out and the results and the
    terminal say why; the split that scores and the pooled answers equal evaluate.py's."""
    from rich.console import Console

    from pytest_mllm.report.terminal import benchmark_tables

    reference = REFERENCE["pope_undefined"]
    records, result = run("pope", FIXTURES / "pope_undefined", FIXTURES / "pope_undefined" / "responses.jsonl")
    metrics = result.metrics
    undefined = results_document({"pope": result}, [], {})["benchmarks"]["pope"]["scopes"]["undefined"]
    assert reference["mean_f1"] is None and "mean_f1" not in metrics and "the F1 of" in undefined["mean_f1"]
    for split, expected in reference["splits"].items():
        if "stops" not in expected:
            for key in ("precision", "recall", "f1", "yes_ratio"):
                assert metrics[f"{split}.{key}"] == pytest.approx(expected[key]), (split, key)
            continue
        assert expected["stops"] == "ZeroDivisionError: float division by zero"
        tp, fp, tn, fn = map(int, expected["printed"].splitlines()[1].split("\t"))
        assert f"{split}.f1" not in metrics and "ZeroDivisionError" in undefined[f"{split}.f1"], split
        assert (f"{split}.precision" in metrics) is bool(tp + fp) and (f"{split}.recall" in metrics) is bool(tp + fn)
        assert {f"{split}.precision", f"{split}.recall"} - set(metrics) <= set(undefined), split
    assert metrics["pooled_f1"] == pytest.approx(reference["pooled"]["f1"])
    Console(width=300).print(*benchmark_tables(result))
    shown = capsys.readouterr().out
    assert "pope: adversarial.precision is undefined (shown –, not 0): no answer reads yes" in shown
    assert "pope: random.recall is undefined (shown –, not 0): no question's answer is yes" in shown
    assert shown.count("undefined (shown") == len(set(undefined.values()))  # one line per reason


def test_the_subtask_count_and_the_sample_count_keep_one_key_each(runs: dict[str, Any]) -> None:
    """Every scope reports `count` (its samples), so MME's subtask "count" has no bare key: `mme.count` is the
    sample count in the metrics, gates and JUnit properties, the subtask's score is `mme.count.score`."""
    records, result = runs["mme_results"]
    metrics, reference = result.metrics, REFERENCE["mme_results"]
    assert shadowed_scopes(result.scopes) == ["count"]
    assert metrics["count"] == len(records) == 32 and metrics["count.score"] == reference["score"]["count"]
    properties = suite_properties("mme", result)
    assert properties["mme.count"] == 32 and properties["mme.count.score"] == reference["score"]["count"]
    assert properties["mme.existence"] == metrics["existence.score"]
    space = MetricSpace.of(result.spec.metrics, result.spec.task_order)
    assert space.keys().count("count") == 1 and "count.score" in space.keys() and "existence" in space.keys()
    assert gate_paths(result.spec).endswith("; mme.count is that metric, the count task's score is mme.count.score")
    names = {"mme": [*result.scopes["tasks"], *result.scopes["groups"]]}
    verdict = evaluate_gate(parse_gate("mme.count>=100"), {"mme": metrics}, names, {"mme": "score"})
    assert verdict.value == 32 and verdict.note == ("mme.count is the benchmark's own 'count' value, not the headline "
                                                    "of its task or group 'count': that is mme.count.score (50)")
    assert evaluate_gate(parse_gate("mme.count.score>=100"), {"mme": metrics}, names, {"mme": "score"}).note == ""


def test_strip_cells_reads_a_spaced_ground_truth(tmp_path: Path) -> None:
    """The deviation `strip_cells` (off by default) scores ground truth "Yes " as "Yes"."""
    spec = tmp_path / "mme_results.yaml"
    spec.write_text(find_spec("mme_results").read_text(encoding="utf-8") + "deviations: [strip_cells]\n",
                    encoding="utf-8")
    folder = FIXTURES / "mme_results" / "ground_truth_with_space"
    records, _ = run("mme_results", folder, folder, spec_path=spec)
    assert [(r["answer"], r["status"]) for r in records] == [("yes", "correct"), ("no", "correct")]


def test_one_run_over_the_three_fixtures_exits_0(pytester: pytest.Pytester, tmp_path: Path,
                                                 runs: dict[str, Any]) -> None:
    """One pytest-mllm run over the three folders, every row answered by its recorded answer: no ERROR, exit 0.
    Both MME specs are named "mme", so the results-format one runs here under the name "mme_results"."""
    results_spec = tmp_path / "mme_results.yaml"
    results_spec.write_text(find_spec("mme_results").read_text(encoding="utf-8").replace("name: mme\n",
                                                                                         "name: mme_results\n"))
    answers = tmp_path / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as out:
        for name, (records, _) in runs.items():
            for record in records:
                out.write(json.dumps({"id": f"{name}::{record['id']}", "response": record["response"]}) + "\n")
    assert_one_run_exits_0(pytester, ["mme", "pope", str(results_spec)],
                           {name: data for name, (data, _) in CASES.items()}, answers,
                           sum(len(records) for records, _ in runs.values()))
