"""MathVista (testmini) as VLMEvalKit scores it (`vlmeval/dataset/utils/mathvista.py`: `post_check`,
`MathVista_acc`), quirks included.

A row's answer is first read by rules (`pre_extract`, VLMEvalKit's "prefetch"); only when they give nothing
is a judge LLM asked to extract the answer from the response (`MathVistaGrader`, after five worked examples:
an integer, a float with one and with two decimals, a list, an option letter; attempts at temperature 0, 0.5,
1, 1.5, 2 while it replies nothing; 128 tokens). Either answer is then
compared with the row's (`is_hit`):

- multiple choice: the answer read by the option rules (`can_infer`: a letter, a refusal's "Z", an option's
  text) must be the row's `answer_option`; the rules' own reading counts even when wrong ("I think it is
  blue" is option C, decided without the judge);
- integer / float: Python's `int()` / `float()` of the answer and of the row's answer must be equal; no
  rounding to the row's `precision` ("32.0" is no integer, "1.50" equals 1.5, " 7 " is 7);
- any other answer type (MathVista's lists): never right, whatever the answer (VLMEvalKit compares the text
  "None" with the answer).

The rules' answer decides without the judge only when it is truthy: a right "0" still goes to the judge.
Accuracy is reported overall, per task and per skill (a row counts in each of its skills), with the share of
rows the rules decided (`prefetch_rate`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pytest_mllm.judge.graded import GRADED, GRADED_BY
from pytest_mllm.judge.graders import (RETRY_TEMPERATURES, Grade, GradeItem, Grader, GradingPrompt, cell_text, grader,
                                       scored_text)
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric
from pytest_mllm.scoring.parsers import UNREADABLE, multiple_choice
from pytest_mllm.scoring.prediction_cells import read_back
from pytest_mllm.scoring.score import as_given, parser

MULTI_CHOICE = "multi_choice"
COLUMNS = ("question_type", "answer_type", "choices", "answer_option", "skills")  # the cells scoring reads
RULES = "rules"  # a graded record's source when the rules decided


@dataclass(frozen=True)
class Question:
    """What scoring reads of a MathVista row."""

    question_type: str  # "multi_choice" or "free_form"
    answer_type: str  # "text", "integer", "float" or "list"
    answer: str  # the answer cell as read ("nan" when missing)
    answer_option: str  # the right option's letter (multiple choice)
    choices: tuple[str, ...]  # the options, A first (multiple choice)
    skills: tuple[str, ...]

    @property
    def multiple_choice(self) -> bool:
        return self.question_type == MULTI_CHOICE


def question(columns: Mapping[str, str | None], answer: str) -> Question:
    """The row's question from its cells (`loader_options.columns`); ValueError names a cell VLMEvalKit's
    scoring cannot read (it stops there)."""
    kind = columns.get("question_type") or ""
    choices: tuple[str, ...] = ()
    if kind == MULTI_CHOICE:
        cell = columns.get("choices")
        try:
            listed = ast.literal_eval(cell) if cell else None
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            listed = None
        if not isinstance(listed, (list, tuple)) or not listed:
            raise ValueError(f"field 'choices': {cell!r} is not a Python list of the options (VLMEvalKit's eval of it "
                             "stops its scoring)")
        choices = tuple(str(choice) for choice in listed)
    return Question(kind, columns.get("answer_type") or "", answer, columns.get("answer_option") or "nan", choices,
                    skills_of(columns.get("skills")))


def skills_of(cell: str | None) -> tuple[str, ...]:
    """The skills cell as VLMEvalKit's `eval` reads it: a list literal's items; text that is no Python
    expression ("statistical reasoning") is one skill; ValueError for a cell `eval` stops at (a bare name)."""
    if cell is None:
        raise ValueError("field 'skills': an empty cell stops VLMEvalKit's eval (write a list such as "
                         "\"['arithmetic reasoning']\")")
    text = cell
    try:
        value = ast.literal_eval(text)
    except SyntaxError:
        return (text,)
    except (ValueError, MemoryError, RecursionError):
        raise ValueError(f"field 'skills': {text!r} stops VLMEvalKit's eval (write a list such as "
                         "\"['arithmetic reasoning']\")") from None
    if isinstance(value, (list, tuple, str)):
        return tuple(str(skill) for skill in value)  # a string literal: its characters, as `for` walks it
    raise ValueError(f"field 'skills': {text!r} is no list of skills")


def _letter(answer: str, q: Question) -> str | None:
    """The option the rules read (`can_infer`): a letter, "Z" for a refusal, None when they cannot tell."""
    sample = Sample(id="", benchmark="", task="", question="", answer="", answer_type="choice",
                    choices=tuple((chr(65 + i), text) for i, text in enumerate(q.choices)))
    read = multiple_choice(answer, sample)
    return None if read == UNREADABLE else read


def _number(text: Any, answer_type: str) -> int | float | None:
    """`int()` / `float()` of a value as Python reads it; None where it raises ValueError."""
    try:
        return int(text) if answer_type == "integer" else float(text)
    except ValueError:
        return None


def pre_extract(prediction: str, q: Question) -> str | int | float | None:
    """The answer the rules read from the response, when it decides without the judge (`post_check` with
    prefetch): a multiple-choice reading, or a number equal to the answer; None leaves it to the judge (so
    does a right 0: VLMEvalKit tests the rules' answer for truth)."""
    if q.multiple_choice:
        return _letter(prediction, q)
    if q.answer_type in ("integer", "float"):
        value, expected = _number(prediction, q.answer_type), _number(q.answer, q.answer_type)
        return value if value is not None and value == expected and value else None
    return "None" if q.answer == "None" else None


def is_hit(extracted: Any, q: Question) -> bool:
    """Whether an answer (the rules' or the judge's extraction, as read back) is right (`post_check`)."""
    if q.multiple_choice:
        return _letter(str(extracted), q) == q.answer_option
    if q.answer_type in ("integer", "float"):
        value, expected = _number(extracted, q.answer_type), _number(q.answer, q.answer_type)
        return value is not None and expected is not None and value == expected
    return q.answer == "None"


@parser("mathvista", answer=as_given, verdict_by=GRADED_BY)
def mathvista_response(response: str, sample: Sample) -> str:
    """The whole response: the rules and the judge read it in the grading step (`MathVistaGrader`)."""
    return response


# --- metrics --------------------------------------------------------------------------------------------------

def _by_rules(record: Record) -> bool:
    graded = GRADED.get(record)
    return bool(graded) and graded.get("source") == RULES  # type: ignore[union-attr]


def prefetch(records: Sequence[Record]) -> dict[str, float | int]:
    """How many answers the rules decided without the judge, and their share of the scored answers."""
    scored = [r for r in records if r["status"] != "error"]
    count = sum(1 for r in scored if _by_rules(r))
    return {"prefetch": count, "prefetch_rate": count / len(scored)} if scored else {}


@metric("mathvista", keys=("prefetch", "prefetch_rate"))
def scope_mathvista(scope: ScopeView) -> Scope:
    """`prefetch` and `prefetch_rate` in every scope (VLMEvalKit's prefetch columns)."""
    return prefetch(scope.records)


# --- the judge step ----------------------------------------------------------------------------------------------

MATHVISTA_PROMPT = GradingPrompt("""\
Below are a few examples. In each one, read the model's response to the question and write the final answer \
the response gives after "Extracted answer:". Then do the same for the last one.

Hint: This question needs a whole-number answer; give the final number, for instance 1, 2 or 3, at the end.
Question: How many birds sit on the wire?
Model response: I can count 9 birds sitting on the wire.
Extracted answer: 9

Hint: This question needs a decimal number with one digit after the point; give the final value, for \
instance 1.2, 1.3 or 1.4, at the end.
Question: What share of the squares is shaded?
Model response: Three of the five squares are shaded, so the share is 0.6.
Extracted answer: 0.6

Hint: This question needs a decimal number with two digits after the point; give the final value, for \
instance 1.23, 1.34 or 1.45, at the end.
Question: What do two pencils cost together? (Unit: $)
Model response: One pencil costs $0.85, so two of them cost $1.70.
Extracted answer: 1.70

Hint: This question needs a Python list as its answer; give the final list, for instance [1, 2, 3] or \
[1.2, 1.3, 1.4], at the end.
Question: In which two months was the temperature highest?
Model response: The temperature peaks in July and August, the 7th and 8th months.
Extracted answer: [7, 8]

Hint: Give the letter of the right option, for instance A, B, C or D, at the end.
Question: Which shape has the most sides?
Choices: (A) triangle (B) square (C) hexagon (D) pentagon
Model response: A hexagon has six sides, more than any other shape here, so (C).
Extracted answer: C

{question}
Model response: {response}
Extracted answer:""")


@grader("mathvista")
class MathVistaGrader(Grader):
    """MathVista: the rules' answer, else the judge's extraction, compared by `is_hit`."""

    placeholders = ("question", "response")
    prompt = MATHVISTA_PROMPT
    temperatures = RETRY_TEMPERATURES
    max_tokens = 128

    def item(self, record: Record, sample: Sample) -> GradeItem:
        row = question(sample.metadata.get("columns") or {}, sample.answer)
        return GradeItem(str(sample.metadata.get("source_id", sample.id)),
                         {"question": sample.question, "response": scored_text(record)}, row,
                         {"skill": tuple(dict.fromkeys(row.skills))})

    def rule(self, item: GradeItem) -> Grade | None:
        found = pre_extract(item.fields["response"], item.facts)
        if found is None:
            return None
        return Grade(is_hit(found, item.facts), str(found), values={"extracted": found})

    def as_read(self, reply: str, through_xlsx: bool) -> str:
        """The extraction as VLMEvalKit's scoring reads it back from its judged .xlsx file."""
        return read_back(reply.strip()) if through_xlsx else reply.strip()

    def read(self, reply: str, item: GradeItem) -> Grade:
        return Grade(is_hit(reply, item.facts), reply, values={"extracted": reply})

    def replayed(self, row: Mapping[str, Any]) -> str | None:
        if "All 5 retries failed" in cell_text(row.get("log")):
            return None
        return cell_text(row.get("res"))

    def fallback(self, item: GradeItem) -> Grade:
        return self.read("nan", item)  # VLMEvalKit's empty extraction, read back from its file
