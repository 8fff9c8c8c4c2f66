"""TP-Eval's zero-shot mode: a task with no examples to score on gets its prompt from other tasks'
optimized prompts, shown to the optimizer as in-context examples (original → optimized)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_mllm.tpeval.metaprompt import extract_prompt

Message = dict[str, Any]


def zero_shot_messages(*, task: str, original: str, examples: Sequence[tuple[str, str, str]],
                       counter: int) -> list[Message]:
    """The request for one new prompt, with (task, original, optimized) triples as examples."""
    shown = "\n\n".join(f"Task: {name}\nOriginal prompt: {before}\nImproved prompt: <prompt>{after}</prompt>"
                        for name, before, after in examples)
    return [
        {"role": "system", "content": "You improve the prompts a vision-language model is evaluated with."},
        {"role": "user", "content": (
            "For other tasks of the same benchmark, prompts were improved for this model by testing them on "
            f"examples. Here they are:\n\n{shown}\n\nIn the same spirit, improve the prompt of a new task. "
            f"Change at most {counter} words and keep its meaning.\n\nTask: {task}\nOriginal prompt: {original}\n"
            "Reply with the improved prompt only, between <prompt> and </prompt>.")},
    ]


def zero_shot_prompt(*, task: str, original: str, examples: Sequence[tuple[str, str, str]], counter: int,
                     propose: Callable[[list[list[Message]], float], list[str | Exception]],
                     settings: Any) -> tuple[str, list[str]]:
    """The first usable of `settings.per_round` draws, else the original (with a warning saying so)."""
    messages = zero_shot_messages(task=task, original=original, examples=examples, counter=counter)
    replies = propose([messages] * settings.per_round, settings.temperature)
    max_words = settings.word_limit(original)
    for reply in replies:
        if isinstance(reply, str):
            candidate = extract_prompt(reply, original=original, max_words=max_words)
            if candidate is not None:
                return candidate, []
    return original, [(f"task {task!r}: the optimizer returned no usable prompt in {len(replies)} zero-shot draws; "
                      "the original prompt is kept")]
