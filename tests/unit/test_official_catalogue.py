"""The catalogue's type templates score each kind as VLMEvalKit's own evaluate does.

`fixtures/official/catalogue/` holds one folder per scorer type, named as the VLMEvalKit dataset whose
catalogue spec reads it (rows in VLMEvalKit's TSV layout, recorded answers; `make_catalogue.py`):
multiple choice read by can_infer with two splits (SEEDBench2_Plus), CircularEval (MMBench_DEV_EN_V11),
MMT-Bench's report on multi-image rows (MMT-Bench_VAL_MI), ANLS (InfoVQA_VAL), exact match on the best answer
(OCRVQA_TESTCORE) and on the share of answers (GQA_TestDev_Balanced), OCRBench's count (OCRBench_MINI),
TDBench's own evaluate (tdbench_rot0), and CC-OCR's token F1 on words of letters and digits
(CCOCR_MultiSceneOcr_Cord) and on characters (CCOCR_MultiLanOcr_Japanese, CCOCR_MultiSceneOcr_ZhDoc).
Expected numbers: VLMEvalKit's own evaluate run on them
(`fixtures/official/reference_scores_catalogue.json`): repository open-compass/VLMEvalKit, commit
e8e78f05f3080fe28154f2130321f17951c3be94, the class the catalogue names for each (ImageMCQDataset.evaluate →
evaluate_heuristic, judge exact_matching; ImageVQADataset.evaluate → evaluate_heuristic; OCRBench.evaluate;
TDBench.evaluate → do_evaluate; CCOCRDataset.evaluate), files vlmeval/dataset/image_mcq.py, image_vqa.py,
image_ccocr.py, utils/ccocr_evaluator/ocr_evaluator.py,
utils/multiple_choice.py (mcq_vanilla_eval, mcq_circular_eval, report_acc, report_acc_MMT),
utils/vqa_eval.py (process_line, hit_calculate), vlmeval/utils/matching_util.py (can_infer),
vlmeval/smp/file.py (load, dump: the .xlsx prediction file). Command in fixtures/official/README.md:
`cd /tmp/ref/src && PYTHONPATH=. ../venv/bin/python <repo>/fixtures/official/run_reference_catalogue.py
<repo>/fixtures/official <repo>/benchmarks/catalogue/vlmevalkit.json
<repo>/fixtures/official/reference_scores_catalogue.json`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.catalogue import vlmevalkit
from pytest_mllm.record import Record
from pytest_mllm.scoring.score import score_answer

from official_runs import ReplayRun, replay_run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official"
REFERENCE = json.loads((FIXTURES / "reference_scores_catalogue.json").read_text(encoding="utf-8"))
NAMES = sorted(name for name in REFERENCE if name != "list_cells")
MMT_ABBREVIATIONS = {"emotion": "Emo", "anomaly_detection": "AND", "counting": "Count"}


@pytest.fixture(scope="module")
def runs() -> dict[str, ReplayRun]:
    return {name: replay_run(name, FIXTURES / "catalogue" / name) for name in NAMES}


def _by_index(records: list[Record]) -> dict[int, Record]:
    return {int(r["id"].rsplit("::", 1)[1]): r for r in records}


def test_the_fixtures_cover_every_template_but_those_the_hand_written_sweeps_check() -> None:
    kinds = {vlmevalkit().entries[name].kind for name in NAMES}
    # vqa_score (TextVQA_VAL) and vqa_relaxed (ChartQA_TEST) have no catalogue spec: the hand-written textvqa and
    # chartqa specs hold those names, with the same settings, and test_official_reading checks them
    assert kinds == {"mcq", "mcq_circular", "mcq_mmt", "vqa_anls", "vqa_exact", "vqa_exact_mean", "ocrbench",
                     "ccocr_ocr"}


@pytest.mark.parametrize("name", NAMES)
def test_every_row_is_scored_as_vlmevalkit_scores_it(runs: dict[str, ReplayRun], name: str) -> None:
    records = runs[name].records
    reference = REFERENCE[name]["hit"]
    assert [r["error"] for r in records if r["status"] == "error"] == []
    kind = vlmevalkit().entries[name].kind
    if kind == "mcq_circular":  # the reference's hit is per question: every rotation right
        passes: dict[int, list[bool]] = {}
        for index, record in _by_index(records).items():
            passes.setdefault(index % 1_000_000, []).append(bool(record["correct"]))
        assert {str(q): int(all(p)) for q, p in passes.items()} == reference
    elif kind == "ccocr_ocr":  # VLMEvalKit's float arithmetic, 1e-9 terms included: equal to the last bit
        assert [r["score"] for _, r in sorted(_by_index(records).items())] == reference
    elif kind.startswith("vqa"):
        scores = [r["score"] for _, r in sorted(_by_index(records).items())]
        assert scores == pytest.approx(reference, abs=1e-12)
    elif kind == "ocrbench":
        assert [int(bool(r["correct"])) for _, r in sorted(_by_index(records).items())] == reference
    else:
        assert {str(i): int(bool(r["correct"])) for i, r in _by_index(records).items()} == reference


def test_multiple_choice_reports_each_split_as_its_task(runs: dict[str, ReplayRun]) -> None:
    report = REFERENCE["SEEDBench2_Plus"]["report"]
    metrics = runs["SEEDBench2_Plus"].result.metrics
    for split, overall in zip(report["split"], report["Overall"]):
        assert metrics[f"{split}.accuracy"] == pytest.approx(overall)
    # one split alone: categories and l2-categories as report_acc gives them
    metrics = runs["tdbench_rot0"].result.metrics
    assert metrics["accuracy"] == pytest.approx(REFERENCE["tdbench_rot0"]["report"]["Overall"][0])
    for category in ("count", "position"):
        assert metrics[f"category.{category}.accuracy"] == pytest.approx(REFERENCE["tdbench_rot0"]["report"][category][0])


def test_circular_accuracy_overall_and_per_category_equals_vlmevalkits(runs: dict[str, ReplayRun]) -> None:
    report = REFERENCE["MMBench_DEV_EN_V11"]["report"]
    metrics = runs["MMBench_DEV_EN_V11"].result.metrics
    assert metrics["circular_accuracy"] == pytest.approx(report["Overall"][0])
    assert metrics["dev.circular_accuracy"] == pytest.approx(report["Overall"][0])
    for category in ("animal", "color", "spatial"):
        assert metrics[f"category.{category}.circular_accuracy"] == pytest.approx(report[category][0]), category
    for l2 in ("perception", "reasoning"):
        assert metrics[f"l2_category.{l2}.circular_accuracy"] == pytest.approx(report[l2][0]), l2


def test_mmt_meta_tasks_are_the_mean_of_their_subtasks(runs: dict[str, ReplayRun]) -> None:
    report = REFERENCE["MMT-Bench_VAL_MI"]["report"]
    metrics = runs["MMT-Bench_VAL_MI"].result.metrics
    assert metrics["accuracy"] == pytest.approx(report["Overall"][report["split"].index("ALL")])
    assert metrics["anomaly_detection.accuracy"] == pytest.approx(report["anomaly_detection"][0])
    for meta, abbreviation in MMT_ABBREVIATIONS.items():
        assert metrics[f"l2_category.{meta}.category_mean_accuracy"] == pytest.approx(report[abbreviation][0]), meta


@pytest.mark.parametrize("name", ["InfoVQA_VAL", "OCRVQA_TESTCORE", "GQA_TestDev_Balanced"])
def test_vqa_scores_overall_and_per_split_equal_vlmevalkits(runs: dict[str, ReplayRun], name: str) -> None:
    report = REFERENCE[name]["report"]
    metrics = runs[name].result.metrics
    assert metrics["mean_score"] * 100 == pytest.approx(report["Overall"][0])
    for split in set(report) - {"Overall"}:
        assert metrics[f"{split}.mean_score"] * 100 == pytest.approx(report[split][0])


def test_ocrbench_counts_per_type_equal_vlmevalkits(runs: dict[str, ReplayRun]) -> None:
    report = REFERENCE["OCRBench_MINI"]["report"]
    metrics = runs["OCRBench_MINI"].result.metrics
    assert metrics["ocrbench_score"] == report["Final Score"]
    assert metrics["text_recognition.ocrbench_score"] == report["Text Recognition"]
    for kind in ("Scene Text-centric VQA", "Doc-oriented VQA", "Key Information Extraction",
                 "Handwritten Mathematical Expression Recognition"):
        assert metrics[f"{kind}.ocrbench_score"] == report[kind], kind


@pytest.mark.parametrize("name", ["CCOCR_MultiSceneOcr_Cord", "CCOCR_MultiLanOcr_Japanese", "CCOCR_MultiSceneOcr_ZhDoc"])
def test_ccocr_macro_f1_equals_vlmevalkits_total(runs: dict[str, ReplayRun], name: str) -> None:
    report = REFERENCE[name]["report"]
    metrics = runs[name].result.metrics
    assert metrics["ocr_f1"] == report["total"]
    split = next(iter({r["split"] for r in runs[name].records}))
    assert metrics[f"{split}.ocr_f1"] == report["total"]


def test_responses_reach_the_scorers_as_vlmevalkits_prediction_file_hands_them(runs: dict[str, ReplayRun]) -> None:
    """A response "N/A" is "nan" once VLMEvalKit's .xlsx prediction file is read back; so is the answer cell, so
    ANLS matches them; a carriage return is "_x000D_", so "A\\r\\n" names no option."""
    info = _by_index(runs["InfoVQA_VAL"].records)
    assert info[5]["read_response"] == REFERENCE["InfoVQA_VAL"]["prediction_read"][5] == "nan"
    assert info[5]["score"] == 1.0
    seed = _by_index(runs["SEEDBench2_Plus"].records)
    assert seed[8]["read_response"] == "A_x000D_\n" and not seed[8]["correct"]


@pytest.mark.parametrize("case", REFERENCE["list_cells"], ids=lambda c: f"{c['cell']}-{c['prediction']}")
def test_list_looking_answer_cells_score_as_the_exact_match_metrics_score_them(case: dict[str, Any]) -> None:
    """A cell that computes to a list of text is its items; "[Gambia, Niger]" is text; a list holding a number
    stops VLMEvalKit's metric (AttributeError), and "[]" gives it no number (ValueError, NaN): that row's error."""
    for name, parser in (("OCRVQA_TESTCORE", "exact_match_max"), ("GQA_TestDev_Balanced", "exact_match_mean")):
        expected = case[name]
        if expected is None or isinstance(expected, str):
            with pytest.raises(ValueError):
                score_answer(parser, case["prediction"], [case["cell"]])
        else:
            assert score_answer(parser, case["prediction"], [case["cell"]])[0] == expected, name


def _answers(tmp_path: Path, runs: dict[str, Any]) -> Path:
    answers = tmp_path / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as out:
        for name in NAMES:
            lines = (FIXTURES / "catalogue" / name / "responses.jsonl").read_text(encoding="utf-8").splitlines()
            recorded = {json.loads(line)["id"]: json.loads(line)["response"] for line in lines}
            for sample in runs[name].samples:
                out.write(json.dumps({"id": f"{name}::{sample.id}", "response": recorded[sample.metadata["source_id"]]})
                          + "\n")
    return answers


def test_one_run_by_vlmevalkit_names_gives_vlmevalkits_numbers(pytester: pytest.Pytester, tmp_path: Path,
                                                              runs: dict[str, ReplayRun]) -> None:
    """Every fixture run through the plugin by its VLMEvalKit name, answered by its recorded answers: exit 0,
    no ERROR, and each headline in the results document equal to VLMEvalKit's number."""
    out = tmp_path / "results.json"
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--mllm-bench={','.join(NAMES)}",
        *(f"--mllm-data={name}={FIXTURES / 'catalogue' / name}" for name in NAMES),
        f"--mllm=replay:{_answers(tmp_path, runs)}", "--mllm-cache=off", f"--mllm-json={out}")
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.OK, result.outlines[-30:]
    assert "error" not in outcomes and "errors" not in outcomes
    benchmarks = json.loads(out.read_text(encoding="utf-8"))["benchmarks"]
    headline = {name: benchmarks[name]["metrics"][benchmarks[name]["headline"]] for name in NAMES}
    assert headline["MMBench_DEV_EN_V11"] == pytest.approx(REFERENCE["MMBench_DEV_EN_V11"]["report"]["Overall"][0])
    assert headline["MMT-Bench_VAL_MI"] == pytest.approx(REFERENCE["MMT-Bench_VAL_MI"]["report"]["Overall"][-1])
    assert headline["tdbench_rot0"] == pytest.approx(REFERENCE["tdbench_rot0"]["report"]["Overall"][0])
    assert headline["OCRBench_MINI"] == REFERENCE["OCRBench_MINI"]["report"]["Final Score"]
    for name in ("InfoVQA_VAL", "OCRVQA_TESTCORE", "GQA_TestDev_Balanced"):
        assert headline[name] * 100 == pytest.approx(REFERENCE[name]["report"]["Overall"][0]), name
    for name in ("CCOCR_MultiSceneOcr_Cord", "CCOCR_MultiLanOcr_Japanese", "CCOCR_MultiSceneOcr_ZhDoc"):
        assert headline[name] == REFERENCE[name]["report"]["total"], name
    seed = REFERENCE["SEEDBench2_Plus"]["report"]
    for split, overall in zip(seed["split"], seed["Overall"]):
        assert benchmarks["SEEDBench2_Plus"]["metrics"][split] == pytest.approx(overall)
    for name in NAMES:
        assert benchmarks[name]["reference"]["commit"] == vlmevalkit().commit
