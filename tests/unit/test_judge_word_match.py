"""Word matching, the cheap baseline: normalization, whole-word containment, empty inputs.

`normalize` is the lenient reading's; `word_match` reads as the authors' VQAEval by default
(compared with their code case by case in test_judge_word_match_reference.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.judge import normalize, word_match

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "judge"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "replies.json").read_text(encoding="utf-8"))["cases"]


def test_normalize() -> None:
    assert normalize("The Dog, a CAT; an owl!") == ["dog", "cat", "owl"]
    assert normalize("Two dots and none of ten") == ["2", "dots", "and", "0", "of", "10"]
    assert normalize("1,000 people paid $3.50.") == ["1000", "people", "paid", "3.50"]
    assert normalize("don't  stop_now\n(really)") == ["don", "t", "stop", "now", "really"]
    assert normalize("STRASSE") == normalize("straße") == ["strasse"]
    assert normalize("") == normalize("the") == normalize("?!") == []


@pytest.mark.parametrize(("answer", "references", "expected"), [
    ("The car is red.", "red", True),
    ("It is reddish.", "red", False),  # whole words only
    ("Red", "RED", True),
    ("circle", "round", False),  # the paper's example of what word matching misses
    ("It is dark red.", "dark red", True),
    ("It is red and dark.", "dark red", False),  # a multi-word reference must appear in order
    ("There are two dots.", "2", True),
    ("There are 2 dots.", "two", True),
    ("There are twenty dots.", "2", False),
    ("Stop!", "stop", True),
    ("the dog", "a dog", True),
    ("It costs 3.5 dollars", "3.5", True),
    ("It costs 3.5 dollars", "5", True),  # the authors' \b regex finds "5" in "3.5" (lenient: False)
    ("A kitten.", ["dog", "puppy"], False),
    ("A puppy.", ["dog", "puppy"], True),
    ("A puppy.", ["", "puppy"], True),  # an empty reference is skipped, not matched
])
def test_word_match(answer: str, references: str | list[str], expected: bool) -> None:
    assert word_match(answer, references) is expected


def test_the_lenient_reading_keeps_numbers_whole() -> None:
    assert word_match("It costs 3.5 dollars", "5", lenient=True) is False
    assert word_match("It costs 3.5 dollars", "3.5", lenient=True) is True


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_word_match_on_the_recorded_cases(case: dict[str, Any]) -> None:
    assert word_match(case["item"]["answer"], case["item"]["references"]) is case["word_match"]


@pytest.mark.parametrize("answer", ["", "   ", "\n", "...", "the"])
def test_an_empty_answer_is_never_correct(answer: str) -> None:
    assert word_match(answer, "red") is False


@pytest.mark.parametrize(("references", "authors"), [("", True), ([], False), (["", "  "], True), (["the", "?"], True)])
def test_no_usable_reference_is_scored_by_the_authors_reading_and_an_error_of_the_lenient_one(
        references: str | list[str], authors: bool) -> None:
    assert word_match("red", references) is authors  # VQAEval's regex: an empty reference matches any word
    with pytest.raises(ValueError, match="no usable reference"):
        word_match("red", references, lenient=True)
