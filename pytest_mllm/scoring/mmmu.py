"""MMMU scored as its authors' evaluation code scores it (MMMU-Benchmark/MMMU, `mmmu/utils/`).

Multiple choice (`read_choice`): the response loses leading and trailing `, . ! ? ; : '` (each
character stripped in that order, once), is padded with a space each side, then a letter is
looked for as "(B)", else as " B "; only when neither occurs and the response has more than five
words, the option texts found in it (case-insensitive) are candidates. Several candidates: the one
occurring last wins (the first of equal positions). No candidate: MMMU draws one option letter
with Python's `random.choice`, its generator seeded with 42 once at the start of the run, in the
order the answers are parsed (subjects in MMMU's order, then rows in file order). A test cannot
know that draw, so its verdict is "incorrect" and the answer reads "random:ABCD"; the metric
`mmmu` replays the draws over the whole run (`random_fill`) and reports `mmmu_accuracy`, the
number MMMU's script gives.

Open answers (`read_open`): the lowercased response is cut at line breaks; from each piece the
shortest tail after "could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ",
"result " (and "=" in the last piece) is kept, or the whole response when there is none; the
numbers in those tails are added; numbers become floats rounded to two places, one-character
texts become " x" and "x ". Correct when a float prediction equals a reference number, or a
reference text lies inside a text prediction. A reference stored as a Python list's text
("['24/7', '3.429']", as the parquet release writes three validation answers) is that list of
accepted answers, as MMMU's own answer file has them.

Scores: per subject, correct / count; per discipline and overall, the subjects' accuracies
weighted by their counts (MMMU's `calculate_ins_level_acc`).
"""

from __future__ import annotations

import ast
import json
import random
import re
from collections import defaultdict
from typing import Any, Sequence

from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import ScopeView, metric
from pytest_mllm.scoring.score import Scored, parser, stripped

SEED = 42  # MMMU seeds Python's generator once, when its evaluation module is imported
RANDOM = "random:"  # parsed value of an unreadable choice answer: "random:" + the letters drawn from

# The six disciplines and their subjects (the configs of the Hugging Face release), as MMMU groups them.
DISCIPLINES: dict[str, tuple[str, ...]] = {
    "Art and Design": ("Art", "Art_Theory", "Design", "Music"),
    "Business": ("Accounting", "Economics", "Finance", "Manage", "Marketing"),
    "Science": ("Biology", "Chemistry", "Geography", "Math", "Physics"),
    "Health and Medicine": ("Basic_Medical_Science", "Clinical_Medicine", "Diagnostics_and_Laboratory_Medicine",
                            "Pharmacy", "Public_Health"),
    "Humanities and Social Science": ("History", "Literature", "Sociology", "Psychology"),
    "Tech and Engineering": ("Agriculture", "Architecture_and_Engineering", "Computer_Science", "Electronics",
                             "Energy_and_Power", "Materials", "Mechanical_Engineering"),
}
# The order MMMU's scripts walk the subjects in (and so draw their random letters in): alphabetical.
SUBJECTS: tuple[str, ...] = tuple(sorted(s for members in DISCIPLINES.values() for s in members))

_EDGE_CHARACTERS = (",", ".", "!", "?", ";", ":", "'")
_KEY_WORDS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = {":", ",", ".", "!", "?", ";", "'"}
_NUMBER_PATTERNS = (
    re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b"),  # with thousands separators
    re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+"),  # scientific notation
    re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])"),  # plain
)

Prediction = str | float


# --- multiple choice --------------------------------------------------------------------------------

def read_choice(response: str, choices: Sequence[tuple[str, str]]) -> str | None:
    """The option letter MMMU reads in `response`, or None where it would draw one at random."""
    for character in _EDGE_CHARACTERS:
        response = response.strip(character)
    padded = f" {response} "
    bracketed = [letter for letter, _ in choices if f"({letter})" in padded]
    if bracketed:
        return _last(bracketed, [padded.rfind(f"({letter})") for letter in bracketed])
    spaced = [letter for letter, _ in choices if f" {letter} " in padded]
    if spaced:
        return _last(spaced, [padded.rfind(f" {letter} ") for letter in spaced])
    if len(padded.split()) > 5:
        lowered = padded.lower()
        named = [(letter, text.lower()) for letter, text in choices if text.lower() in lowered]
        if named:
            return _last([letter for letter, _ in named], [lowered.rfind(text) for _, text in named])
    return None


def _last(candidates: list[str], positions: list[int]) -> str:
    """The candidate found furthest right; the earliest listed among equals."""
    if len(candidates) == 1:
        return candidates[0]
    return candidates[positions.index(max(positions))]


# --- open answers ----------------------------------------------------------------------------------

def _as_number(text: str) -> float | None:
    try:
        return round(float(text.replace(",", "")), 2)
    except ValueError:
        return None


def normalize(text: str) -> list[Prediction]:
    """A number as a float rounded to two places; a text lowercased ("x" → " x", "x ")."""
    text = text.strip()
    number = _as_number(text)
    if number is not None:
        return [number]
    text = text.lower()
    return [f" {text}", f"{text} "] if len(text) == 1 else [text]


