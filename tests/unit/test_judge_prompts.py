"""The five CEE prompts: rules, key phrases, distinct wording, and how an item is rendered."""

from __future__ import annotations

import itertools
import re

import pytest

from pytest_mllm.judge import PROMPTS, JudgeItem, Prompt, parse_verdict, render_messages

KEYS = ("Most Likely Score", "Final Score", "Final Assessment Score")


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z']+", text.lower()))


def test_three_prompts_follow_rule_1_and_two_rule_2() -> None:
    assert [p.id for p in PROMPTS] == ["p1", "p2", "p3", "p4", "p5"]
    assert [p.rule for p in PROMPTS] == [1, 1, 1, 2, 2]


def test_key_phrases_are_spread_over_the_prompts_as_documented() -> None:
    assert [p.key for p in PROMPTS] == ["Most Likely Score", "Final Score", "Final Assessment Score",
                                        "Final Score", "Most Likely Score"]
    assert {p.key for p in PROMPTS if p.rule == 1} == set(KEYS)
    assert {p.key for p in PROMPTS if p.rule == 2} == {"Most Likely Score", "Final Score"}


def test_each_prompt_asks_for_an_analysis_then_its_own_key_and_no_other() -> None:
    for p in PROMPTS:
        assert f"'{p.key}: " in p.instructions, p.id
        section = re.search(r"'(Analysis|Reasoning|Assessment|Evaluation):'", p.instructions)
        assert section is not None and section.start() < p.instructions.rindex(p.key), p.id
        others = [k for k in KEYS if k != p.key]
        assert not any(k in p.instructions for k in others), p.id
        assert "1 or 0" in p.instructions or "1 or the digit 0" in p.instructions, p.id


def test_the_wording_is_distinct() -> None:
    assert len({p.system for p in PROMPTS}) == len({p.instructions for p in PROMPTS}) == len(PROMPTS)
    for a, b in itertools.combinations(PROMPTS, 2):
        wa, wb = _words(a.instructions), _words(b.instructions)
        assert len(wa & wb) / len(wa | wb) < 0.4, (a.id, b.id)


_POINT = re.compile(r"^- (.*?)([01])\.?$", re.MULTILINE)
_WRONG = re.compile(r"\b(?:wrong|incorrect|false|mistaken|inaccurate|invalid|errors?)\b")


def _points(p: Prompt) -> list[tuple[str, int]]:
    return [(text.lower(), int(score)) for text, score in _POINT.findall(p.instructions)]


def test_each_prompt_states_the_papers_four_points_for_its_rule() -> None:
    """Tiny LVLM-eHub's appendix: the rules share three points and differ in the fourth.

    1: semantically correct → 1; 2: incorrect → 0; 3: correct and incorrect information mixed
    → 0; 4 under rule 1: correct, with extra explanation that is itself correct → 1; 4 under
    rule 2: correct, but with incorrect explanations → 0.
    """
    for p in PROMPTS:
        points = _points(p)
        assert [score for _, score in points] == ([1, 0, 0, 1] if p.rule == 1 else [1, 0, 0, 0]), p.id
        mixed, fourth = points[2][0], points[3][0]
        assert _WRONG.search(mixed) and re.search(r"\b(?:right|correct|accurate|valid|match)", mixed), p.id
        if p.rule == 1:  # the extra explanation is correct: no word of wrongness in the point
            assert not _WRONG.search(fourth), p.id
            assert re.search(r"\b(?:accurate|valid|sound|correct)\b", fourth), p.id
        else:  # the extra explanation is wrong
            assert _WRONG.search(fourth), p.id


def test_no_rule_1_prompt_rewards_a_wrong_explanation() -> None:
    """The old rule-1 wording ("a correct core keeps its 1 even when the explanation is wrong")
    contradicted the paper; nothing like it may come back."""
    for p in PROMPTS:
        text = p.instructions.lower()
        assert "even if the rest" not in text and "even when" not in text, p.id
        assert not re.search(r"(?:wrong|error|mistaken)[^.\n]*(?:keeps|still)[^.\n]*1", text), p.id


def test_a_judge_echoing_the_instructions_gives_no_vote() -> None:
    for p in PROMPTS:
        assert "(or 0)" not in p.instructions
        assert parse_verdict(p.instructions, p.key) is None, p.id


def test_render_appends_the_item_to_the_user_message() -> None:
    item = JudgeItem("What shape is the plate?", ["round"], "circle")
    for p in PROMPTS:
        system, user = render_messages(p, item)
        assert system == {"role": "system", "content": p.system}
        assert user["role"] == "user" and user["content"].startswith(p.instructions)
        assert user["content"].endswith(
            "\n\nQuestion: What shape is the plate?\nReference answer: round\nAnswer to grade: circle")


def test_render_lists_several_references_once_each_and_marks_an_empty_answer() -> None:
    item = JudgeItem(" How many dots? ", ["2", " two ", "2", ""], "  ")
    user = render_messages(PROMPTS[0], item)[1]["content"]
    assert "Reference answers (matching any one of them is enough): 2 | two\n" in user
    assert user.endswith("Answer to grade: (no answer given)")
    assert "Question: How many dots?\n" in user


def test_render_refuses_an_item_without_a_reference() -> None:
    with pytest.raises(ValueError, match="no non-empty reference"):
        render_messages(PROMPTS[0], JudgeItem("q?", ["", "  "], "a"))
