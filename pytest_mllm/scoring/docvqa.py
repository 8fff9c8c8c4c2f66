"""DocVQA as VLMEvalKit scores it: ANLS on the response as given, an answer cell's list literal read as
its items; and the catalogue's ANLS template, which relies on it."""

from __future__ import annotations

from typing import Sequence

from pytest_mllm.scoring.catalogue_templates import VQA_PROMPT, catalogue_template
from pytest_mllm.scoring.references import anls, answer_items
from pytest_mllm.scoring.score import scorer


@scorer("docvqa_anls", threshold=1.0, cells=answer_items)
def docvqa_anls(answer: str, references: Sequence[str]) -> float:
    """ANLS (`references.anls`) of the whole response against the answer cell's answers."""
    return anls(answer, references)


catalogue_template("vqa_anls", label="ANLS", parser="docvqa_anls", prompt=VQA_PROMPT, max_new_tokens=32,
                   scored_by="ANLS against the closest answer, 0 below 0.5, per split (the tasks)",
                   metrics=("accuracy", "mean_score", "category"), headline="mean_score")
