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

from typing import Sequence

from pytest_mllm.scoring.catalogue_templates import catalogue_template
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric

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
