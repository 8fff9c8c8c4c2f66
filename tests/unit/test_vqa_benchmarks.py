"""The OCR/VQA benchmarks' scoring rules: TextVQA's normalisation and VQA accuracy, DocVQA's ANLS
and ChartQA's relaxed accuracy on the whole response, OCRBench's substring match, VLMEvalKit's
yes/no reading and HallusionBench's aAcc/fAcc/qAcc. Expected numbers are the reference code's on
fixtures/vqa_benchmarks (reference_scores.json; see that folder's README for the command)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pytest_mllm.record import new_record
from pytest_mllm.scoring.hallusionbench import scope_hallusionbench
from pytest_mllm.scoring.metrics import ScopeView
from pytest_mllm.scoring.ocrbench import ocrbench_hme_match, ocrbench_match
from pytest_mllm.scoring.parsers import yes_no_vlmevalkit
from pytest_mllm.scoring.references import list_literal, normalize_vqa_answer
from pytest_mllm.scoring.textvqa import normalize_textvqa_answer
from pytest_mllm.scoring.score import get_parser, score_answer

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "vqa_benchmarks"
REFERENCE = json.loads((FIXTURES / "reference_scores.json").read_text(encoding="utf-8"))


def _rows(folder: str, tsv: str) -> list[tuple[str, str, str]]:
    """(index, answer cell, response) of a TSV fixture."""
    lines = (FIXTURES / folder / tsv).read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    responses = {str(json.loads(line)["id"]): json.loads(line)["response"]
                 for line in (FIXTURES / folder / "responses.jsonl").read_text(encoding="utf-8").splitlines()}
    cells = [dict(zip(header, line.split("\t"))) for line in lines[1:]]
    return [(c["index"], c["answer"], responses[c["index"]]) for c in cells]


def test_textvqa_scores_equal_vlmevalkit_per_sample() -> None:
    expected = REFERENCE["TextVQA_VAL"]["per_sample"]
    for index, cell, response in _rows("textvqa", "TextVQA_VAL.tsv"):
        score, _ = score_answer("textvqa_score", get_parser("textvqa_score").read(response, None), [cell])
        assert score == pytest.approx(expected[index], rel=1e-12), index
        assert normalize_textvqa_answer(response) == REFERENCE["TextVQA_VAL"]["eval_pred"][index]


def test_textvqa_normalisation_differs_from_lmms_evals_where_vlmevalkit_does() -> None:
    assert normalize_textvqa_answer("5.") == "5." and normalize_vqa_answer("5.") == "5"
    assert normalize_textvqa_answer("x,y") == "x y" and normalize_vqa_answer("x,y") == "xy"
    assert normalize_textvqa_answer("The  Two dogs!") == normalize_vqa_answer("The  Two dogs!") == "2 dogs"


def test_textvqa_single_reference_scores_zero_as_in_vlmevalkit() -> None:
    assert score_answer("textvqa_score", "stop", ["stop"]) == (0.0, False)


def test_docvqa_anls_equals_vlmevalkit_per_sample() -> None:
    for index, cell, response in _rows("docvqa", "DocVQA_VAL.tsv"):
        if response == "n/a":  # VLMEvalKit's spreadsheet round trip read this answer as NaN
            continue
        distances = ast.literal_eval(REFERENCE["DocVQA_VAL"]["eval_match"][index])
        best = 1 - min(distances)
        score, correct = score_answer("docvqa_anls", get_parser("docvqa_anls").read(response, None), [cell])
        assert score == pytest.approx(0.0 if best < 0.5 else best, rel=1e-12), index
        assert correct is (score == 1.0)


def test_chartqa_relaxed_equals_vlmevalkit_per_sample() -> None:
    expected = REFERENCE["ChartQA_TEST"]["per_sample"]
    for index, cell, response in _rows("chartqa", "ChartQA_TEST.tsv"):
        assert score_answer("chartqa_relaxed", get_parser("chartqa_relaxed").read(response, None), [cell])[0] == expected[index]


def test_ocrbench_matches_equal_its_script_per_sample() -> None:
    expected = REFERENCE["OCRBench_official_result"]
    lines = (FIXTURES / "ocrbench" / "OCRBench.tsv").read_text(encoding="utf-8").splitlines()[1:]
    categories = {line.split("\t")[0]: line.split("\t")[4] for line in lines}
    for index, cell, response in _rows("ocrbench", "OCRBench.tsv"):
        parser = "ocrbench_hme" if categories[index].startswith("Handwritten Mathematical") else "ocrbench"
        assert score_answer(parser, response, [cell])[0] == expected[index], index


def test_ocrbench_rules() -> None:
    assert ocrbench_match("The word is Centre.", ["CENTRE"]) == 1.0
    assert ocrbench_match("hello\nworld", ["Hello World"]) == 1.0
    assert ocrbench_match("\uff21\uff22\uff23", ["abc"]) == 0.0
    assert ocrbench_hme_match("$x^{2} + 1$", ["x ^ { 2 } + 1\n"]) == 1.0
    assert ocrbench_hme_match("X^{2}+1", ["x ^ { 2 } + 1\n"]) == 0.0


def test_list_literal_reads_answer_cells_safely() -> None:
    assert list_literal(["['a', 'b']"]) == ["a", "b"]
    assert list_literal(["[1, 2.5]"]) == ["1", "2.5"]
    assert list_literal(["plain"]) == ["plain"]
    assert list_literal(["a", "b"]) == ["a", "b"]
    # text that only looks like a list is one answer, as VLMEvalKit's istype(answer, list) reads it
    assert list_literal(["['a', 'b'"]) == ["['a', 'b'"]
    assert list_literal(["[Gambia, Niger]"]) == ["[Gambia, Niger]"]
    assert list_literal(["[__import__('os').getcwd()]"]) == ["[__import__('os').getcwd()]"]  # never evaluated
    with pytest.raises(ValueError, match="the reference cannot score either"):
        list_literal(["[]"])


@pytest.mark.parametrize(("response", "read"), [
    ("Yes", "Yes"), ("No, it is not.", "No"), ("Yes and no", "Unknown"), ("I cannot tell", "Unknown"),
    ("The answer is yes.", "Yes"), ("NO.", "No"), ("yes/no", "Unknown"), ("Yesterday", "Unknown"),
])
def test_yes_no_vlmevalkit(response: str, read: str) -> None:
    assert yes_no_vlmevalkit(response) == read


def test_yes_no_vlmevalkit_equals_reference_on_fixture() -> None:
    for index, _, response in _rows("hallusionbench", "HallusionBench.tsv"):
        assert yes_no_vlmevalkit(response) == REFERENCE["HallusionBench_extracted"][index], index


def _record(index: str, l2: str, correct: bool, status: str = "") -> dict:
    record = new_record(id=f"{index[:2]}::{index}", benchmark="hallusionbench", task=index[:2])
    record.update(l2_category=l2, correct=correct, status=status or ("correct" if correct else "incorrect"))
    return record


def test_hallusionbench_accuracies_and_groups() -> None:
    records = [
        _record("VD_figure_1_0_0_0", "figure", True), _record("VD_figure_1_0_0_1", "figure", False),
        _record("VD_figure_1_0_1_0", "figure", True), _record("VD_figure_1_0_1_1", "figure", True),
        _record("VS_figure_1_0_1_1", "figure", True),  # same l2, set and figure as a VD row: one figure
        _record("VD_map_1_3_0_0", "map", True, status="error"),  # errors never count
    ]
    values = scope_hallusionbench(ScopeView("overall", records, {}))
    assert values["a_acc"] == 4 / 5
    assert values["f_acc"] == 1 / 2  # figure 0 has a wrong question
    assert values["q_acc"] == 1 / 2  # question 1 is wrong on figure 0
    assert scope_hallusionbench(ScopeView("task", records[-1:], {})) == {}


def test_hallusionbench_index_without_parts_is_its_own_group() -> None:
    records = [_record("VD_odd", "figure", True), _record("VD_other", "figure", False)]
    assert scope_hallusionbench(ScopeView("overall", records, {})) == {"a_acc": 0.5, "f_acc": 0.5, "q_acc": 0.5}


def test_fixtures_are_up_to_date() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_vqa_fixtures", FIXTURES / "make_fixtures.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