def _key_tails(response: str) -> list[str]:
    """The shortest tail after a key word of each line (whole response when none)."""
    text = response.strip().strip(".").lower()
    pieces = re.split(r"\.\s(?=[A-Z])|\n", text)  # lowercased first, so only line breaks cut
    tails: list[str] = []
    for number, piece in enumerate(pieces):
        keys = _KEY_WORDS + (("=",) if number == len(pieces) - 1 else ())
        shortest = ""
        for key in (k for k in keys if k in piece):
            tail = piece.split(key)[-1].strip()
            if not shortest or len(tail) < len(shortest):  # an empty tail is replaced by the next one
                shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            tails.append(shortest)
    return tails or [text]


def read_open(response: str) -> list[Prediction]:
    """MMMU's predictions from an open answer: the key tails and their numbers, normalised, unique."""
    tails = _key_tails(response)
    texts = tails + [n for tail in tails for pattern in _NUMBER_PATTERNS for n in pattern.findall(tail)]
    return list({item: None for text in texts for item in normalize(text)})


def references(answer: str) -> list[str]:
    """The accepted answers: a Python list's text is its items, anything else the answer itself."""
    if answer.strip().startswith("["):
        try:
            items = ast.literal_eval(answer.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return [answer]
        if isinstance(items, list) and all(isinstance(item, str) for item in items):
            return items
    return [answer]


def open_correct(answer: str, predictions: Sequence[Prediction]) -> bool:
    """A float prediction equal to a reference number, or a reference text inside a text prediction."""
    golds = [item for reference in references(answer) for item in normalize(reference)]
    for prediction in predictions:
        if isinstance(prediction, str):
            if any(isinstance(gold, str) and gold in prediction for gold in golds):
                return True
        elif prediction in golds:
            return True
    return False


# --- the parser and the verdict ---------------------------------------------------------------------

def verdict(response: str, sample: Sample) -> tuple[str, bool]:
    """(what was read, correct) for one sample: an option letter, "random:<letters>", or the open
    predictions as JSON text."""
    if sample.choices:
        letter = read_choice(response, sample.choices)
        if letter is None:
            return RANDOM + "".join(letter for letter, _ in sample.choices), False
        return letter, letter == sample.answer
    predictions = read_open(response)
    shown = json.dumps(sorted(predictions, key=lambda p: (isinstance(p, str), str(p))), ensure_ascii=False)
    return shown, open_correct(sample.answer, predictions)


def _mmmu_verdict(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
    return Scored(verdict(text, sample)[1])


@parser("mmmu", answer=stripped, verdict=_mmmu_verdict)
def parse(response: str, sample: Sample) -> str:
    """The `mmmu` parser: what MMMU reads in the response (see `verdict`), an option letter as given or
    the open answer its matching reads; the verdict and the seeded draws are this module's."""
    return verdict(response, sample)[0]


# --- the run's scores --------------------------------------------------------------------------------

def _subject_rank(task: str) -> int:
    return SUBJECTS.index(task) if task in SUBJECTS else len(SUBJECTS)


def random_fill(records: Sequence[Record], seed: int = SEED) -> dict[str, str]:
    """The letter MMMU's script draws for each unreadable choice answer, by record id: one generator
    seeded once, drawing in MMMU's order (subjects alphabetically, then the run's order)."""
    pending = [r for r in records if r["status"] != "error" and (r["parsed"] or "").startswith(RANDOM)]
    ordered = sorted(enumerate(pending), key=lambda item: (_subject_rank(item[1]["task"]), item[0]))
    generator = random.Random(seed)
    return {record["id"]: generator.choice(list(record["parsed"][len(RANDOM):])) for _, record in ordered}


_memo: list[Any] = [None, 0, {}]  # the last benchmark's records (by identity), their number, their draws


def _draws(records: Sequence[Record]) -> dict[str, str]:
    """The draws of one benchmark's records, computed once for all its scopes."""
    if _memo[0] is not records or _memo[1] != len(records):
        _memo[:] = [records, len(records), random_fill(records)]
    draws: dict[str, str] = _memo[2]
    return draws


def mmmu_correct(record: Record, draws: dict[str, str]) -> bool:
    """The record's verdict as MMMU's script gives it: an unreadable choice by its random letter."""
    if (record["parsed"] or "").startswith(RANDOM):
        return draws.get(record["id"]) == record["answer"]
    return bool(record["correct"])


def subject_accuracy(records: Sequence[Record], draws: dict[str, str]) -> dict[str, tuple[float, int]]:
    """(accuracy, count) per subject (task), in the order met."""
    by_subject: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        by_subject[record["task"]].append(mmmu_correct(record, draws))
    return {subject: (sum(marks) / len(marks), len(marks)) for subject, marks in by_subject.items()}


def pooled(results: Sequence[tuple[float, int]]) -> float:
    """MMMU's instance-level accuracy over subjects: accuracies weighted by their counts."""
    count = sum(n for _, n in results)
    return sum(acc * n for acc, n in results) / count if count else 0.0


@metric("mmmu", keys=("mmmu_accuracy",))
def scope_mmmu(view: ScopeView) -> dict[str, float]:
    """`mmmu_accuracy` of one scope: the seeded draws replayed over the whole benchmark's records."""
    scored = view.scored
    if not scored:
        return {}
    draws = _draws(view.benchmark or view.records)
    subjects = subject_accuracy(scored, draws)
    if len(subjects) == 1:
        return {"mmmu_accuracy": next(iter(subjects.values()))[0]}
    order = sorted(subjects, key=_subject_rank)
    return {"mmmu_accuracy": pooled([subjects[s] for s in order])}
