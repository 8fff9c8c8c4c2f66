"""TextVQA as VLMEvalKit scores it (vlmeval/dataset/utils/vqa_eval.py): its normalisation and VQA accuracy
on the whole response; and the catalogue's VQA-accuracy template, which relies on it."""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from pytest_mllm.scoring.catalogue_templates import VQA_PROMPT, catalogue_template
from pytest_mllm.scoring.references import ARTICLES, CONTRACTIONS, NUMBER_WORDS, answer_items, vlmevalkit_punctuation
from pytest_mllm.scoring.score import scorer


def normalize_textvqa_answer(text: str) -> str:
    """VLMEvalKit's TextVQA normalisation: newlines and tabs to spaces, strip, the punctuation step
    (`references.vlmevalkit_punctuation`), then per lowercased word: number words to digits, articles dropped, contractions restored.
    Unlike `normalize_vqa_answer`, nothing is lowercased or dropped before the punctuation step and a
    period after a digit stays ("5." is not "5")."""
    text = vlmevalkit_punctuation(text.replace("\n", " ").replace("\t", " ").strip())
    words = [NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    return " ".join(CONTRACTIONS.get(w, w) for w in words if w not in ARTICLES)


@scorer("textvqa_score", threshold=0.6, cells=answer_items)
def textvqa_score(answer: str, references: Sequence[str]) -> float:
    """VQA accuracy as VLMEvalKit scores TextVQA: for each human answer, min(1, other humans giving
    the prediction / 3), averaged. A single reference always scores 0 (it has no other humans)."""
    mine = normalize_textvqa_answer(answer)
    humans = [normalize_textvqa_answer(r) for r in references]
    agreeing = sum(h == mine for h in humans)
    shares = [Fraction(min(3, agreeing - (h == mine)), 3) for h in humans]
    return float(sum(shares, Fraction(0)) / len(shares))


catalogue_template("vqa_score", label="VQA accuracy", parser="textvqa_score", prompt=VQA_PROMPT, max_new_tokens=32,
                   scored_by="VQA accuracy against the human answers (VLMEvalKit's normalisation), per split (the tasks)",
                   metrics=("accuracy", "mean_score", "category"), headline="mean_score")
