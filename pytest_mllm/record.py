"""`Record`: what one sample produces, the typed hand-off from the evaluator to metrics and reports.

A record is a dict of builtins (a `TypedDict`), so it crosses xdist on a test report and
goes into the `--mllm-json` file as it is: `dumps`/`loads` below are the only encoding.
Its `status` is "correct", "incorrect" or "error"; an error never carries a verdict.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict


class SampleError(Exception):
    """A sample errored (bad data, unreadable image, model crash): its test errors with this message."""


class OriginalAnswer(TypedDict):
    """With --mllm-prompts: the same sample answered under the benchmark's own prompt."""

    prompt: str
    response: str | None  # the model's response, as it gave it
    read_response: str | None  # the response as the reference's scorer receives it, where that differs (else None)
    parsed: str | None
    correct: bool | None
    status: str
    error: str | None


class _RecordFields(TypedDict):
    id: str
    benchmark: str
    task: str
    group: str | None
    image: str
    question: str
    prompt: str
    answer: str
    answer_type: str
    parser: str
    pair_group: str | None
    category: str | None
    l2_category: str | None
    split: str
    response: str | None  # the model's response, as it gave it
    read_response: str | None  # the response as the reference's scorer receives it, where that differs (else None)
    parsed: str | None
    correct: bool | None
    status: str  # "correct", "incorrect" or "error"
    error: str | None
    latency_s: float | None
    model: str | None
    cached: bool
    variant: dict[str, Any] | None  # VRPTEST: the visual-prompt variant's attributes
    human_label: int | None
    word_match: bool | None
    judge: dict[str, Any] | None  # CEE: votes, split, verdict
    score: float | None  # per-sample score in [0, 1] of parsers scored against references (ANLS, …)


class Record(_RecordFields, total=False):
    """One sample's outcome; the keys below are added as it travels (harness, TP-Eval, reports)."""

    order: int  # position in the collection: metrics read records in this order under xdist too
    input_digest: str  # the sample's question, target, choices and image bytes (`engine/data_identity.py`)
    duration_s: float  # the test's wall time
    original: OriginalAnswer
    thumbnail: str | None  # a data URL of the first image, for wrong answers in the HTML report
    # With a judge (--mllm-judge): a `choice` answer the rules could not read, as the judge LLM read it
    # (`judge/choice_extractor.py`): kind "choice_extraction", status, letter, reply, error. Kept apart
    # from "judge", which holds CEE outcomes of open answers only.
    extraction: dict[str, Any]
    # A caption scored against references (`caption_bleu4`): its tokenised text and references, from
    # which a caption subtask's corpus BLEU-4 and CIDEr are computed (`scoring/captions.py`).
    caption: dict[str, Any]


def new_record(*, id: str, benchmark: str, task: str, question: str = "", answer: str = "",
               prompt: str = "", **fields: Any) -> Record:
    """A record before the model has answered: status "error" until a verdict is set."""
    record: Record = {
        "id": id, "benchmark": benchmark, "task": task, "group": None, "image": "", "question": question,
        "prompt": prompt, "answer": answer, "answer_type": "yes_no", "parser": "exact", "pair_group": None,
        "category": None, "l2_category": None, "split": "test", "response": None, "read_response": None, "parsed": None,
        "correct": None, "status": "error", "error": None, "latency_s": None, "model": None, "cached": False,
        "variant": None, "human_label": None, "word_match": None, "judge": None, "score": None,
    }
    record.update(fields)  # type: ignore[typeddict-item]
    return record


def same_input(a: Record | dict[str, Any], b: Record | dict[str, Any]) -> bool:
    """Whether two runs' records of one sample saw the same input: their `input_digest`s agree (records
    written before there was one: their question, target and image name agree)."""
    if a.get("input_digest") and b.get("input_digest"):
        return a["input_digest"] == b["input_digest"]
    return all(a.get(key) == b.get(key) for key in ("question", "answer", "image"))


def dumps(records: list[Record]) -> str:
    """Records as one JSON string: one string crosses xdist far faster than nested dicts."""
    return json.dumps(records)


def loads(text: str) -> list[Record]:
    """Records back from `dumps`."""
    return json.loads(text)
