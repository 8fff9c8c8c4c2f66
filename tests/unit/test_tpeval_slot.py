"""PromptSlot: splitting templates into the optimized instruction, rendering candidates back, prefix mode."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.engine.evaluator import render_prompt
from pytest_mllm.sample import Sample
from pytest_mllm.tpeval.slot import PromptSlot, escape_braces, prefix_instruction

MMBENCH = "{hint}{question}\n{options}\nAnswer with the option's letter from the given choices directly."
SAMPLE = Sample(id="s1", benchmark="b", task="existence", question="Is there a dog?", answer="Yes",
                choices=(("A", "yes"), ("B", "no")), metadata={"hint": "look left"})


def test_prompt_mode_picks_the_longest_static_segment() -> None:
    slot = PromptSlot.from_template("{question} Please answer yes or no.")
    assert (slot.mode, slot.instruction) == ("prompt", "Please answer yes or no.")
    slot = PromptSlot.from_template(MMBENCH)
    assert slot.mode == "prompt"
    assert slot.instruction == "Answer with the option's letter from the given choices directly."


def test_render_replaces_exactly_the_segment() -> None:
    slot = PromptSlot.from_template("Q: {question} Please answer yes or no.\n")
    assert slot.render("Reply yes or no only.") == "Q: {question} Reply yes or no only.\n"
    slot = PromptSlot.from_template(MMBENCH)
    assert slot.render("Give the letter.") == "{hint}{question}\n{options}\nGive the letter."


def test_render_of_the_instruction_gives_the_template_back() -> None:
    for template in ("{question} Please answer yes or no.", MMBENCH, "Look {{carefully}} now at {question} please"):
        slot = PromptSlot.from_template(template)
        assert slot.render(slot.instruction) == template


def test_escaped_braces_in_the_template_are_plain_in_the_instruction() -> None:
    slot = PromptSlot.from_template("{question} Answer in JSON like {{\"a\": 1}} please.")
    assert slot.instruction == 'Answer in JSON like {"a": 1} please.'


@given(st.text(min_size=1, max_size=60))
def test_any_instruction_renders_to_a_formattable_template(instruction: str) -> None:
    for template in ("{question} Please answer yes or no.", "{question}", MMBENCH):
        slot = PromptSlot.from_template(template, task="existence")
        prompt = render_prompt(slot.render(instruction), SAMPLE)
        assert instruction in prompt
        assert "Is there a dog?" in prompt


def test_auto_falls_back_to_prefix_mode() -> None:
    for template in ("{question}", "{question}\n{options}", "{hint}{question} Answer:"):
        slot = PromptSlot.from_template(template, task="color_recognition")
        assert slot.mode == "prefix"
        assert slot.instruction == "Answer the questions about color recognition"
        assert slot.render("Look at colours") == "Look at colours\n" + template


def test_explicit_prefix_mode_on_a_template_with_instruction_text() -> None:
    slot = PromptSlot.from_template("{question} Please answer yes or no.", "prefix", task="ocr")
    assert slot.mode == "prefix"
    assert slot.render(slot.instruction) == "Answer the questions about ocr\n{question} Please answer yes or no."


def test_prompt_mode_without_static_text_is_an_error() -> None:
    with pytest.raises(ValueError, match="prefix mode"):
        PromptSlot.from_template("{question}\n{options}", "prompt")


def test_explicit_prompt_mode_on_a_short_segment() -> None:
    slot = PromptSlot.from_template("{question} Answer:", "prompt")
    assert (slot.mode, slot.instruction) == ("prompt", "Answer:")


def test_unknown_mode() -> None:
    with pytest.raises(ValueError, match="auto, prompt, prefix"):
        PromptSlot.from_template("{question}", "suffix")


def test_prefix_instruction_and_escape() -> None:
    assert prefix_instruction("artwork_emotion_recognition") == "Answer the questions about artwork emotion recognition"
    assert prefix_instruction("") == "Answer the questions"
    assert escape_braces("{a}}") == "{{a}}}}"
