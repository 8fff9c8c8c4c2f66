"""MMMU's specs score the real release's awkward cells as MMMU's own evaluation code scores them.

`fixtures/official/mmmu/` (the Hugging Face parquet folder: validation and dev) and
`fixtures/official/mmmu_tsv/` (VLMEvalKit's MMMU_DEV_VAL.tsv) hold the same rows: options as a
Python list's text with "None", "nan", "NA" items, `<image N>` options, an option over two lines,
"None of the above", open answers that are a list's text, a number or "None", answers outside the
options, a lowercase answer letter ("b", compared as written: never right), a digit answer to a
multiple-choice row, an open row with options (scored as open: `question_type` decides), images in
image_1 and image_3 only, recorded answers MMMU reads as letters, as option text or not at all (its
seeded draw); the TSV also holds a row of split "validation " (not the validation split, as pandas
reads it). `fixtures/official/mmmu_unscorable/` holds, in both layouts, a multiple-choice row without
options (MMMU's script stops: IndexError) and, in the TSV, a subject "Math " (a folder MMMU's script
never reads), beside a row it scores. Written by `fixtures/official/make_mmmu.py`.

Expected numbers (`fixtures/official/reference_scores_mmmu.json`): MMMU's evaluation code,
repository MMMU-Benchmark/MMMU, commit bb0b95a945998d91dfef37e969e07d49d1139438, files
mmmu/main_parse_and_eval.py, mmmu/print_results.py, mmmu/utils/eval_utils.py and data_utils.py,
driven by `fixtures/official/run_reference_mmmu.py` (ours, never imported by the project), from
that checkout's mmmu/ folder:
`python <repo>/fixtures/official/run_reference_mmmu.py <repo>/fixtures/official out.json`.
The TSV's rows reach MMMU's code as VLMEvalKit reads them (open-compass/VLMEvalKit
e8e78f05f3080fe28154f2130321f17951c3be94: pandas read_csv, the options of
ImageMCQDataset.build_prompt, images from toliststr(image_path)); the parquet rows as stored.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import SpecError, find_spec
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult, results_document
from pytest_mllm.sample import Sample
from pytest_mllm.scoring import mmmu

from official_runs import assert_one_run_exits_0, replay_run

pytest.importorskip("pyarrow")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official"
REFERENCE = json.loads((FIXTURES / "reference_scores_mmmu.json").read_text(encoding="utf-8"))
FOLDER = {"mmmu": "mmmu", "mmmu_dev": "mmmu", "mmmu_tsv": "mmmu_tsv"}
SPECS = tuple(FOLDER)
UNSCORABLE = FIXTURES / "mmmu_unscorable"  # reference: mmmu_unscorable (parquet), mmmu_tsv_unscorable (TSV)
# Rows whose two references differ, and why (fixtures/official/README.md, "MMMU"): pandas turns the
# options "None" (Art_Theory_1's answer), "nan" and "NA" (Art_Theory_6's answer) and the answer
# "None" (Math_3) missing, and reads column E as decimals ("11.0": Math_5's text answer no longer
# matches). The verdicts differ there; the letters read or drawn differ on the choice rows among them
# and on Computer_Science_1, whose draw moved: the draws before it were made from fewer letters.
VERDICTS_DIFFER = {"validation_Art_Theory_1", "validation_Art_Theory_6", "validation_Math_3", "validation_Math_5"}
LETTERS_DIFFER = {"validation_Art_Theory_1", "validation_Art_Theory_6", "validation_Math_5",
                  "validation_Computer_Science_1"}


def run(spec_name: str, spec_path: Path | None = None, folder: Path | None = None,
        answers: str = "responses.jsonl") -> tuple[list[Record], BenchmarkResult, list[Sample]]:
    folder = folder or FIXTURES / FOLDER[spec_name]
    done = replay_run(spec_name, folder, folder / answers, spec_path)
    return done.records, done.result, [s for s in done.samples if isinstance(s, Sample)]


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[list[Record], BenchmarkResult, list[Sample]]]:
    return {name: run(name) for name in SPECS}


def verdicts(records: list[Record]) -> dict[str, bool]:
    """Each row's verdict as MMMU's script gives it (an unreadable choice by its seeded draw), by source id."""
    draws = mmmu.random_fill(records)
    return {r["id"].split("::", 1)[1]: mmmu.mmmu_correct(r, draws) for r in records}


def letters(records: list[Record]) -> dict[str, str]:
    """Each choice row's letter as MMMU's script takes it: read in the response, else drawn; by source id."""
    draws = mmmu.random_fill(records)
    return {r["id"].split("::", 1)[1]: draws.get(r["id"], r["parsed"]) for r in records if r["answer_type"] == "choice"}


@pytest.mark.parametrize("name", SPECS)
def test_every_row_subject_discipline_and_the_headline_equal_mmmus(runs: dict[str, Any], name: str) -> None:
    records, result, _ = runs[name]
    reference = REFERENCE[name]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    assert verdicts(records) == {row["id"]: row["judge"] == "Correct" for row in reference["rows"]}
    metrics = result.metrics
    assert metrics["mmmu_accuracy"] == pytest.approx(reference["overall"])
    for subject, scores in reference["subjects"].items():
        assert metrics[f"{subject}.mmmu_accuracy"] == pytest.approx(scores["acc"]), subject
    for discipline, accuracy in reference["disciplines"].items():
        assert metrics[f"{discipline.replace(' ', '_')}.mmmu_accuracy"] == pytest.approx(accuracy), discipline


@pytest.mark.parametrize("name", SPECS)
def test_options_answers_and_images_are_those_mmmus_code_was_given(runs: dict[str, Any], name: str) -> None:
    samples = {s.metadata["source_id"]: s for s in runs[name][2]}
    for row in REFERENCE[name]["rows"]:
        sample = samples[row["id"]]
        # an open row's options are never read by MMMU's code (question_type decides), so none here
        assert dict(sample.choices) == (row["index2ans"] if row["question_type"] == "multiple-choice" else {}), row["id"]
        accepted = row["answer"] if isinstance(row["answer"], list) else [row["answer"]]
        assert (mmmu.references(sample.answer) if not sample.choices else [sample.answer]) == accepted, row["id"]
        assert len(sample.images) == len(row["images"]), row["id"]


def test_the_results_name_mmmus_commit_and_no_deviation(runs: dict[str, Any]) -> None:
    for name in SPECS:
        entry = results_document({name: runs[name][1]}, [], {})["benchmarks"][name]
        assert entry["deviations"] == []
        assert (entry["reference"]["repository"], entry["reference"]["commit"]) == \
            ("MMMU-Benchmark/MMMU", "bb0b95a945998d91dfef37e969e07d49d1139438")


def test_both_layouts_agree_wherever_their_references_do(runs: dict[str, Any]) -> None:
    parquet, tsv = REFERENCE["mmmu"]["rows"], REFERENCE["mmmu_tsv"]["rows"]
    assert [row["subject"] for row in parquet] == [row["subject"] for row in tsv]
    twin = {p["id"]: t["id"] for p, t in zip(parquet, tsv)}
    assert {p["id"] for p, t in zip(parquet, tsv) if p["judge"] != t["judge"]} == VERDICTS_DIFFER
    assert {p["id"] for p, t in zip(parquet, tsv) if p["all_choices"] and p["parsed_pred"] != t["parsed_pred"]} \
        == LETTERS_DIFFER
    ours_parquet, ours_tsv = verdicts(runs["mmmu"][0]), verdicts(runs["mmmu_tsv"][0])
    assert {p for p in twin if ours_parquet[p] != ours_tsv[twin[p]]} == VERDICTS_DIFFER
    read_parquet, read_tsv = letters(runs["mmmu"][0]), letters(runs["mmmu_tsv"][0])
    assert {p for p in read_parquet if read_parquet[p] != read_tsv[twin[p]]} == LETTERS_DIFFER


def test_answer_none_is_a_word_in_the_parquet_release_only_as_stored(tmp_path: Path, runs: dict[str, Any]) -> None:
    """Read as pandas would (the cells option left out), the open answer "None" is "nan" and the row that
    MMMU's code scores right is wrong; an unknown reading is refused by name."""
    text = find_spec("mmmu").read_text(encoding="utf-8")
    assert "  cells: as_stored\n" in text
    (tmp_path / "pandas.yaml").write_text(text.replace("  cells: as_stored\n", ""), encoding="utf-8")
    records, result, _ = run("mmmu", tmp_path / "pandas.yaml")
    assert verdicts(records)["validation_Math_3"] is False and verdicts(runs["mmmu"][0])["validation_Math_3"] is True
    assert result.metrics["mmmu_accuracy"] < runs["mmmu"][1].metrics["mmmu_accuracy"]
    (tmp_path / "bad.yaml").write_text(text.replace("cells: as_stored", "cells: verbatim"), encoding="utf-8")
    with pytest.raises(SpecError, match=r"loader_options\.cells.*'verbatim'.*pandas, as_stored"):
        run("mmmu", tmp_path / "bad.yaml")


