"""Replay checks what it replays: where a recording holds what its rows were asked (questions,
targets), they are compared with the samples they answer, before any sample runs.

A VLMEvalKit prediction file's rows carry the dataset's `question` and `answer`; an lmms-eval
samples file's records carry `target`, the `input` prompt and sometimes the `doc`; our own results
file's records carry the `question`. A row agrees with its sample when each field it holds agrees
(texts compared with case and runs of whitespace ignored; `input` agrees when it contains the
question; a `target` list when one of its items is the answer). A recording whose rows agree for
less than a threshold of the samples compared is the wrong file (another benchmark, a split, rows
shifted by one) and is refused, naming the first row that disagrees.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pytest_mllm.models.predictions import Recorded
from pytest_mllm.sample import Sample

_SHOWN_CHARS = 80


class ReplayMismatch(ValueError):
    """The recording's rows disagree with the samples they answer; the message names the first one."""


@dataclass(frozen=True)
class ReplayCoverage:
    """How a recording covers a benchmark's samples."""

    samples: int
    answered: int  # samples the recording has a row for
    compared: int  # of those, rows that hold a question or target
    agreeing: int
    first_mismatch: str | None  # "row 3 (index 102) for sample mmbench::102: question 'a' is not the sample's 'b'"

    def line(self, benchmark: str) -> str:
        """One line for the terminal."""
        text = f"replay: {self.answered} of {self.samples} {benchmark} samples have a recorded answer"
        if self.compared:
            text += (f"; the recorded questions or targets agree for {self.agreeing} of {self.compared} "
                     f"({100 * self.agreeing / self.compared:.1f} %)")
        return text


def _text(value: Any) -> str | None:
    """A cell as comparable text (case folded, whitespace runs as one space); None for a missing cell."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split()).casefold()
    return text or None


def _shown(value: Any) -> str:
    text = str(value)
    return repr(text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "…")


def disagreement(recorded: Recorded, sample: Sample) -> str | None:
    """Why the row disagrees with `sample` (its first field that does), None when it agrees."""
    question, answer = _text(sample.question), _text(sample.answer)
    fields = dict(recorded.fields)
    doc = fields.pop("doc", None)
    if isinstance(doc, dict):
        fields.update({f"doc.{k}": doc[k] for k in ("question", "answer") if k in doc})
    for name, value in fields.items():
        if name in ("question", "doc.question"):
            if _text(value) not in (None, question):
                return f"{name} {_shown(value)} is not the sample's question {_shown(sample.question)}"
        elif name in ("answer", "doc.answer", "target"):
            values = value if isinstance(value, list) else [value]
            if _text(value) is not None and not any(_text(v) == answer for v in values):
                return f"{name} {_shown(value)} is not the sample's answer {_shown(sample.answer)}"
        elif name == "input" and question is not None and question not in (_text(value) or question):
            return f"input {_shown(value)} does not hold the sample's question {_shown(sample.question)}"
    return None


def coverage(recording: Any, samples: Sequence[Sample]) -> ReplayCoverage:
    """How `recording` (a `ReplayModel`) covers `samples` and agrees with them."""
    answered = compared = agreeing = 0
    first: str | None = None
    for sample in samples:
        if recording.key_of(sample) is None:
            continue
        answered += 1
        recorded = recording.recorded(sample)
        if recorded is None or not recorded.fields:
            continue
        compared += 1
        why = disagreement(recorded, sample)
        if why is None:
            agreeing += 1
        elif first is None:
            first = f"{recorded.where} for sample {sample.benchmark}::{sample.id}: {why}"
    return ReplayCoverage(len(samples), answered, compared, agreeing, first)


def check_coverage(found: ReplayCoverage, *, path: str, benchmark: str, min_match: float) -> None:
    """ReplayMismatch when the rows compared agree for less than `min_match` of them."""
    if found.compared and found.agreeing / found.compared < min_match:
        raise ReplayMismatch(
            f"--mllm=replay:{path}: its rows do not match the {benchmark} samples they answer: the recorded "
            f"questions or targets agree for {found.agreeing} of {found.compared} "
            f"({100 * found.agreeing / found.compared:.1f} %, under --mllm-replay-min-match={min_match:g}); "
            f"first mismatch: {found.first_mismatch}. Is it the file of another benchmark, split or data "
            "version? To score it anyway, lower --mllm-replay-min-match")
