"""The judge's second pass over each answered batch (`JudgeSection.review_step`): VLMEvalKit's LLM reading of
the multiple-choice answers the rules could not read, then Tiny LVLM-eHub's CEE verdicts on open answers. Each
LLM is built on first use; a failed call turns its sample into an error, never a score."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pytest_mllm.record import Record, status_of
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.score import get_parser, references
from pytest_mllm.scoring.word_match import WORD_MATCH


class JudgePass:
    """The second pass over a batch's (record, sample) pairs, given by the LLMs `make_judge` and `make_extractor`
    build (a `Judge`, a `ChoiceExtractor`; None: that part is left out)."""

    def __init__(self, make_judge: Callable[[], Any] | None = None,
                 make_extractor: Callable[[], Any] | None = None) -> None:
        self._make_judge = make_judge
        self._make_extractor = make_extractor  # unreadable choice answers go to the LLM
        self._judge: Any = None
        self._extractor: Any = None

    def __call__(self, pairs: Sequence[tuple[Record, Sample]]) -> None:
        if self._make_extractor is not None:
            self._extract_choices([(r, s) for r, s in pairs if r["status"] != "error" and s.choices
                                   and r["parsed"] == get_parser(r["parser"]).unreadable])
        if self._make_judge is not None:  # also the answers word matching cannot score (a reference the data
            # gives as a number stops the authors' VQAEval; their CEE judge reads it)
            self._judge_open([(r, s) for r, s in pairs if s.answer_type == "open" and r["response"] is not None
                              and (WORD_MATCH.get(r) is not None or "vqaeval_stops_at" in s.metadata)])

    def _judge_open(self, pairs: list[tuple[Record, Sample]]) -> None:
        """CEE verdicts for open answers; a judge failure turns the sample into an error, never a score."""
        if not pairs:
            return
        from pytest_mllm.judge.ensemble import JUDGE
        from pytest_mllm.judge.prompts import JudgeItem

        if self._judge is None:
            self._judge = self._make_judge()  # type: ignore[misc]
        items = [JudgeItem(sample.question, references(sample), record["response"] or "") for record, sample in pairs]
        for (record, _), outcome in zip(pairs, self._judge.judge_many(items)):
            JUDGE.put(record, outcome.as_record())
            if outcome.status == "judge-error":
                record.update({"status": "error", "correct": None, "error": f"judge error: {outcome.error}"})
            else:
                record.update({"correct": outcome.correct, "status": status_of(bool(outcome.correct)),
                               "error": None})

    def _extract_choices(self, pairs: list[tuple[Record, Sample]]) -> None:
        """VLMEvalKit's LLM choice extraction for answers the rules could not read: a letter the judge
        names sets the answer and the verdict; Z or an unusable reply leaves it unreadable (wrong); a
        failed call turns the sample into an error, never a score (`judge/choice_extractor.py`)."""
        if not pairs:
            return
        from pytest_mllm.judge.choice_extractor import EXTRACTION, ChoiceItem

        if self._extractor is None:
            self._extractor = self._make_extractor()  # type: ignore[misc]
        items = [ChoiceItem(sample.question, sample.choices, _scored_text(record)) for record, sample in pairs]
        for (record, _), outcome in zip(pairs, self._extractor.extract_many(items)):
            EXTRACTION.put(record, outcome.as_record())
            if outcome.status == "error":
                record.update({"status": "error", "correct": None, "error": f"choice extraction error: {outcome.error}"})
            elif outcome.status == "extracted":
                correct = outcome.letter == record["answer"]
                record.update({"parsed": outcome.letter, "correct": correct, "status": status_of(correct)})


def _scored_text(record: Record) -> str:
    """The response as it was scored: as the reference's scorer received it where that differs."""
    read = record.get("read_response")
    return read if read is not None else record["response"] or ""