@pytest.mark.parametrize(("name", "reference", "answers"), [("mmmu", "mmmu_unscorable", "responses.jsonl"),
                                                         ("mmmu_tsv", "mmmu_tsv_unscorable", "responses_tsv.jsonl")])
def test_rows_mmmus_script_cannot_score_or_never_reads_are_errors_saying_so(name: str, reference: str,
                                                                            answers: str) -> None:
    """A multiple-choice row without options stops MMMU's script (IndexError): that row is an ERROR saying the
    reference cannot score it either; a TSV subject "Math " is a folder MMMU's script never reads: an ERROR
    naming task_names. The other rows score as MMMU scores the file without the row that stops it."""
    expected = REFERENCE[reference]
    assert expected["stops"] == "IndexError: Cannot choose from an empty sequence"
    records, result, _ = run(name, folder=UNSCORABLE, answers=answers)
    errors = {r["id"].split("::", 1)[1]: r["error"] for r in records if r["status"] == "error"}
    never_read = {row["id"] for row in expected["rows"] if row["judge"] is None}
    assert set(errors) == set(expected["left_out"]) | never_read
    for source_id in expected["left_out"]:
        assert "'multiple-choice' but the row has no options; the reference's evaluation cannot score it either" \
            in errors[source_id]
    assert expected["folders_never_read"] == (["Math "] if name == "mmmu_tsv" else [])
    for source_id in never_read:
        assert "task 'Math ' is none of loader_options.task_names" in errors[source_id]
    scored = [r for r in records if r["status"] != "error"]
    assert verdicts(scored) == {row["id"]: row["judge"] == "Correct" for row in expected["rows"] if row["judge"]}
    assert result.metrics["mmmu_accuracy"] == pytest.approx(expected["overall"])


