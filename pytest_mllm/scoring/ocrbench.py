"""OCRBench's scoring, as its own script scores it (Yuliang-Liu/MultimodalOCR, OCRBench/example.py;
VLMEvalKit's OCRBench evaluation gives the same numbers).

Per question: right (1) when any accepted answer occurs in the response as a substring, both
lowercased, stripped and with newlines read as spaces. Handwritten Mathematical Expression
Recognition (HME100k) keeps case and removes every space instead. No other normalisation: a
fullwidth "ＡＢＣ" does not contain "abc".

Benchmark score: the number of questions right, per question type, and in total out of the
1000 questions (`ocrbench_score` in every scope; Text Recognition is the group of six types).
"""

from __future__ import annotations

from typing import Any, Sequence

from pytest_mllm.scoring.catalogue_templates import catalogue_template
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric
from pytest_mllm.scoring.references import Scorer
from pytest_mllm.scoring.score import scorer

TEXT_RECOGNITION = ("Regular Text Recognition", "Irregular Text Recognition", "Artistic Text Recognition",
                    "Handwriting Recognition", "Digit String Recognition", "Non-Semantic Text Recognition")


def ocrbench_match(answer: str, references: Sequence[str]) -> float:
    """1.0 when a reference, lowercased and stripped, occurs in the response lowercased and stripped
    (newlines read as spaces), else 0.0."""
    said = answer.lower().strip().replace("\n", " ")
    return 1.0 if any(r.lower().strip().replace("\n", " ") in said for r in references) else 0.0


def ocrbench_hme_match(answer: str, references: Sequence[str]) -> float:
    """Handwritten formulas: 1.0 when a reference occurs in the response with every space removed,
    case kept, else 0.0."""
    said = answer.strip().replace("\n", " ").replace(" ", "")
    return 1.0 if any(r.strip().replace("\n", " ").replace(" ", "") in said for r in references) else 0.0


@metric("ocrbench", keys=("ocrbench_score",))
def scope_ocrbench(scope: ScopeView) -> Scope:
    """`ocrbench_score`: the questions answered right in the scope (overall: OCRBench's score of 1000)."""
    scored = scope.scored
    return {"ocrbench_score": sum(1 for r in scored if r["correct"])} if scored else {}


@metric("ocrbench_accuracy", keys=("ocrbench_accuracy",))
def scope_ocrbench_accuracy(scope: ScopeView) -> Scope:
    """`ocrbench_accuracy` of a task scored by OCRBench's matching: the questions right over 1000, whatever
    the task's size, as lmms-eval's `ocrbench_aggregate_accuracy` returns it (LIME-M's ocrbench subtask
    of about 1000 questions is reported so)."""
    scored = scope.scored
    if scope.kind != "task" or not scored or any(r["parser"] != "ocrbench" for r in scored):
        return {}
    return {"ocrbench_accuracy": sum(1 for r in scored if r["correct"]) / 1000}


catalogue_template(
    "ocrbench", label="OCRBench", parser="ocrbench", prompt="{question}", max_new_tokens=128,
    scored_by="an accepted answer found in the response; the count of right answers overall and per question type "
              "(the tasks)",
    metrics=("accuracy", "ocrbench"), headline="ocrbench_score", loader_options={"task_column": "category"},
    groups={"text_recognition": TEXT_RECOGNITION},
    tasks={"Handwritten Mathematical Expression Recognition": {"parser": "ocrbench_hme"}})


def ocrbench_answers(references: Sequence[str]) -> list[Any]:
    """OCRBench's answers as its VLMEvalKit evaluation reads the cell: always `eval`-ed (here computed,
    `scoring/list_cells.py`), a list's items as they are (the scorer stops at an item that is not text,
    as the reference does), a text's characters; a cell it cannot read is this row's error."""
    from pytest_mllm.scoring.list_cells import NotComputed, cell_value

    if len(references) != 1:
        return list(references)
    try:
        value = cell_value(references[0])
    except NotComputed:
        raise ValueError(f"answer cell {references[0]!r} is not a Python list literal; OCRBench's reference "
                         "evaluates every answer cell and cannot score it either") from None
    if not isinstance(value, (list, tuple, str)):
        raise ValueError(f"answer cell {references[0]!r} reads as {value!r}, not a list of answers, which "
                         "OCRBench's reference cannot score either")
    return list(value)


@scorer("ocrbench", threshold=1.0, cells=ocrbench_answers, out_of=1000)
def _ocrbench(answer: str, references: Sequence[Any]) -> float:
    return _first_match(ocrbench_match, answer, references)


@scorer("ocrbench_hme", threshold=1.0, cells=ocrbench_answers)
def _ocrbench_hme(answer: str, references: Sequence[Any]) -> float:
    return _first_match(ocrbench_hme_match, answer, references)


def _first_match(match: Scorer, answer: str, references: Sequence[Any]) -> float:
    """OCRBench's loop: the answers in order, right at the first found; an answer that is not text,
    reached before that, stops the reference (here: this row's error)."""
    for reference in references:
        if not isinstance(reference, str):
            raise ValueError(f"answer {reference!r} is not text, which OCRBench's reference cannot score either")
        if match(answer, [reference]):
            return 1.0
    return 0.0
