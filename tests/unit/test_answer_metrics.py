"""LIME-M's per-sample metrics against hand-computed values: ANLS (threshold edge included),
ChartQA's relaxed accuracy (exactly 5 %, just over, percent signs, text), the VQA match score
(1–4 of 10 humans agreeing) and its answer normalisation, caption BLEU-4 and its threshold;
the parsers that read the answer, the records they score, and the mean_score metric."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.evaluator import sample_record
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.sample import Response, Sample
from pytest_mllm.scoring.mean_score import mean_score
from pytest_mllm.scoring.metrics import benchmark_metrics, known_metrics
from pytest_mllm.scoring.references import (
    anls,
    caption_bleu4,
    levenshtein,
    normalize_vqa_answer,
    relaxed_accuracy,
    relaxed_correct,
    vqa_match,
)
from pytest_mllm.scoring.score import PARSERS, get_parser, normalize_answer, score_answer, score_record

# --------------------------------------------------------------------------- ANLS


@pytest.mark.parametrize("a, b, distance", [("", "", 0), ("", "abc", 3), ("kitten", "sitting", 3),
                                            ("flaw", "lawn", 2), ("abc", "abc", 0), ("ab", "ba", 2)])
def test_levenshtein(a: str, b: str, distance: int) -> None:
    assert levenshtein(a, b) == levenshtein(b, a) == distance


@pytest.mark.parametrize(
    "answer, references, expected",
    [
        ("inv-0042", ["INV-0042"], 1.0),  # case does not count
        ("Jane  Smith", ["jane smith"], 1.0),  # whitespace collapses …
        ("Jane  Smyth", ["Jane Smith"], 1 - 1 / 11),  # … but the length is taken as given: 1 edit / 11
        ("Jane Smyth", ["Jane Smith"], 0.9),  # one edit in ten characters
        ("$19.99", ["$12.50"], 0.5),  # three edits in six: exactly the threshold, kept
        ("abcdefg", ["abcwxyz"], 0.0),  # four edits in seven: 3/7 < 0.5, zeroed
        ("abcdxyz", ["abcdefg"], 4 / 7),  # three edits in seven: kept
        ("0042", ["INV-0042", "0042"], 1.0),  # the best reference counts
        ("unknown", ["1999"], 0.0),
        ("", [""], 1.0),
    ],
)
def test_anls_of_known_strings(answer: str, references: list[str], expected: float) -> None:
    assert anls(answer, references) == pytest.approx(expected, abs=1e-15)


def test_anls_threshold_is_inclusive_and_correct_needs_an_exact_match() -> None:
    assert anls("ab", ["ax"]) == 0.5 and anls("ab", ["xy"]) == 0.0
    assert score_answer("anls", "$19.99", ["$12.50"]) == (0.5, False)
    assert score_answer("anls", "Jane Smyth", ["Jane Smith"]) == (0.9, False)
    assert score_answer("anls", " INV-0043", ["inv-0042"]) == (1.0 - 1 / 9, False)  # the space counts in the length
    assert score_answer("anls", "inv-0042", ["INV-0042"]) == (1.0, True)


# --------------------------------------------------------------------------- relaxed accuracy


@pytest.mark.parametrize(
    "answer, target, right",
    [
        ("105", "100", True), ("95", "100", True),  # exactly 5 %
        ("105.01", "100", False), ("94.99", "100", False),  # 5.01 %
        ("-105", "-100", True), ("21", "20", True), ("21.5", "20", False),
        ("50%", "0.5", True), ("5%", "0.05", True), ("0.5", "50%", True),  # a % sign divides by 100
        ("50", "50%", False), ("52%", "50%", True),
        ("Blue", "blue", True), ("blue.", "blue", False), ("1,000", "1000", False),  # text: exact, no case
        ("0", "0", True), ("0.0", "0", False), ("0.001", "0", False),  # a zero target is compared as text
        (" 12 ", "12", True),  # Python's float() ignores surrounding spaces
        ("twelve", "12", False),
    ],
)
def test_relaxed_correctness(answer: str, target: str, right: bool) -> None:
    assert relaxed_correct(answer, target) is right


def test_relaxed_accuracy_is_one_or_zero_over_any_reference() -> None:
    assert relaxed_accuracy("105", ["3", "100"]) == 1.0
    assert relaxed_accuracy("105.01", ["100"]) == 0.0
    assert score_answer("relaxed_accuracy", "50%", ["0.5"]) == (1.0, True)


# --------------------------------------------------------------------------- VQA match score


@pytest.mark.parametrize(
    "text, normal",
    [
        ("Two", "2"), ("none", "0"), ("ten dogs", "10 dogs"), ("eleven", "eleven"),  # number words zero–ten
        ("The Exit", "exit"), ("an apple a day", "apple day"),  # articles dropped
        ("stop.", "stop"), ("3.5", "3.5"), ("yes!", "yes"), ("cat!", "cat"),  # periods before digits stay
        ("black-and-white", "black and white"),  # a mark glued to words becomes a space …
        ("black - white", "black white"),  # … but is deleted when it touches a space anywhere
        ("3,000", "3000"), ("what?", "what"),  # commas and question marks always go
        ("dont", "don't"), ("Im", "im"), ("what's up", "what 's up"),  # contractions, possessive split
        ("  New\tYork\n", "new york"), ("(red)", "red"),
    ],
)
def test_vqa_normalisation(text: str, normal: str) -> None:
    assert normalize_vqa_answer(text) == normal


@pytest.mark.parametrize("k, expected", [(0, 0.0), (1, 0.3), (2, 0.6), (3, 0.9), (4, 1.0), (10, 1.0)])
def test_vqa_match_with_ten_humans(k: int, expected: float) -> None:
    # min(1, agreeing others / 3) averaged over the ten leave-one-out subsets: exact, then rounded once
    humans = ["red"] * k + ["blue", "green", "navy", "teal", "pink", "gray", "gold", "plum", "rust", "jade"][:10 - k]
    assert vqa_match("Red.", humans) == expected


def test_vqa_match_normalises_both_sides_and_counts_duplicates() -> None:
    assert vqa_match("Two", ["2", "2", "two", "2"] + ["3"] * 6) == 1.0
    assert vqa_match("The Exit", ["exit", "Exit"] + ["way out"] * 8) == 0.6
    assert vqa_match("cat", ["cat"]) == 0.0 == vqa_match("dog", ["cat"])  # one reference: no other human agrees


def test_vqa_match_threshold_is_two_of_ten_humans() -> None:
    assert score_answer("vqa_match", "exit", ["exit"] * 2 + ["out"] * 8) == (0.6, True)
    assert score_answer("vqa_match", "exit", ["exit"] + ["out"] * 9) == (0.3, False)


# --------------------------------------------------------------------------- caption BLEU-4

REFS = ["A green circle in the center of a gray picture.", "A small green dot on a grey background."]


def test_caption_bleu4_of_known_captions() -> None:
    # pycocoevalcap's constants: (matches + 1e-15) / (candidates + 1e-9) per order
    same = caption_bleu4("A red square on a white background.", ["A red square on a white background."])
    assert same == pytest.approx(1.0, abs=1e-9) and same < 1.0
    # case and punctuation tokens do not count
    assert caption_bleu4("a red square, on a white background!", ["A red square on a white background."]) == same
    # one word changed: 6/7, 4/6, 3/5, 2/4 n-gram precisions, equal lengths
    one_word = caption_bleu4("a red square on a white background",
                             ["a red square on a blue background", "a square painted red"])
    assert one_word == pytest.approx((6 / 35) ** 0.25, rel=1e-9)
    # one shared 4-gram in 16 words: 6/16 (two "a" clipped), 3/15, 2/14, 1/13
    long = caption_bleu4("a green circle in a field of tall grass under a dark and cloudy night sky", REFS)
    assert long == pytest.approx((3 / 3640) ** 0.25, rel=1e-9)
    # brevity penalty against the closest reference length (8): e^(1 - 8/4)
    assert caption_bleu4("a green circle in", REFS) == pytest.approx(2.718281828459045 ** -1, rel=1e-9)
    # no 3- or 4-grams at all: not 0 but the constants' (1e-15 / 1e-9) ** (2/4) times the rest
    assert 0 < caption_bleu4("a picture", REFS) < 1e-6
    assert caption_bleu4("", REFS) == 0.0  # the brevity penalty exp(1 - 8 / 1e-15)


def test_caption_threshold_is_bleu4_of_0_2() -> None:
    assert score_answer("caption_bleu4", "a green circle in", REFS)[1] is True  # 0.368
    score, correct = score_answer("caption_bleu4",
                                  "a green circle in a field of tall grass under a dark and cloudy night sky", REFS)
    assert 0 < score < 0.2 and correct is False


def test_a_missing_sacrebleu_errors_the_caption_sample_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu", None)
    monkeypatch.setitem(sys.modules, "sacrebleu.tokenizers.tokenizer_13a", None)
    record = _scored("caption_bleu4", "a red square", ["a red square"])
    assert record["status"] == "error" and "pip install sacrebleu" in record["error"] and record["score"] is None


# --------------------------------------------------------------------------- parsers and records


def test_scored_parsers_are_registered_and_read_the_whole_response() -> None:
    scored = {name for name, parser in PARSERS.entries().items() if parser.scorer is not None}
    assert scored >= {"anls", "relaxed_accuracy", "vqa_match", "caption_bleu4"}
    assert scored <= set(PARSERS.names())
    read = get_parser("anls").read  # lmms-eval hands the whole response to LIME-M's scoring functions
    assert read("  blue\nThe bars are blue.\n", None) == "  blue\nThe bars are blue.\n"  # type: ignore[arg-type]
    assert normalize_answer("  INV-0042 ", "anls") == "INV-0042"  # shown as given
    with pytest.raises(KeyError, match="scored against references: anls, caption_bleu4"):
        get_parser("bleu")


def _sample(references: list[str] | Any) -> Sample:
    return Sample(id="t::1", benchmark="b", task="t", question="q?", answer="x", answer_type="open",
                  metadata={"references": references})


def _scored(parser: str, response: str, references: list[str] | Any) -> dict[str, Any]:
    spec = BenchmarkSpec(path=Path("b.yaml"), name="b", loader="jsonl", parser=parser)
    sample = _sample(references)
    return score_record(sample_record(sample, spec, "q?"), sample, Response(response, latency_s=0.5))


def test_records_carry_the_score_and_its_verdict() -> None:
    record = _scored("anls", "Jane Smyth", ["Jane Smith"])
    assert (record["parsed"], record["score"], record["correct"], record["status"]) == ("Jane Smyth", 0.9, False,
                                                                                      "incorrect")
    assert _scored("anls", "Jane Smyth\nmore text", ["Jane Smith"])["score"] == 0.0  # the whole response
    assert record["word_match"] is None and record["judge"] is None  # never sent to a judge
    record = _scored("vqa_match", "Two", ["2", "2", "two", "2"] + ["3"] * 6)
    assert (record["score"], record["status"]) == (1.0, "correct")


def test_bad_references_error_the_sample() -> None:
    record = _scored("anls", "a", "not a list")
    assert record["status"] == "error" and "must be a list of strings" in record["error"]
    assert _scored("anls", "a", [1, 2])["status"] == "error"


def test_other_parsers_leave_the_score_empty() -> None:
    spec = BenchmarkSpec(path=Path("b.yaml"), name="b", loader="jsonl", parser="mme")
    sample = Sample(id="t::2", benchmark="b", task="t", question="q?", answer="Yes")
    record = score_record(sample_record(sample, spec, "q?"), sample, Response("yes"))
    assert record["score"] is None and record["status"] == "correct"


# --------------------------------------------------------------------------- mean_score


def rec(task: str, correct: bool, score: float | None = None, status: str | None = None) -> dict[str, Any]:
    return {"task": task, "pair_group": None, "answer": "a", "parsed": "a", "correct": correct, "score": score,
            "status": status or ("correct" if correct else "incorrect"), "answer_type": "open",
            "category": None, "l2_category": None}


def test_mean_score_per_task_group_and_overall() -> None:
    assert "mean_score" in known_metrics()
    records = [rec("doc", True, 1.0), rec("doc", False, 0.9), rec("doc", False, 0.5), rec("doc", False, 0.0),
               rec("yn", True), rec("yn", False),  # no score: counted 1.0 / 0.0 by correctness
               rec("doc", False, 0.7, status="error")]  # errors never score
    m = benchmark_metrics(records, ["accuracy", "mean_score"], {"all": ["doc", "yn"]})
    assert m["tasks"]["doc"] == {"count": 4, "errors": 1, "accuracy": 0.25, "mean_score": 0.6}
    assert m["tasks"]["yn"]["mean_score"] == 0.5 == m["tasks"]["yn"]["accuracy"]
    assert m["overall"]["mean_score"] == m["groups"]["all"]["mean_score"] == pytest.approx(3.4 / 6, abs=1e-15)
    assert mean_score([rec("t", False, 0.1)] * 10) == pytest.approx(0.1, abs=1e-16)


def test_mean_score_only_when_asked() -> None:
    m = benchmark_metrics([rec("doc", True, 1.0)], ["accuracy"], {})
    assert "mean_score" not in m["overall"] and "mean_score" not in m["tasks"]["doc"]
