"""The TP-Eval loop for one task, with every model call injected (so it runs in unit tests).

Round 0 scores the original instruction: its accuracy on D_few, similarity 1.0, and an
introspection of its wrong answers (one optimizer call when there are any). Then, in each
round r = 1..N:

1. M conversations, all holding the meta-prompt with the top-K candidates so far and the
   edit budget `edit_budget(r, N, ...)`, go to the optimizer in one `propose` call at the
   configured temperature;
2. each reply is read with `extract_prompt`; an unusable reply (or a failed call) is
   skipped with a warning, a prompt already tried is skipped without re-scoring;
3. each new prompt is scored: accuracy on D_few through `evaluate(slot.render(prompt))`,
   similarity to the original, c = α·acc + (1−α)·sim;
4. the new prompts with wrong answers get their introspection, in one `propose` call.

A round with nothing new to score warns and the loop goes on. After N rounds the answer is
`rerank` over every candidate, the original included, with α*. Introspection asks at
temperature `INTROSPECTION_TEMPERATURE` (0.0: an analysis, not a creative task).

`on_progress(event, n)` reports ("optimizer", conversations sent), ("scorer", model answers
asked: len(examples) per scored prompt) and ("round", r) when round r (0..N) is done.
`TaskOutcome.calls` counts "optimizer" and "scorer" the same way, plus "unusable" replies
and "duplicate" prompts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

from pytest_mllm.tpeval.counter import FLOOR, edit_budget, edit_start
from pytest_mllm.tpeval.metaprompt import (
    Example,
    Message,
    extract_introspection,
    extract_prompt_with_reason,
    introspection_messages,
    optimizer_messages,
)
from pytest_mllm.tpeval.score import Candidate, combined_score, rerank, top_k
from pytest_mllm.tpeval.settings import TpSettings
from pytest_mllm.tpeval.slot import PromptSlot

INTROSPECTION_TEMPERATURE = 0.0

Evaluate = Callable[[str], tuple[float, list[Example]]]
Propose = Callable[[list[list[Message]], float], list[str | Exception]]


@dataclass
class TaskOutcome:
    """What optimizing one task gave: the chosen prompt, every candidate, call counts, warnings."""

    task: str
    mode: str
    original: str
    best: Candidate
    history: list[Candidate]
    calls: dict[str, int]
    warnings: list[str] = field(default_factory=list)

    @property
    def improved(self) -> bool:
        """Whether the chosen prompt is not the original."""
        return self.best.round != 0


def planned_calls(settings: TpSettings, few: int) -> dict[str, int]:
    """The most calls one task can make: optimizer conversations and model answers (scorer)."""
    candidates = settings.rounds * settings.per_round
    return {"optimizer": 1 + 2 * candidates, "scorer": (1 + candidates) * few}


def _key(prompt: str) -> str:
    return " ".join(prompt.split()).casefold()


class TaskOptimizer:
    """Optimizes one task's instruction; `run()` returns a `TaskOutcome` and never crashes on a bad reply."""

    def __init__(self, *, task: str, slot: PromptSlot, settings: TpSettings, evaluate: Evaluate, propose: Propose,
                 similarity: Callable[[str, str], float], examples: Sequence[Example], description: str = "",
                 on_progress: Callable[[str, int], None] = lambda event, n: None) -> None:
        self.task = task
        self.slot = slot
        self.settings = settings.validate()
        self.evaluate = evaluate
        self.propose = propose
        self.similarity = similarity
        self.examples = list(examples)
        self.description = description
        self.on_progress = on_progress
        self.calls = {"optimizer": 0, "scorer": 0, "unusable": 0, "duplicate": 0}
        self.warnings: list[str] = []

    def _ask(self, conversations: list[list[Message]], temperature: float) -> list[str | Exception]:
        """One `propose` call; a raising call or a short answer becomes errors in the missing slots."""
        if not conversations:
            return []
        self.calls["optimizer"] += len(conversations)
        try:
            replies = list(self.propose(conversations, temperature))
        except Exception as exc:
            replies = [exc] * len(conversations)
        if len(replies) != len(conversations):
            self.warnings.append(f"the optimizer returned {len(replies)} replies for {len(conversations)} requests")
            replies = (replies + [RuntimeError("no reply")] * len(conversations))[:len(conversations)]
        self.on_progress("optimizer", len(conversations))
        return replies

    def _score(self, round_index: int, prompt: str, original: str) -> tuple[Candidate, list[Example]]:
        accuracy, wrong = self.evaluate(self.slot.render(prompt))
        n = len(self.examples) or 1
        self.calls["scorer"] += n
        self.on_progress("scorer", n)
        similarity = 1.0 if prompt == original else float(self.similarity(prompt, original))
        score = combined_score(accuracy, similarity, self.settings.alpha)
        return Candidate(round_index, prompt, float(accuracy), similarity, score, wrong=len(wrong)), list(wrong)

    def _introspect(self, scored: list[tuple[Candidate, list[Example]]], round_index: int) -> None:
        todo = [(c, wrong) for c, wrong in scored if wrong]
        conversations = [introspection_messages(task=self.task, prompt=c.prompt, wrong=wrong) for c, wrong in todo]
        for (candidate, _), reply in zip(todo, self._ask(conversations, INTROSPECTION_TEMPERATURE)):
            if isinstance(reply, Exception):
                self.warnings.append(f"round {round_index}: no introspection for {candidate.prompt!r}: "
                                     f"{type(reply).__name__}: {reply}")
            else:
                candidate.introspection = extract_introspection(reply)

    def run(self) -> TaskOutcome:
        s = self.settings
        original = self.slot.instruction
        max_words = s.word_limit(original)
        start = edit_start(original)
        first, wrong = self._score(0, original, original)
        self._introspect([(first, wrong)], 0)
        history = [first]
        seen = {_key(original)}
        self.on_progress("round", 0)
        for r in range(1, s.rounds + 1):
            counter = edit_budget(r, s.rounds, start, FLOOR)
            messages = optimizer_messages(task=self.task, description=self.description, original=original,
                                          history=top_k(history, s.top_k), examples=self.examples,
                                          counter=counter, mode=self.slot.mode)
            replies = self._ask([[dict(m) for m in messages] for _ in range(s.per_round)], s.temperature)
            fresh: list[str] = []
            duplicates = 0
            for i, reply in enumerate(replies, 1):
                if isinstance(reply, Exception):
                    prompt, reason = None, f"the call failed ({type(reply).__name__}: {reply})"
                else:
                    prompt, reason = extract_prompt_with_reason(reply, original=original, max_words=max_words)
                if prompt is None:
                    self.calls["unusable"] += 1
                    self.warnings.append(f"round {r}: reply {i} unusable: {reason}")
                elif _key(prompt) in seen:
                    self.calls["duplicate"] += 1
                    duplicates += 1
                else:
                    seen.add(_key(prompt))
                    fresh.append(prompt)
            if not fresh:
                self.warnings.append(f"round {r}: the optimizer returned no new prompt ({duplicates} repeated "
                                     "earlier ones)" if duplicates else
                                     f"round {r}: the optimizer returned no usable prompt")
            scored = [self._score(r, prompt, original) for prompt in fresh]
            self._introspect(scored, r)
            history.extend(c for c, _ in scored)
            self.on_progress("round", r)
        best = rerank(history, s.alpha_final)
        return TaskOutcome(task=self.task, mode=self.slot.mode, original=original, best=best, history=history,
                           calls=dict(self.calls), warnings=list(self.warnings))
