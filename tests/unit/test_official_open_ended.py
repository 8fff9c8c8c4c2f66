"""LIME-M and Tiny LVLM-eHub score the cells of their real releases as their reference code does.

Fixtures: fixtures/official/lime (LIME-M's parquet layout, benchmarks/lime.yaml) and
fixtures/official/tiny_lvlm_ehub (the open-ended VQA JSON), written by
fixtures/official/make_open_ended.py. Expected numbers: fixtures/official/reference_scores_open_ended.json,
written by running the reference code outside this project (fixtures/official/run_reference_open_ended.py,
command in fixtures/official/README.md):

    LIME-M   repository kangreen0210/LIME-rebuttal, commit fe0fd523702d8aa7d1b7ae7ed2955ba46120aaf0,
             lmms_eval/tasks/{chartqa,infovqa,textvqa,ok_vqa,ocrbench,pope,ai2d,scienceqa,textcaps,coco_cap}_suit*/utils.py,
             lmms_eval/api/metrics.py (anls); the parquet read with `datasets` 5.2.0; pycocoevalcap 1.2 (Java 17)
    Tiny     repository OpenGVLab/Multi-Modality-Arena, commit bd2999a3be2bf4539a7e071cf2cfab5822f66417,
             tiny_lvlm_evaluation/utils/tools.py (VQAEval); sample_dataset.py and
             bard_RandomSeed20230719_50samples_per_dataset.jsonl at commit dd3839d (the draw that made the
             released subset; later commits keep 100 entries past Bard's for another benchmark), numpy 2.4

    cd /tmp/ref_l && PYTHONPATH=lime:mma/tiny_lvlm_evaluation venv/bin/python \\
        <repo>/fixtures/official/run_reference_open_ended.py <repo>/fixtures/official out.json \\
        mma_dd3839d/tiny_lvlm_evaluation
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.loaders.tiny_lvlm_ehub import legacy_numpy_choice
from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import scope_metrics
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.sample import BadSample, Sample

from official_runs import assert_one_run_exits_0, replay_run

pytest.importorskip("pyarrow")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official"
REFERENCE = json.loads((FIXTURES / "reference_scores_open_ended.json").read_text(encoding="utf-8"))
CAPTIONS = ("textcaps", "coco_cap")


def run(spec_name: str, folder: Path, answers: Path | None = None
        ) -> tuple[list[Sample | BadSample], list[Record], BenchmarkResult]:
    return tuple(replay_run(spec_name, folder, answers))  # type: ignore[return-value]


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    return {"lime": run("lime", FIXTURES / "lime"), "tiny_lvlm_ehub": run("tiny_lvlm_ehub", FIXTURES / "tiny_lvlm_ehub")}


def test_the_fixtures_are_what_their_script_writes() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(FIXTURES / "make_open_ended.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_lime_scores_every_row_as_lmms_eval_does(runs: dict[str, Any]) -> None:
    _, records, result = runs["lime"]
    expected = REFERENCE["lime"]["score"]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    assert {r["id"] for r in records} == set(expected)
    for record in records:
        score = float(record["correct"]) if record.get("score") is None else record["score"]  # choice, yes/no: verdict
        assert score == pytest.approx(expected[record["id"]], rel=1e-9, abs=1e-12), record["id"]
    report = REFERENCE["lime"]["report"]
    for task in ("chartqa", "infovqa", "textvqa", "ok_vqa", "ocrbench", "pope", "ai2d", "scienceqa_img"):
        assert result.metrics[f"{task}.mean_score"] == pytest.approx(report[task], abs=1e-12), task
    assert result.metrics["pope.accuracy"] == report["pope_reference"]


def test_each_lime_subtask_number_is_the_one_lmms_eval_reports(runs: dict[str, Any]) -> None:
    """Captions: pycocoevalcap's BLEU-4 (and CIDEr) over the whole subtask, not the mean of the rows';
    ocrbench: the right answers over 1000; the others: the mean row score. The headline averages them."""
    result, report = runs["lime"][2], REFERENCE["lime"]["report"]
    numbers = {}
    for task in ("chartqa", "infovqa", "textvqa", "ok_vqa", "pope", "ai2d", "scienceqa_img"):
        numbers[task] = report[task]
    for task in CAPTIONS:
        numbers[task] = report[f"{task}_reference"]
        assert result.metrics[f"{task}.bleu_4"] == pytest.approx(report[f"{task}_reference"], abs=1e-6)
        rows = [r for r in runs["lime"][1] if r["task"] == task]  # the metric `cider`, which a spec may declare
        assert scope_metrics(rows, {"cider"}, kind="task")["cider"] == pytest.approx(report[f"{task}_cider"], abs=1e-6)
        assert abs(result.metrics[f"{task}.mean_score"] - report[f"{task}_reference"]) > 0.05  # not the row mean
    numbers["ocrbench"] = report["ocrbench_reference"]
    assert result.metrics["ocrbench.ocrbench_accuracy"] == pytest.approx(report["ocrbench_reference"], abs=1e-12)
    assert result.metrics["ocrbench.accuracy"] == pytest.approx(report["ocrbench"], abs=1e-12)  # kept beside it
    for task, number in numbers.items():
        assert result.metrics[f"{task}.lime_score"] == pytest.approx(number, abs=1e-6), task
    assert result.metrics["lime_score"] == pytest.approx(sum(numbers.values()) / len(numbers), abs=1e-6)
    assert result.spec.headline == "lime_score"


def test_lime_reads_cells_as_datasets_hands_them_to_lmms_eval(runs: dict[str, Any]) -> None:
    """"None", "nan", "NA" stay text, "[Gambia, Niger]" and "[3]" stay text, reference answers keep their
    spaces and empty ones, options "None"/"nan"/"03" stay as stored in their places."""
    samples = {s.id: s for s in runs["lime"][0]}
    read = REFERENCE["lime"]["read"]
    for key, cells in read.items():
        sample = samples[key]
        if cells["options"] is not None:
            assert [text for _, text in sample.choices] == cells["options"], key
            assert sample.answer == "ABCDEFGH"[int(cells["answer"])], key
        else:
            assert sample.metadata["references"] == (cells["answers"] or [cells["answer"]]), key


def test_tiny_lvlm_ehub_draws_and_scores_as_the_authors_code(runs: dict[str, Any]) -> None:
    samples, records, result = runs["tiny_lvlm_ehub"]
    reference = REFERENCE["tiny_lvlm_ehub"]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    kept: dict[str, set[str]] = {}
    for sample in samples:
        kept.setdefault(sample.task, set()).add(sample.metadata["source_id"])
    assert kept == {name: set(ids) for name, ids in reference["kept"].items()}
    assert len(kept["IIIT5K"]) == 50 and len(kept["DocVQA"]) == 50
    # DocVQA is one Bard answered: its positions of a draw of 52, not the plain draw of 50
    assert kept["DocVQA"] != {f"DocVQA_{i}" for i in legacy_numpy_choice(60, 50, 20230719)}
    assert {r["id"]: int(bool(r["correct"])) for r in records} == reference["hit"]
    for name, accuracy in reference["report"].items():
        assert result.metrics[f"{name}.accuracy"] == pytest.approx(accuracy), name


def test_tiny_answers_beyond_the_fixture_score_or_error_as_vqaeval(tmp_path: Path) -> None:
    """Numbers and null among gt_answers, run through VQAEval by the driver: where it stops (an int's or
    None's `.replace`) the row is an ERROR saying the reference cannot score it either; where it scores
    (a string before the number matches, an empty list) the verdict is its score."""
    cases = REFERENCE["tiny_lvlm_ehub"]["beyond"]
    entries = [{"question_id": f"q{i}", "dataset": "OCRVQA", "image": "a.png", "question": "How many?",
                "gt_answers": case["gt_answers"]} for i, case in enumerate(cases)]
    (tmp_path / "tiny_lvlm_ehub.json").write_text(json.dumps(entries), encoding="utf-8")
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps({"id": f"OCRVQA::q{i}", "response": c["response"]})
                                                    + "\n" for i, c in enumerate(cases)), encoding="utf-8")
    _, records, _ = run("tiny_lvlm_ehub", tmp_path, tmp_path / "answers.jsonl")
    by_id = {r["id"]: r for r in records}
    for i, case in enumerate(cases):
        record = by_id[f"OCRVQA::q{i}"]
        if isinstance(case["outcome"], int):
            assert record["status"] != "error" and int(bool(record["correct"])) == case["outcome"], case
        else:
            assert record["status"] == "error", case
            assert "cannot" in record["error"] or "exactly one of" in record["error"], record["error"]
    assert "the reference cannot score this row either" in by_id["OCRVQA::q0"]["error"]


def test_a_run_over_both_fixtures_exits_0(pytester: pytest.Pytester, tmp_path: Path, runs: dict[str, Any]) -> None:
    answers = tmp_path / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as out:
        for name in ("lime", "tiny_lvlm_ehub"):
            for line in (FIXTURES / name / "responses.jsonl").read_text(encoding="utf-8").splitlines():
                entry = json.loads(line)
                out.write(json.dumps({"id": f"{name}::{entry['id']}", "response": entry["response"]}) + "\n")
    assert_one_run_exits_0(pytester, ["lime", "tiny_lvlm_ehub"],
                           {name: FIXTURES / name for name in ("lime", "tiny_lvlm_ehub")}, answers,
                           len(runs["lime"][1]) + len(runs["tiny_lvlm_ehub"][1]))
