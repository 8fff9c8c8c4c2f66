"""CC-OCR's text recognition (its multi_lan_ocr and multi_scene_ocr groups), as VLMEvalKit scores it
(`CCOCRDataset.evaluate` with `utils/ccocr_evaluator/ocr_evaluator.py`).

Per row: the response and the answer are each tab, line break, "###" and "***" cleaned, spaces collapsed,
lowercased and cut into tokens: words, or characters where the row's split names Arabic, Japanese or Korean
or holds "zh"; multi_scene_ocr's words keep only letters and digits (empty tokens dropped). The tokens both
hold (as multisets) make recall and precision, each over its count + 1e-9, and F1 = 2·r·p / (r + p + 1e-9):
the row's score. A response VLMEvalKit records as failed ("Failed to obtain answer via API.") is no tokens.

Per scope: the rows of each sub-dataset (category, l2-category, split), each one's macro F1 = the sum of its
rows' F1 / (rows + 1e-9); the groups' means (multi_lan_ocr, multi_scene_ocr) and `ocr_f1`, the mean of those,
VLMEvalKit's `total`. A file of one sub-dataset: its macro F1. VLMEvalKit keys rows by image_name, a later row
of the same name replacing an earlier one; here every row counts.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.catalogue_templates import catalogue_template
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric
from pytest_mllm.scoring.score import Scored, as_given, parser

FAILED = "Failed to obtain answer via API."  # VLMEvalKit's mark of a failed inference: no prediction
CHARACTER_SPLITS = ("Arabic", "Japanese", "Korean")
GROUPS = {"multi_lan_ocr": "lan_ocr", "multi_scene_ocr": "scene_ocr"}  # the category → VLMEvalKit's result key
_SMOOTH = 1e-9
_SPACES = re.compile(r"\s+")
_NOT_ALPHANUMERIC = re.compile("[^A-Za-z0-9]+")


def tokens(text: str, *, words: bool, alphanumeric: bool) -> list[str]:
    """The text cleaned, lowercased and cut into words (or characters), empty tokens dropped."""
    text = text.replace("\t", " ").replace("\n", " ").replace("###", "").replace("***", "")
    text = _SPACES.sub(" ", text)
    if not words:
        text = text.replace(" ", "")
    found = [t.lower() for t in (text.split(" ") if words else list(text))]
    if alphanumeric:
        found = [_NOT_ALPHANUMERIC.sub("", t) for t in found]
    return [t for t in found if t]


def reading(split: str, category: str | None) -> tuple[bool, bool]:
    """(word level, letters and digits only) for a row of this split and category."""
    words = not (split in CHARACTER_SPLITS or "zh" in split)
    return words, words and "multi_scene_ocr" in (category or "")


def row_f1(response: str, answer: str, split: str, category: str | None) -> tuple[float, bool]:
    """The row's F1 as VLMEvalKit computes it, and whether the token multisets are equal."""
    words, alphanumeric = reading(split, category)
    predicted = [] if response == FAILED else tokens(response.strip(), words=words, alphanumeric=alphanumeric)
    expected = tokens(answer.strip(), words=words, alphanumeric=alphanumeric)
    right = sum((Counter(expected) & Counter(predicted)).values())
    recall = right / (len(expected) + _SMOOTH)
    precision = right / (len(predicted) + _SMOOTH)
    f1 = 2 * recall * precision / (recall + precision + _SMOOTH)
    return f1, Counter(expected) == Counter(predicted)


def _f1_verdict(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
    """Right when the token multisets are equal; the row's F1 is its record's score."""
    f1, correct = row_f1(text, sample.answer, sample.split, sample.category)
    return Scored(correct, {"score": f1})


@parser("ccocr_ocr", answer=as_given, verdict=_f1_verdict)
def ccocr_text(response: str, sample: Sample | None = None) -> str:
    """CC-OCR's text recognition (`parser: ccocr_ocr`): the response as given; its verdict and score are the
    row's token F1, read as the row's split and category say."""
    return response


def macro_f1(records: Sequence[Record]) -> float:
    """VLMEvalKit's macro F1 of one sub-dataset: the sum of its rows' F1 over (rows + 1e-9)."""
    total = 0.0
    for record in records:
        total += record["score"] or 0.0
    return total / (len(records) + _SMOOTH)


@metric("ocr_f1", keys=("ocr_f1",))
def scope_ocr_f1(scope: ScopeView) -> Scope:
    """`ocr_f1`: the mean over CC-OCR's groups of the mean macro F1 of their sub-datasets in the scope."""
    subsets: dict[tuple[str, str, str], list[Record]] = {}
    for record in scope.scored:
        if record["parser"] == "ccocr_ocr":
            subsets.setdefault((record.get("category") or "", record.get("l2_category") or "", record["split"]),
                               []).append(record)
    families: dict[str, list[float]] = {}
    for key, records in subsets.items():
        family = next((f for f in GROUPS.values() if f in "_".join(key)), None)
        if family is not None:
            families.setdefault(family, []).append(macro_f1(records))
    if not families:
        return {}
    means = [sum(values) / len(values) for values in families.values()]
    return {"ocr_f1": sum(means) / len(means)}


catalogue_template(
    "ccocr_ocr", label="CC-OCR text recognition", parser="ccocr_ocr", prompt="{question}", max_new_tokens=2048,
    scored_by="the token F1 of the response against the text (words, or characters for Arabic, Japanese, Korean "
              "and Chinese splits), macro F1 per split (the tasks)",
    metrics=("accuracy", "mean_score", "ocr_f1"), headline="ocr_f1")
