"""Replay reads other tools' prediction files: VLMEvalKit's `{model}_{dataset}.xlsx|tsv|json` and
lmms-eval's `--log_samples` JSON Lines, told apart by content.

The VLMEvalKit files in fixtures/predictions were written by VLMEvalKit's own `dump`, and the answers
expected here are what VLMEvalKit's `_prediction_table` reads back from them (`read_back` in
fixtures/predictions/vlmevalkit_scores.json; repository open-compass/VLMEvalKit, commit
e8e78f05f3080fe28154f2130321f17951c3be94; command in fixtures/predictions/README.md). The lmms-eval
file was written by lmms-eval's `EvaluationTracker.save_results_samples` (EvolvingLMMs-Lab/lmms-eval,
commit 75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3) from fixtures/pope_splits/responses.jsonl.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.models.replay import MissingPrediction, ReplayFileError, ReplayModel
from pytest_mllm.sample import Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PREDICTIONS = FIXTURES / "predictions"
READ_BACK = json.loads((PREDICTIONS / "vlmevalkit_scores.json").read_text())["vlmevalkit"]["read_back"]
LMMS_EVAL = PREDICTIONS / "20260101_000000_samples_pope.jsonl"


def _samples(name: str, root: Path) -> list[Sample]:
    samples = load_samples(load_spec(find_spec(name)), root)
    assert all(isinstance(s, Sample) for s in samples)
    return [s for s in samples if isinstance(s, Sample)]


@pytest.mark.parametrize("name", sorted(READ_BACK))
def test_a_vlmevalkit_prediction_file_gives_what_vlmevalkit_reads_back(name: str) -> None:
    model = ReplayModel(PREDICTIONS / name)
    samples = _samples("mmbench", FIXTURES / "mmbench_circular")
    assert {s.metadata["source_id"]: model.answer(s) for s in samples} == READ_BACK[name]
    # VLMEvalKit's own quirk, kept: an empty answer reads back as "nan" from .xlsx and .tsv, not from .json
    assert READ_BACK[name]["116"] == ("" if name.endswith(".json") else "nan")


def test_an_lmms_eval_samples_file_answers_by_doc_id_as_the_row_position() -> None:
    model = ReplayModel(LMMS_EVAL)
    recorded = {json.loads(line)["id"]: json.loads(line)["response"]
                for line in (FIXTURES / "pope_splits" / "responses.jsonl").read_text().splitlines()}
    samples = _samples("pope", FIXTURES / "pope_splits")
    assert len(samples) == 30 and len({s.metadata["row"] for s in samples}) == 18  # rows in several splits
    assert all(model.answer(s) == recorded[s.metadata["source_id"]] for s in samples)


def _pope_row(row: int) -> Sample:
    return next(s for s in _samples("pope", FIXTURES / "pope_splits") if s.metadata["row"] == row)


def test_raw_resps_win_over_filtered_ones_and_a_record_without_text_errors_alone(tmp_path: Path) -> None:
    path = tmp_path / "samples.jsonl"
    records = [{"doc_id": 0, "target": "Yes", "resps": [["Yes, there is."]], "filtered_resps": ["yes"]},
               {"doc_id": 0, "target": "Yes", "filtered_resps": "ignored: a second filter of doc 0"},
               {"doc_id": 1, "target": "No", "filtered_resps": [["-1.2", "False"], ["-0.3", "True"]]},
               {"doc_id": 2, "target": "No", "filtered_resps": "No"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    model = ReplayModel(path)
    assert model.answer(_pope_row(0)) == "Yes, there is."
    assert model.answer(_pope_row(2)) == "No"
    with pytest.raises(MissingPrediction, match=rf"{path}:3: field 'filtered_resps' holds no single generated text"):
        model.answer(_pope_row(1))
    with pytest.raises(MissingPrediction, match="no recorded answer for sample pope::"):
        model.answer(_pope_row(3))


@pytest.mark.parametrize(("content", "message"), [
    ('"index"\t"prediction"\n"1"\t"A"\n""\t"B"\n', "row 3: field 'index' is empty"),
    ('"index"\t"prediction"\n"1"\t"A"\n"1"\t"B"\n', "row 3: field 'index': '1' appears twice"),
    ('[{"index": 1, "prediction": "A"}, {"prediction": "B"}]', "row 2: field 'index' is empty"),
    ('{"doc_id": 0, "resps": ["A"]}\n{"doc_id": "x", "resps": ["B"]}\n', ":2: field 'doc_id'"),
    ("PK\x03\x04 not really a zip", "not a readable .xlsx workbook"),
])
def test_a_broken_prediction_file_names_file_row_and_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "Model_Bench.txt"
    path.write_text(content)
    with pytest.raises(ReplayFileError, match=str(path)) as caught:
        ReplayModel(path)
    assert message in str(caught.value)


def test_vlmevalkit_json_columns_forms_are_read(tmp_path: Path) -> None:
    split = tmp_path / "split.json"
    split.write_text(json.dumps({"columns": ["index", "prediction"], "data": [[101, "B"], [102, "C"]]}))
    by_column = tmp_path / "columns.json"
    by_column.write_text(json.dumps({"index": [101, 102], "prediction": ["B", "C"]}))
    samples = {s.metadata["source_id"]: s for s in _samples("mmbench", FIXTURES / "mmbench_circular")}
    for path in (split, by_column):
        model = ReplayModel(path)
        assert (model.answer(samples["101"]), model.answer(samples["102"])) == ("B", "C")
