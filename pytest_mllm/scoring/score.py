"""Scoring one answer: the registry of answer parsers, and the verdict of one response.

A parser reads the response (`read`), gives the reference answer in its vocabulary (`answer`) and
decides the verdict (`verdict`; by default the reading must equal the answer, and an open answer takes the
verdict of the one parser registered with `@open_answers_parser`). Each registers itself where it is defined,
so this module names none:

    @parser("mme")                              # scoring/mme.py
    def mme_official(response, sample=None): ...

    @scorer("anls", threshold=1.0)              # scoring/references.py: a per-sample score in [0, 1]
    def anls(answer, references): ...           # against the references, right at the threshold

`PARSERS` imports a parser's module when a spec first names it (`pytest_mllm.registry`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from pytest_mllm.record import Record, status_of
from pytest_mllm.registry import Registry, UnknownName, declarations
from pytest_mllm.sample import Response, Sample
from pytest_mllm.scoring.prediction_cells import read_back

Reader = Callable[[str, Sample], str]  # (response, sample) → the answer read from it
References = Sequence[Any]
Scorer = Callable[[str, References], float]  # (answer, references) → a score in [0, 1]
# The error of an answer whose parser leaves the verdict to a section's step (`Parser.verdict_by`) until it rules.
NOT_YET_RULED = "no verdict: this benchmark's answers are ruled on after they are given, and nothing ruled on this one"


@dataclass(frozen=True)
class Scored:
    """A verdict: right or wrong, and the record fields the parser's rule adds (a score, a match)."""

    correct: bool
    fields: Mapping[str, Any] = field(default_factory=dict)


class NotScored(ValueError):
    """This answer cannot be scored (a bad reference answer, a missing package): its sample errors alone.
    `with_reading`: the record keeps what the parser read."""

    def __init__(self, message: str, *, with_reading: bool = True) -> None:
        super().__init__(message)
        self.with_reading = with_reading


# (response as read, the parser's reading, the reference answer in its vocabulary, sample) → the verdict
Verdict = Callable[[str, str, str, Sample], Scored]


def lowered(answer: str) -> str:
    """The reference answer stripped and lowercased (yes/no words)."""
    return answer.strip().lower()


def stripped(answer: str) -> str:
    """The reference answer stripped, shown as given otherwise (its rule prepares it itself)."""
    return answer.strip()


def letter(answer: str) -> str:
    """An option letter, stripped and upper-cased."""
    return answer.strip().upper()


def as_given(answer: str) -> str:
    """The reference answer exactly as given (compared so)."""
    return answer


@dataclass(frozen=True)
class ReferenceScore:
    """A parser scored against the sample's references: a score in [0, 1], right from `threshold` on."""

    score: Scorer
    threshold: float
    cells: Callable[[Sequence[str]], References] | None = None  # a TSV answer cell read as the reference reads it
    details: Callable[[str, Sequence[str]], Mapping[str, Any]] | None = None  # more record fields from the answer
    out_of: int | None = None  # a task's number is its right answers over this many, whatever its size (lmms-eval's)

    def __call__(self, answer: str, references: Sequence[str], *, from_list: bool = False) -> tuple[float, bool]:
        """(score, correct) of `answer`; `from_list`: the references are a list column's items (a parquet
        release), never read again as a cell. A cell reading to no answer scores wrong, as the reference's loop."""
        given: References = references
        if self.cells is not None and not from_list:
            given = self.cells(references)
            if not given:
                return 0.0, False
        if not given:
            raise ValueError("no reference answer to score against")
        score = self.score(answer, given)
        if math.isnan(score):
            raise ValueError("the score is not a number")
        return score, score >= self.threshold


@dataclass(frozen=True)
class Parser:
    """A registered answer parser (see the module's docstring)."""

    name: str
    read: Reader
    answer: Callable[[str], str] = lowered
    verdict: Verdict | None = None  # None: the reading equals the answer (an open answer: `open_answers_parser`'s)
    scorer: ReferenceScore | None = None  # set for a parser scored against references (`@scorer`)
    unreadable: str | None = None  # the reading of an answer the rules cannot decide, which a judge LLM may read
    verdict_by: str | None = None  # the section whose verdict step rules once the batch is answered (`sections.py`)


PARSERS: Registry[Parser] = Registry("answer parser", "parser", "scorer", "open_answers_parser")


def parser(name: str, *, answer: Callable[[str], str] = lowered, verdict: Verdict | None = None,
           unreadable: str | None = None, verdict_by: str | None = None) -> Callable[[Reader], Reader]:
    """Register the decorated reader as answer parser `name` (see `Parser`)."""
    def register(read: Reader) -> Reader:
        PARSERS.add(name, Parser(name, read, answer, verdict, None, unreadable, verdict_by), read.__module__)
        return read

    return register


