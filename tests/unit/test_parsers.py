"""Answer extraction: MME's official reading with its quirks, the lenient and POPE readings,
and multiple-choice letters."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.sample import Sample
from pytest_mllm.scoring.mme import mme_official
from pytest_mllm.scoring.parsers import OTHER, UNREADABLE, multiple_choice, multiple_choice_lenient, yes_no_lenient
from pytest_mllm.scoring.pope import pope
from pytest_mllm.scoring.score import get_parser


@pytest.mark.parametrize(
    "response, expected",
    [
        ("Yes", "yes"), ("no", "no"), ("NO", "no"), ("Yes.", "yes"), ("No, there is not.", "no"),
        ("nope", "no"), ("not sure", "no"), ("Yesterday", "yes"), ("y", OTHER), ("", OTHER),
        ("The answer is yes", OTHER), ("I think no", OTHER), (" yes", "yes"), ("  yes", OTHER),
        ("   yes", OTHER), ("noyes", "no"), ("xyes", "yes"), ("Nah", OTHER), ("know", "no"),
        ("yes\n", "yes"),
    ],
)
def test_mme_official_reading_keeps_the_quirks(response: str, expected: str) -> None:
    assert mme_official(response) == expected


@given(st.text(max_size=12))
def test_mme_official_only_looks_at_four_characters(text: str) -> None:
    # Anything after the fourth character never changes the reading (unless exact yes/no).
    if text.lower() not in ("yes", "no"):
        assert mme_official(text + "yes no") == mme_official(text[:4] + "!" * 4) or len(text) < 4


@pytest.mark.parametrize(
    "response, expected",
    [("The answer is yes", "yes"), ("I think no", "no"), ("Not at all.", "no"),
     ("Sure! Yes, it is.", "yes"), ("y", OTHER), ("Maybe", OTHER)],
)
def test_lenient_reading_finds_the_first_yes_or_no_word(response: str, expected: str) -> None:
    assert yes_no_lenient(response) == expected


@pytest.mark.parametrize(
    "response, expected",
    [("No, there is no dog.", "no"), ("There is not a dog.", "no"), ("Yes. No.", "yes"),
     ("Yes, there is a dog", "yes"), ("I see a dog", "yes")],
)
def test_pope_reading_uses_the_first_sentence(response: str, expected: str) -> None:
    assert pope(response) == expected


CHOICE = Sample(id="q", benchmark="b", task="t", question="?", answer="B", answer_type="choice",
                choices=(("A", "a red circle"), ("B", "square"), ("C", "triangle"), ("D", "star")))


@pytest.mark.parametrize(
    "response, expected",
    [("B", "B"), ("(B)", "B"), ("B.", "B"), ("Answer: B", "B"), ("The answer is C", "C"),
     ("B. square", "B"), ("C) triangle", "C"), ("It is a square.", "B"), ("triangle", "C"),
     ("A dog is next to the square", "B"), ("A", "A"), ("(A) a red circle", "A"),
     ("B or C", OTHER), ("I don't know", OTHER), ("E", OTHER), ("square or triangle", OTHER)],
)
def test_lenient_multiple_choice_reads_letters_and_option_texts(response: str, expected: str) -> None:
    assert multiple_choice_lenient(response, CHOICE) == expected
    # VLMEvalKit's reading (the `choice` parser) agrees but for what it cannot decide
    assert multiple_choice(response, CHOICE) == (UNREADABLE if expected == OTHER else expected)


def test_unknown_parser_lists_the_known_ones() -> None:
    with pytest.raises(KeyError, match="known parsers: ccocr_ocr, choice, choice_exact_match, choice_lenient, choice_llava, "
                                       "code_bleu4, exact, exact_stripped, llavabench, mathvista, mme"):
        get_parser("fuzzy")
