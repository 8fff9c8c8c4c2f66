"""VRPTEST's relaxed accuracy for code answers: a response counts when BLEU-4 exceeds 0.8.

The paper (§3.2, Metrics): "Responses with a BLEU-4 score exceeding a predefined threshold of
0.8 are considered correct" — strictly above, so a score of exactly 0.8 is wrong.

BLEU is sacrebleu's sentence BLEU (4-gram, "13a" tokenisation, exponential smoothing,
effective order), scaled to 0–1. A response wrapped in one markdown code fence is
compared without the fence.
"""

from __future__ import annotations

import re

from pytest_mllm.sample import Sample
from pytest_mllm.scoring.score import Scored, as_given, parser

_FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)\n?```\s*$", re.DOTALL)


def code_bleu4(response: str, reference: str) -> float:
    """Sentence BLEU-4 of `response` against `reference`, in 0–1."""
    try:
        from sacrebleu import BLEU
    except ImportError:
        raise ImportError("relaxed code matching needs sacrebleu: pip install sacrebleu") from None
    fenced = _FENCE.match(response)
    hypothesis = fenced.group(1) if fenced else response
    return BLEU(effective_order=True).sentence_score(hypothesis.strip(), [reference.strip()]).score / 100


def relaxed_code_match(response: str, reference: str, threshold: float = 0.8) -> bool:
    """Whether `response` matches the reference code under the paper's BLEU-4 > `threshold` rule."""
    return code_bleu4(response, reference) > threshold


def _code_verdict(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
    return Scored(relaxed_code_match(text, sample.answer))


@parser("code_bleu4", answer=as_given, verdict=_code_verdict)
def code(response: str, sample: Sample | None = None) -> str:
    """The response as code, unchanged but for surrounding blank lines (scored by BLEU-4 > 0.8)."""
    return response.strip("\n")