def open_answers_parser(name: str, *, answer: Callable[[str], str] = lowered,
                        verdict: Verdict) -> Callable[[Reader], Reader]:
    """`parser`, for the one parser of the package whose verdict also scores every open answer that its own
    parser does not score (`open_answers_verdict`)."""
    return parser(name, answer=answer, verdict=verdict)


@functools.cache
def _open_answers_name() -> str:
    """The parser registered with `@open_answers_parser`, by the registry's index (nothing imported)."""
    return next(d.name for d in declarations() if d.decorator == "open_answers_parser")


def open_answers_verdict() -> Verdict | None:
    """The verdict of an open answer whose parser gives none: that of the parser registered with
    `@open_answers_parser`."""
    return get_parser(_open_answers_name()).verdict


def response_text(response: str, sample: Sample | None = None) -> str:
    """The whole response as given: a parser scored against references normalises it itself."""
    return response


def scorer(name: str, *, threshold: float, cells: Callable[[Sequence[str]], References] | None = None,
           details: Callable[[str, Sequence[str]], Mapping[str, Any]] | None = None,
           out_of: int | None = None) -> Callable[[Scorer], Scorer]:
    """Register the decorated (answer, references) → [0, 1] function as parser `name`, scored against the
    references and right from `threshold` on; it reads the whole response (see `ReferenceScore`)."""
    def register(score: Scorer) -> Scorer:
        rule = ReferenceScore(score, threshold, cells, details, out_of)
        PARSERS.add(name, Parser(name, response_text, stripped, _reference_verdict(rule), rule), score.__module__)
        return score

    return register


def _reference_verdict(rule: ReferenceScore) -> Verdict:
    def verdict(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
        given = sample.metadata.get("references")
        if given is not None and (not isinstance(given, (list, tuple)) or not all(isinstance(r, str) for r in given)):
            raise NotScored(f"bad reference answers: metadata 'references' must be a list of strings, not {given!r}")
        try:
            score, correct = rule(parsed, references(sample), from_list=given is not None)
        except (ImportError, ValueError) as exc:
            raise NotScored(f"cannot score the answer: {exc}") from None
        return Scored(correct, {"score": score, **(rule.details(parsed, references(sample)) if rule.details else {})})

    return verdict


def get_parser(name: str) -> Parser:
    """The parser registered under `name`; a clear error lists the known names."""
    if name not in PARSERS:
        every = PARSERS.entries()
        known = ", ".join(sorted(n for n, p in every.items() if p.scorer is None))
        scored = ", ".join(sorted(n for n, p in every.items() if p.scorer is not None))
        raise UnknownName(f"unknown answer parser {name!r}; known parsers: {known}; scored against references: {scored}")
    return PARSERS.get(name)


def normalize_answer(answer: str, parser_name: str) -> str:
    """The reference answer in the parser's vocabulary (yes/no lowercased, letters upper)."""
    return get_parser(parser_name).answer(answer)


def score_answer(parser_name: str, answer: str, references: Sequence[str], *,
                 from_list: bool = False) -> tuple[float, bool]:
    """(score in [0, 1], correct) of `answer` under the parser `parser_name` scored against references."""
    rule = get_parser(parser_name).scorer
    if rule is None:
        raise ValueError(f"answer parser {parser_name!r} is not scored against references")
    return rule(answer, references, from_list=from_list)


def equal(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
    """The default verdict: right when the reading is the answer."""
    return Scored(parsed == answer)


def score_record(record: Record, sample: Sample, response: Response, *, through_xlsx: bool = False) -> Record:
    """Parse the response and set the verdict (an open answer: `open_answers_verdict` until a section rules).

    `through_xlsx`: the response is scored as VLMEvalKit's .xlsx prediction file hands it to its scorer
    (`prediction_cells.read_back`), unless it was read so already (`response.as_read`); the record keeps
    the response as given and shows the read one where it differs (`read_response`)."""
    text = response.text
    if through_xlsx and not response.as_read:
        text = read_back(response.text)
        record["read_response"] = text if text != response.text else None
    entry = get_parser(record["parser"])
    parsed = entry.read(text, sample)
    if entry.verdict_by is not None:  # its section's verdict step rules once the batch is answered
        record.update({"response": response.text, "parsed": parsed, "error": NOT_YET_RULED,
                       "latency_s": round(response.latency_s, 6)})
        return record
    rule = entry.verdict or (open_answers_verdict() if sample.answer_type == "open" else None) or equal
    try:
        scored = rule(text, parsed, record["answer"], sample)
    except NotScored as exc:
        record.update({"response": response.text, "error": str(exc)})
        if exc.with_reading:
            record["parsed"] = parsed
        return record
    record.update(scored.fields)  # type: ignore[typeddict-item]
    record.update({"response": response.text, "parsed": parsed, "correct": scored.correct,
                   "status": status_of(scored.correct), "latency_s": round(response.latency_s, 6)})
    return record


def references(sample: Sample) -> list[str]:
    """Every accepted answer of an open-ended sample (an explicit empty list: none)."""
    given = sample.metadata.get("references")
    return list(given) if given is not None else [sample.answer]