def test_the_tsv_split_and_field_cells_are_read_as_pandas_reads_them(runs: dict[str, Any]) -> None:
    """The TSV row of split "validation " is not read (the reference reads `split == "validation"`)."""
    read = {s.metadata["source_id"] for s in runs["mmmu_tsv"][2]}
    assert read == {row["id"] for row in REFERENCE["mmmu_tsv"]["rows"]} and "56" not in read


def test_a_question_type_column_the_tsv_lacks_is_refused_before_the_run(tmp_path: Path) -> None:
    text = find_spec("mmmu_tsv").read_text(encoding="utf-8")
    assert "  question_type_column: question_type\n" in text
    (tmp_path / "bad.yaml").write_text(text.replace("question_type_column: question_type", "question_type_column: kind"),
                                       encoding="utf-8")
    with pytest.raises(SpecError, match=r"no column 'kind' \(loader_options\.question_type_column of .*bad\.yaml\)"):
        run("mmmu_tsv", tmp_path / "bad.yaml")


def test_the_fixtures_are_what_their_script_writes() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(FIXTURES / "make_mmmu.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_over_the_three_specs_exits_0(pytester: pytest.Pytester, tmp_path: Path, runs: dict[str, Any]) -> None:
    """One pytest-mllm run over both layouts and both parquet splits, every row answered: no ERROR, exit 0."""
    answers = tmp_path / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as out:
        for name in SPECS:
            recorded = [json.loads(line) for line in (FIXTURES / FOLDER[name] / "responses.jsonl").open(encoding="utf-8")]
            out.writelines(json.dumps({"id": f"{name}::{s.id}", "response": r["response"]}) + "\n"
                           for s in runs[name][2] for r in recorded if r["id"] == s.metadata["source_id"])
    assert_one_run_exits_0(pytester, list(SPECS), {name: FIXTURES / FOLDER[name] for name in SPECS}, answers,
                           sum(len(runs[name][0]) for name in SPECS))
