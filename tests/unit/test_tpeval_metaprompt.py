"""The meta-prompt, the introspection request, and reading the optimizer's replies."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.tpeval.metaprompt import (
    MAX_INTROSPECTION_CHARS,
    PROMPT_CLOSE,
    PROMPT_OPEN,
    SHOWN_EXAMPLES,
    Example,
    extract_introspection,
    extract_prompt,
    extract_prompt_with_reason,
    introspection_messages,
    optimizer_messages,
)
from pytest_mllm.tpeval.score import Candidate, top_k

ORIGINAL = "Please answer yes or no."
EXAMPLES = [Example(f"Is there a {thing} in the image?", answer, None) for thing, answer in
            (("dog", "yes"), ("cat", "no"), ("car", "yes"), ("tree", "no"))]


def candidates() -> list[Candidate]:
    return [Candidate(r, f"prompt number {r}", 0.1 * r, 0.9, 0.05 * r + 0.1, f"introspection {r}") for r in range(10)]


def user_text(messages: list[dict]) -> str:
    assert [m["role"] for m in messages] == ["system", "user"]
    assert all(isinstance(m["content"], str) for m in messages)
    return messages[1]["content"]


def test_meta_prompt_holds_history_examples_counter_and_markers() -> None:
    history = top_k(candidates(), 8)
    text = user_text(optimizer_messages(task="existence", description="Does the object exist?", original=ORIGINAL,
                                        history=history, examples=EXAMPLES, counter=7, mode="prompt"))
    for c in history:
        assert f"Prompt: {c.prompt}\n" in text
        assert f"Score: {c.score:.3f}; accuracy: {100 * c.accuracy:.1f}%" in text
        assert f"Why the model erred: {c.introspection}" in text
    assert "prompt number 0\n" not in text and "prompt number 1\n" not in text  # outside the top 8
    assert "introspection 1" not in text
    for ex in EXAMPLES[:SHOWN_EXAMPLES]:
        assert f"Question: {ex.question}" in text
    assert EXAMPLES[SHOWN_EXAMPLES].question not in text
    assert "Correct answer: yes" in text
    assert "at most 7 words" in text
    assert PROMPT_OPEN in text and PROMPT_CLOSE in text
    assert f"The original prompt: {ORIGINAL}" in text
    assert "Task: existence" in text and "Does the object exist?" in text
    assert "vision-language model" in text and "accuracy" in text
    # TP-Eval §4.3's instruction part: a prompt different from those above, scoring higher given the introspection
    assert "different from all the prompts above" in text and "given why the model erred" in text


def test_history_runs_from_worst_to_best_and_names_the_best() -> None:
    text = user_text(optimizer_messages(task="t", description="", original=ORIGINAL, history=top_k(candidates(), 3),
                                        examples=[], counter=3, mode="prompt"))
    assert text.index("prompt number 7") < text.index("prompt number 8") < text.index("prompt number 9")
    assert "best prompt so far: prompt number 9" in text
    assert "About the task" not in text and "Examples from this task" not in text


def test_prefix_mode_is_described() -> None:
    prefix = user_text(optimizer_messages(task="t", description="", original="Answer the questions about t",
                                          history=[], examples=[], counter=3, mode="prefix"))
    prompt = user_text(optimizer_messages(task="t", description="", original="x", history=[], examples=[],
                                          counter=3, mode="prompt"))
    assert "before every question" in prefix and "before every question" not in prompt
    assert "best prompt so far: Answer the questions about t" in prefix


def test_introspection_request_shows_question_answer_and_response() -> None:
    wrong = [Example("Is there a cat?", "no", "Yes, there is."), Example("Is it red?", "yes", None)]
    text = user_text(introspection_messages(task="existence", prompt=ORIGINAL, wrong=wrong))
    assert ORIGINAL in text
    assert "Question: Is there a cat?" in text and "Correct answer: no" in text
    assert "The model answered: Yes, there is." in text and "(no answer)" in text
    assert "2-3 sentences" in text


def extract(reply: object, original: str = ORIGINAL, max_words: int = 40) -> str | None:
    return extract_prompt(reply, original=original, max_words=max_words)  # type: ignore[arg-type]


@pytest.mark.parametrize("reply, expected", [
    ("<prompt>Answer yes or no only.</prompt>", "Answer yes or no only."),
    ("Sure! Here it is:\n<prompt>\n  Answer yes or no only.\n</prompt>\nGood luck.", "Answer yes or no only."),
    ("<PROMPT>Answer with one word: yes or no.</PROMPT>", "Answer with one word: yes or no."),
    ('<prompt>"Answer yes or no only."</prompt>', "Answer yes or no only."),
    ("<prompt>“Answer yes or no only.”</prompt>", "Answer yes or no only."),
    ("<prompt>Prompt: Answer yes or no only.</prompt>", "Answer yes or no only."),
    ("<prompt>- New prompt: 'Answer yes or no only.'</prompt>", "Answer yes or no only."),
    ("<prompt>**Prompt:** Answer yes or no only.</prompt>", "Answer yes or no only."),
    ("<prompt>first try</prompt> on second thought <prompt>Answer yes or no only.</prompt>",
     "Answer yes or no only."),
    ("<think>hmm, <prompt>no</prompt></think><prompt>Answer yes or no only.</prompt>", "Answer yes or no only."),
    ("<prompt>Answer yes\n  or no only.</prompt>", "Answer yes or no only."),
    ("<prompt>Answer yes or no only.", "Answer yes or no only."),  # the closing marker cut off
    ("Answer yes or no only.", "Answer yes or no only."),  # a short reply without markers
    ("New prompt:\nAnswer yes or no only.", "Answer yes or no only."),
    ("```\nAnswer yes or no only.\n```", "Answer yes or no only."),
    ("<prompt>Answer {yes or no only.</prompt>", "Answer {yes or no only."),  # a lone brace is escaped later
])
def test_extract_good_replies(reply: str, expected: str) -> None:
    assert extract(reply) == expected


@pytest.mark.parametrize("reply, reason", [
    ("", "empty"),
    ("   \n\t ", "empty"),
    ("<prompt>   </prompt>", "empty"),
    ("<prompt>\"\"</prompt>", "empty prompt"),
    ("I would suggest changing the wording.\nMaybe add emphasis.\nAlso be concise.\nThat is all.", "markers"),
    ("<prompt>" + "word " * 41 + "</prompt>", "more than the limit of 40"),
    ("<prompt>{question} Answer yes or no.</prompt>", "placeholder"),
    ("<prompt>Answer {options} now.</prompt>", "placeholder"),
    ("<prompt>please  ANSWER yes or no</prompt>", "same as the original"),
    ("<prompt>Please answer yes or no.</prompt>", "same as the original"),
    ("Here is the prompt:", "markers"),
    (None, "not text"),
    (42, "not text"),
])
def test_extract_bad_replies(reply: object, reason: str) -> None:
    got, why = extract_prompt_with_reason(reply, original=ORIGINAL, max_words=40)
    assert got is None and reason in why
    assert extract(reply) is None


def test_word_limit_is_inclusive() -> None:
    assert extract("<prompt>" + "word " * 40 + "</prompt>") == ("word " * 40).strip()


@given(st.text(max_size=300))
def test_extract_never_raises(reply: str) -> None:
    got = extract(reply)
    if got is not None:
        assert got == got.strip() and got and len(got.split()) <= 40
        assert not re.search(r"\{[^{}]*\}", got)


def test_extract_introspection() -> None:
    assert extract_introspection("") == ""
    assert extract_introspection("   ") == ""
    assert extract_introspection(None) == ""  # type: ignore[arg-type]
    assert extract_introspection("  The model says yes\n to everything. ") == "The model says yes to everything."
    assert extract_introspection("<think>long thoughts</think>It ignores the format.") == "It ignores the format."
    long = extract_introspection("word " * 500)
    assert len(long) <= MAX_INTROSPECTION_CHARS and long.endswith("…") and "wor…" not in long
