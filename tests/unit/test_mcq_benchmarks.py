"""MMStar, SEED-Bench (image), ScienceQA-IMG, AI2D, RealWorldQA and MMT-Bench (VAL), in both
released formats, scored as VLMEvalKit scores them, checked against VLMEvalKit itself.

`fixtures/mcq/vlmevalkit_scores.json` holds what VLMEvalKit computed on the fixtures' TSVs and
recorded responses: repository open-compass/VLMEvalKit, commit
e8e78f05f3080fe28154f2130321f17951c3be94, `vlmeval/utils/matching_util.py` (`can_infer`) and
`vlmeval/dataset/utils/multiple_choice.py` (`mcq_vanilla_eval`, `report_acc`, `report_acc_MMT`),
rule-based (judge `exact_matching`, model None). The command is in `fixtures/mcq/README.md`.
The parquet folders hold the same questions, so the same numbers apply to them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.record import Record, new_record
from pytest_mllm.sample import BadSample, Sample
from pytest_mllm.scoring.category_mean import scope_category_mean
from pytest_mllm.scoring.metrics import ScopeView, benchmark_metrics
from pytest_mllm.scoring.parsers import multiple_choice

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mcq"
GOLDEN = json.loads((FIXTURES / "vlmevalkit_scores.json").read_text())
TSV_SPECS = ("mmstar", "seedbench", "scienceqa", "ai2d", "realworldqa", "mmt_bench")
PARQUET_SPECS = ("ai2d_parquet", "scienceqa_parquet", "mmt_bench_parquet", "seedbench_parquet", "mmstar_parquet",
                 "realworldqa_parquet")
# lmms-lab/SEED-Bench names a dimension by its question_type_id: those of the fixture
SEED_DIMENSION_IDS = {"Scene Understanding": "1", "Instance Attributes": "3", "Instances Counting": "5"}
# VLMEvalKit's report_acc_MMT names MMT-Bench's l2-categories by abbreviations (MMT_abbrs): those of the fixture
MMT_ABBREVIATIONS = {
    "visual_recognition": "VR", "localization": "Loc", "ocr": "OCR", "counting": "Count", "hallucination": "HLN",
    "image_retrieval": "IR", "threed": "3D", "visual_captioning": "VC", "visual_grounding": "VG",
    "doc_understanding": "DU", "action_recognition": "AR", "pixel_level_perception": "PLP",
    "image-to-image_translation": "I2IT", "relation_reasoning": "RR", "intelligence_quotient_test": "IQT",
    "emotion": "Emo", "visual_illusion": "VI", "meme_understanding": "MemU", "visual_prompt_understanding": "VPU",
    "anomaly_detection": "AND", "keypoint_detection": "KD", "visual_commonsense_reasoning": "VCR",
    "image_evaluation_judgement": "IEJ", "multiple_image_analysis": "MIA", "cross_image_matching": "CIM",
    "temporal_understanding": "TU", "visual_code": "VP", "medical_understanding": "MedU",
    "autonomous_driving": "AUD", "discipline_knowledge_reasoning": "DKR", "embodied_ai": "EA",
    "gui_navigation": "GN",
}


def _golden(spec_name: str) -> dict:
    return GOLDEN[spec_name.removesuffix("_parquet")]


def _samples(spec_name: str) -> list[Sample]:
    samples = load_samples(load_spec(find_spec(spec_name)), FIXTURES / spec_name)
    assert not [s for s in samples if isinstance(s, BadSample)]
    return [s for s in samples if isinstance(s, Sample)]


def _responses(spec_name: str) -> dict[str, str]:
    lines = (FIXTURES / spec_name / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: json.loads(line)["response"] for line in lines}


def _tsv_index(spec_name: str, sample: Sample, position: int) -> str:
    """The TSV index the golden file keys a sample by (the parquet releases of AI2D and ScienceQA
    have no id column: their rows are the TSV's, whose indexes ascend)."""
    if spec_name in ("ai2d_parquet", "scienceqa_parquet", "realworldqa_parquet"):
        return sorted(_golden(spec_name)["hit"], key=int)[position]
    return str(sample.metadata["source_id"])


def _records(spec_name: str) -> list[Record]:
    responses = _responses(spec_name)
    spec = load_spec(find_spec(spec_name))
    records = []
    for sample in _samples(spec_name):
        parsed = multiple_choice(responses[str(sample.metadata["source_id"])], sample)
        records.append(new_record(
            id=sample.id, benchmark=spec.name, task=sample.task, answer=sample.answer, answer_type="choice",
            parser="choice", category=sample.category, l2_category=sample.l2_category, parsed=parsed,
            correct=parsed == sample.answer, status="correct" if parsed == sample.answer else "incorrect"))
    return records


@pytest.mark.parametrize("spec_name", TSV_SPECS + PARQUET_SPECS)
def test_every_row_reads_as_vlmevalkit_reads_it(spec_name: str) -> None:
    golden = _golden(spec_name)
    responses = _responses(spec_name)
    samples = _samples(spec_name)
    assert len(samples) == len(golden["hit"])
    for position, sample in enumerate(samples):
        index = _tsv_index(spec_name, sample, position)
        parsed = multiple_choice(responses[str(sample.metadata["source_id"])], sample)
        expected = golden["can_infer"][index]
        assert (parsed if parsed in dict(sample.choices) else False) == expected, (sample.id, parsed, expected)
        assert int(parsed == sample.answer) == golden["hit"][index], sample.id


@pytest.mark.parametrize("spec_name", TSV_SPECS + PARQUET_SPECS)
def test_overall_and_category_accuracy_equal_vlmevalkit(spec_name: str) -> None:
    spec = load_spec(find_spec(spec_name))
    report = _golden(spec_name)["report_acc"]
    result = benchmark_metrics(_records(spec_name), spec.metrics, spec.groups, spec.task_order)
    assert result["overall"]["accuracy"] == pytest.approx(report["Overall"][0], abs=1e-12)
    categories = [c for c in report if c not in ("split", "Overall") and c not in MMT_ABBREVIATIONS.values()]
    if spec_name.startswith("realworldqa"):  # the release has no category column
        assert categories == [] and list(result["tasks"]) == ["test"]
        return
    if spec_name == "ai2d_parquet":  # lmms-eval's AI2D release has no topic column
        return
    names = SEED_DIMENSION_IDS if spec_name == "seedbench_parquet" else {c: c for c in categories}
    assert sorted(result["tasks"]) == sorted(names[c] for c in categories)
    for category in categories:
        assert result["tasks"][names[category]]["accuracy"] == pytest.approx(report[category][0], abs=1e-12), category


@pytest.mark.parametrize("spec_name", ["mmstar", "realworldqa"])
def test_options_read_out_of_the_question_are_the_tsvs(spec_name: str) -> None:
    tsv, parquet = _samples(spec_name), _samples(f"{spec_name}_parquet")
    assert [(s.question, s.choices, s.answer) for s in parquet] == [(s.question, s.choices, s.answer) for s in tsv]


def test_seedbench_parquet_keeps_the_image_questions_and_counts_every_row() -> None:
    samples = _samples("seedbench_parquet")
    assert [s.metadata["source_id"] for s in samples] == sorted(_golden("seedbench_parquet")["hit"], key=int)
    assert [s.metadata["row"] for s in samples] == [0, 1, 3, 4, 5, 6, 8, 9]  # rows 2 and 7: video questions


@pytest.mark.parametrize("spec_name", ["mmt_bench", "mmt_bench_parquet"])
def test_mmt_bench_l2_categories_are_means_of_their_subtasks(spec_name: str) -> None:
    spec = load_spec(find_spec(spec_name))
    report = _golden(spec_name)["report_acc"]
    result = benchmark_metrics(_records(spec_name), spec.metrics, spec.groups, spec.task_order)
    l2 = result["l2_categories"]
    assert sorted(l2) == sorted(MMT_ABBREVIATIONS)
    for name, abbreviation in MMT_ABBREVIATIONS.items():
        assert l2[name]["category_mean_accuracy"] == pytest.approx(report[abbreviation][0], abs=1e-12), name
    # where a meta-task's subtasks differ in size the mean of subtasks is not the pooled accuracy
    assert l2["emotion"]["category_mean_accuracy"] == pytest.approx(0.5)
    assert l2["emotion"]["accuracy"] == pytest.approx(0.75)


def test_category_mean_only_in_l2_category_scopes() -> None:
    records = [new_record(id=f"t::{i}", benchmark="b", task="t", answer="A", category=cat, l2_category="m",
                          status="correct" if correct else "incorrect", parsed="A", correct=correct)
               for i, (cat, correct) in enumerate([("x", True), ("x", True), ("x", False), ("y", False)])]
    values = {"count": 4, "errors": 0, "accuracy": 0.5}
    assert scope_category_mean(ScopeView("l2_category", records, values)) == {
        "category_mean_accuracy": pytest.approx((2 / 3 + 0) / 2)}
    assert scope_category_mean(ScopeView("overall", records, values)) == {}
    errored = [new_record(id="t::9", benchmark="b", task="t", answer="A", category="z", l2_category="m",
                          status="error")]
    assert scope_category_mean(ScopeView("l2_category", errored, values)) == {}


@pytest.mark.parametrize("spec_name", TSV_SPECS)
def test_tsv_rows_keep_their_columns(spec_name: str) -> None:
    samples = {s.metadata["source_id"]: s for s in _samples(spec_name)}
    if spec_name == "scienceqa":  # a quoted cell spanning lines: the hint keeps its line break
        assert samples["1"].metadata["hint"] == "Sturgeons are bottom feeders.\nFigure: sturgeon."
        assert [letter for letter, _ in samples["5"].choices] == list("ABCDE")
        assert [letter for letter, _ in samples["1"].choices] == ["A", "B"]
    if spec_name == "ai2d":  # every cell quoted, as VLMEvalKit's dump writes
        assert samples["1000"].answer == "C" and samples["1000"].task == "lifeCycles"
    if spec_name == "mmt_bench":
        assert samples["4"].choices[-1] == ("I", "19 people")
        assert samples["0"].l2_category == "emotion"
    if spec_name == "mmstar":  # its l2 column is named l2_category, which VLMEvalKit's report does not read
        assert samples["0"].l2_category is None and samples["0"].category == "coarse perception"
