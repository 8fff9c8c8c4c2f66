"""MM-Vet as VLMEvalKit scores it (`vlmeval/dataset/utils/mmvet.py`: `MMVet_auxeval`, `MMVet_acc`).

A judge LLM grades each answer against the reference from 0.0 (totally wrong) to 1.0 (totally right), the
reference's `<AND>` meaning every element is needed and `<OR>` any one. Its reply is read whole as a number
(`read_grade`: Python's `float()`, so " 0.5\\n" and "1" read, "0.5 because …" does not) between 0 and 1; a
reply that does not read is asked again at a higher temperature (0, 0.5, 1, 1.5, 2: five attempts,
`MMVetGrader`; the judge is first shown seven graded rows of a table). A sample's score is its grade; the
benchmark's is their mean (VLMEvalKit reports ×100).

Reported, as VLMEvalKit's two tables: per capability (rec, ocr, know, gen, spat, math: a sample counts in
each capability whose name occurs in its category cell, as VLMEvalKit tests `capability in category`) and per
capability combination (the category cell with "," written "_", in the order they first occur), each with
Overall. Both tables read one table of sums, keyed by name: a sample whose category is one capability alone
("rec") counts twice in that capability, and the combination "rec" reports the capability's number
(`breakdowns`).

Where we differ, on purpose: a reply that reads as NaN ("nan") is no grade here (VLMEvalKit's range test
lets it through and every mean it enters becomes NaN); after five unreadable replies VLMEvalKit scores 0.0, we
report the sample as a judge error (`--mllm-judge-mode=compat`: 0.0, as VLMEvalKit).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from pytest_mllm.judge.graded import GRADED_BY
from pytest_mllm.judge.graders import (RETRY_TEMPERATURES, Grade, GradeItem, Grader, GradingPrompt, cell_text, grader,
                                       scored_text)
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.score import as_given, parser

CAPABILITIES = ("rec", "ocr", "know", "gen", "spat", "math")  # VLMEvalKit's order


def read_grade(reply: str) -> float | None:
    """The grade a reply gives: `float()` of the whole reply, from 0 to 1; None when it does not read."""
    try:
        grade = float(reply)
    except ValueError:
        return None
    return grade if 0.0 <= grade <= 1.0 else None  # NaN fails both comparisons


def capabilities(category: str) -> tuple[str, ...]:
    """The capabilities a sample counts in: those whose name occurs in its category cell."""
    return tuple(capability for capability in CAPABILITIES if capability in category)


def combination(category: str) -> str:
    """The capability combination a sample belongs to, as VLMEvalKit names it ("rec,ocr" → "rec_ocr")."""
    return category.replace(",", "_")


def breakdowns(category: str) -> dict[str, tuple[str, ...]]:
    """The capabilities and the combination a sample counts in, as `MMVet_acc` counts: its one table of sums
    serves both reports, so a combination named like a capability ("rec", a sample of that capability alone)
    adds its samples to that capability a second time, and reports the capability's number."""
    own = combination(category)
    return {"capability": capabilities(category) + ((own,) if own in CAPABILITIES else ()), "combination": (own,)}


def mean_grade(grades: list[float]) -> float:
    """The mean of a sample's grades over the judge's runs (one run: its grade)."""
    return math.fsum(grades) / len(grades)


@parser("mmvet", answer=as_given, verdict_by=GRADED_BY)
def mmvet_response(response: str, sample: Sample) -> str:
    """The whole response: the judge grades it in the grading step (`MMVetGrader`)."""
    return response


# --- the judge step -------------------------------------------------------------------------------------------------

_CARTOON = ("The cartoon jokes that a cat named \"Tiger\" is afraid of a tiny mouse: the name promises a courage "
            "the cat does not have, and the gap between the fierce name and the timid behaviour is the joke.")
MMVET_PROMPT = GradingPrompt(f"""\
Compare a model's prediction with the ground truth and score how correct the prediction is.
In the ground truth, <AND> means the prediction is fully right only if it contains every element, and <OR> \
means it is fully right if it contains any one of them.
Score on this scale of eleven steps: 0.0 for a completely wrong prediction, then 0.1, 0.2, 0.3, 0.4, 0.5, \
0.6, 0.7, 0.8, 0.9, up to 1.0 for a completely right one. Fill in only the score of the last row.

Question | Ground truth | Prediction | Correctness
--- | --- | --- | ---
What are the two roots of the equation? | 2 <AND> 3 | x = 4 | 0.0
What are the two roots of the equation? | 2 <AND> 3 | x = 2 | 0.5
What are the two roots of the equation? | 2 <AND> 3 | x = 3 | 0.5
What are the two roots of the equation? | 2 <AND> 3 | x = 3 or 4 | 0.5
What are the two roots of the equation? | 2 <AND> 3 | x = 2 or x = 3 | 1.0
Why is this cartoon funny? | {_CARTOON} | The cartoon shows a cat called Tiger running away from a mouse. | 0.4
Why is this cartoon funny? | {_CARTOON} | The humour lies in the contrast between the cat's fierce name, Tiger, and the way \
it flees from a small mouse: the name suggests bravery, the behaviour shows the opposite. | 1.0
{{question}} | {{answer}} | {{prediction}} | """)


@grader("mmvet")
class MMVetGrader(Grader):
    """MM-Vet: a 0–1 grade against the reference, asked again at higher temperatures while it does not read."""

    placeholders = ("question", "answer", "prediction")
    prompt = MMVET_PROMPT
    temperatures = RETRY_TEMPERATURES
    max_tokens = 2048
    repeatable = True

    def item(self, record: Record, sample: Sample) -> GradeItem:
        category = str((sample.metadata.get("columns") or {}).get("category") or sample.category or "nan")
        answer = sample.answer.replace("<AND>", " <AND> ").replace("<OR>", " <OR> ")
        return GradeItem(str(sample.metadata.get("source_id", sample.id)),
                         {"question": sample.question, "answer": answer, "prediction": scored_text(record)},
                         category, breakdowns(category), shared={"combination": "capability"})

    def read(self, reply: str, item: GradeItem) -> Grade | None:
        grade = read_grade(reply)
        return None if grade is None else self._grade([grade])

    @staticmethod
    def _grade(grades: list[float]) -> Grade:
        mean = mean_grade(grades)
        return Grade(mean == 1.0, f"{mean:g}", mean, {"grade": mean, "grades": grades})

    def replayed(self, row: Mapping[str, Any]) -> str | None:
        if "All 5 retries failed" in cell_text(row.get("log")):
            return None
        return cell_text(row.get("score"))

    def fallback(self, item: GradeItem) -> Grade:
        return self._grade([0.0])

    def combine(self, grades: list[Grade]) -> Grade:
        return self._grade([g for grade in grades for g in grade.values["grades"]])
