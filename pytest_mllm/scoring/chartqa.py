"""ChartQA as VLMEvalKit scores it: relaxed accuracy on the whole response, an answer cell's list literal
read as its printed items; and the catalogue's relaxed-accuracy template, which relies on it."""

from __future__ import annotations

from typing import Sequence

from pytest_mllm.scoring.catalogue_templates import VQA_PROMPT, catalogue_template
from pytest_mllm.scoring.references import printed_items, relaxed_accuracy
from pytest_mllm.scoring.score import scorer


@scorer("chartqa_relaxed", threshold=1.0, cells=printed_items)
def chartqa_relaxed(answer: str, references: Sequence[str]) -> float:
    """ChartQA's relaxed accuracy on the whole response, stripped (references as given)."""
    return relaxed_accuracy(answer.strip(), references)


catalogue_template("vqa_relaxed", label="relaxed accuracy", parser="chartqa_relaxed", prompt=VQA_PROMPT,
                   max_new_tokens=32, scored_by="relaxed accuracy (5 % numeric tolerance), per split (the tasks)",
                   metrics=("accuracy", "mean_score", "category"), headline="mean_score")
