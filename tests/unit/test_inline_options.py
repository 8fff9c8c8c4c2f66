"""Options written into a question's text (Lin-Chen/MMStar, lmms-lab/RealWorldQA) read out of it."""

from __future__ import annotations

import pytest

from pytest_mllm.loaders.inline_options import split_options


def test_an_options_run_is_split_at_each_next_letter() -> None:
    text = "Which is right?\nOptions: A: red, green and blue, B: 3.5, C: B: not a marker, D: none."
    assert split_options(text) == ("Which is right?", (("A", "red, green and blue"), ("B", "3.5"),
                                                      ("C", "B: not a marker"), ("D", "none.")))


def test_the_last_options_run_counts() -> None:
    text = "Read the Options: A: panel.\nOptions: A: yes, B: no"
    assert split_options(text) == ("Read the Options: A: panel.", (("A", "yes"), ("B", "no")))


def test_option_lines_end_at_the_first_line_that_is_not_the_next_option() -> None:
    text = "How many?\nA. Two\nB. Three\nC. Four\nPlease answer directly with only the letter."
    assert split_options(text) == ("How many?", (("A", "Two"), ("B", "Three"), ("C", "Four")))


@pytest.mark.parametrize("text", ["What is the slope? Answer with a number.", "Is it A. or B.?",
                                  "Name it.\nA. only one option line", "Skip.\nB. starts at B\nC. then C"])
def test_a_question_without_options_comes_back_whole(text: str) -> None:
    assert split_options(text) == (text.strip(), ())
