"""`Record`: what one sample produces, the typed hand-off from the evaluator to metrics and reports.

A record is a dict of builtins (a `TypedDict`), so it crosses xdist on a test report and
goes into the `--mllm-json` file as it is: `dumps`/`loads` below are the only encoding.
Its `status` is one of `STATUSES`; an error never carries a verdict. Beside the core fields, a method
keeps its own data in the parts its section registers (`RecordPart`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, Literal, TypedDict, TypeVar


class MessageOnly(Exception):
    """A failure whose message says all a person needs: its test shows the message (and its notes), no
    traceback."""


class SampleError(MessageOnly):
    """A sample errored (bad data, unreadable image, model crash): its test errors with this message."""


Status = Literal["correct", "incorrect", "error"]
CORRECT: Final = "correct"
INCORRECT: Final = "incorrect"
ERROR: Final = "error"
STATUSES: tuple[Status, ...] = (CORRECT, INCORRECT, ERROR)


def status_of(correct: bool) -> Status:
    """The status of a scored answer."""
    return CORRECT if correct else INCORRECT


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
    status: Status
    error: str | None
    latency_s: float | None
    model: str | None
    cached: bool
    score: float | None  # per-sample score in [0, 1] of parsers scored against references (ANLS, …)


class Record(_RecordFields, total=False):
    """One sample's outcome; the keys below are added as it travels (harness, reports). A method's own
    data rides beside them as the parts its section registers (`RecordPart`)."""

    order: int  # position in the collection: metrics read records in this order under xdist too
    input_digest: str  # the sample's question, target, choices and image bytes (`engine/data_identity.py`)
    duration_s: float  # the test's wall time
    thumbnail: str | None  # a data URL of the first image, for wrong answers in the HTML report


T = TypeVar("T")


@dataclass(frozen=True)
class RecordPart(Generic[T]):
    """A method's data in a record, under one top-level key of its own (`variant`, `judge`, …): the record
    stays one flat JSON object, as results files have always held it. The method's package defines the
    part's type (a TypedDict) and the part; its section lists it (`sections.Section.record_parts`).

    `from_metadata`: the sample metadata key that fills the part when the record is made.
    `in_every_record`: the key is in every record the evaluator makes, null where the sample has no such
    data, as results files have always held it.
    `of_the_run`: the metadata says how a run chose the sample (a subset's draw), not what the model is asked:
    it stays out of the sample's input digest (`engine.data_identity.input_digest`).
    """

    key: str
    from_metadata: str | None = None
    in_every_record: bool = False
    of_the_run: bool = False

    def get(self, record: Mapping[str, Any]) -> T | None:
        """The part's value, None when the record has none (absent, or null in an older results file)."""
        return record.get(self.key)

    def put(self, record: Record, value: T) -> None:
        """Set the part's value."""
        record[self.key] = value  # type: ignore[literal-required]


def new_record(*, id: str, benchmark: str, task: str, question: str = "", answer: str = "",
               prompt: str = "", **fields: Any) -> Record:
    """A record before the model has answered: status "error" until a verdict is set. `fields` may also
    set record parts."""
    record: Record = {
        "id": id, "benchmark": benchmark, "task": task, "group": None, "image": "", "question": question,
        "prompt": prompt, "answer": answer, "answer_type": "yes_no", "parser": "exact", "pair_group": None,
        "category": None, "l2_category": None, "split": "test", "response": None, "read_response": None, "parsed": None,
        "correct": None, "status": ERROR, "error": None, "latency_s": None, "model": None, "cached": False,
        "score": None,
    }
    record.update(fields)  # type: ignore[typeddict-item]
    return record


def same_input(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
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
    records: list[Record] = json.loads(text)
    return records
