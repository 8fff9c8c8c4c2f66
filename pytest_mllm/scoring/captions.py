"""Caption subtasks scored over the whole subtask, as pycocoevalcap scores them (LIME-M's textcaps and
coco_cap through lmms-eval's `*_aggregation_result`): corpus BLEU-4 and CIDEr-D.

Each caption record carries its tokenised caption and references and its BLEU counts (`record["caption"]`,
written by the scorer with `references.caption_tokens`, our stand-in for the PTB tokeniser). From them
the metrics `captions` (`bleu_4`) and `cider` (`cider`; declared apart: pure Python, about 0.7 s per
bootstrap resample of 1000 captions, where `bleu_4` pools counts):

* **BLEU-4** (`Bleu(4)`, bleu/bleu_scorer.py, option "closest"): per caption, the n-gram counts (n = 1…4)
  clipped by the most generous reference, and the length of the reference closest to the caption's
  (the shorter on a tie); counts and lengths pooled over the subtask, then one geometric mean with
  (matches + 1e-15) / (candidates + 1e-9) per order and one brevity penalty exp(1 − r/c) when c < r
  (c + 1e-15 over r + 1e-9). A subtask's BLEU-4 is not the mean of its captions' BLEU-4.
* **CIDEr** (`Cider()`, cider/cider_scorer.py, CIDEr-D: n = 1…4, sigma 6): document frequencies of the
  n-grams over the subtask's reference sets, idf weights log(#captions) − log(max(1, df)); per caption
  and reference, each order's cosine of the tf-idf vectors with the candidate's weights clipped by the
  reference's, times exp(−δ²/72) where δ is the difference of their bigram counts (the scorer's
  "length" counts 2-grams); averaged over orders and references, ×10; the subtask's number is the mean
  over captions.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from typing import Sequence, TypedDict

from pytest_mllm.record import Record, RecordPart
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric


class CaptionPart(TypedDict):
    """A caption scored against references, in its record: what the subtask's BLEU-4 and CIDEr need."""

    caption: str  # tokenised
    references: list[str]  # tokenised
    bleu_counts: list[int]  # `bleu_counts(caption, references)`


CAPTION: RecordPart[CaptionPart] = RecordPart("caption")

ORDER = 4
SIGMA = 6.0
_SMALL, _TINY = 1e-9, 1e-15  # pycocoevalcap's BleuScorer constants

Caption = tuple[str, Sequence[str]]  # (tokenised caption, tokenised references)


@functools.lru_cache(maxsize=1 << 16)
def _ngrams(tokens: str) -> Counter[tuple[str, ...]]:
    """The 1- to 4-gram counts of a tokenised text (cached: never modify the result)."""
    words = tokens.split()
    return Counter(tuple(words[i:i + k]) for k in range(1, ORDER + 1) for i in range(len(words) - k + 1))


def bleu_counts(caption: str, references: Sequence[str]) -> list[int]:
    """What one caption adds to the subtask's BLEU: [its length, the closest reference length, matches
    of orders 1-4 clipped by the most generous reference, candidates of orders 1-4]."""
    length = len(caption.split())
    most: Counter[tuple[str, ...]] = Counter()
    for reference in references:
        most |= _ngrams(reference)
    correct = [0] * ORDER
    for ngram, count in _ngrams(caption).items():
        correct[len(ngram) - 1] += min(most[ngram], count)
    closest = min((abs(len(r.split()) - length), len(r.split())) for r in references)[1]
    return [length, closest, *correct, *(max(0, length - k) for k in range(ORDER))]


def bleu4_of_counts(counts: Sequence[Sequence[int]]) -> float:
    """BLEU-4 of captions from their pooled `bleu_counts`, with pycocoevalcap's constants."""
    pooled = [sum(column) for column in zip(*counts)]
    caption_length, reference_length = pooled[0], pooled[1]
    bleu, product = 0.0, 1.0
    for k in range(ORDER):
        product *= (pooled[2 + k] + _TINY) / (pooled[2 + ORDER + k] + _SMALL)
        bleu = product ** (1.0 / (k + 1))
    ratio = (caption_length + _TINY) / (reference_length + _SMALL)
    return bleu * math.exp(1 - 1 / ratio) if ratio < 1 else bleu


def corpus_bleu4(captions: Sequence[Caption]) -> float:
    """pycocoevalcap's corpus BLEU-4 over (caption, references) pairs of tokenised text."""
    return bleu4_of_counts([bleu_counts(caption, references) for caption, references in captions])


def cider_d(captions: Sequence[Caption]) -> float:
    """pycocoevalcap's CIDEr (CIDEr-D) over (caption, references) pairs of tokenised text."""
    document_frequency: Counter[tuple[str, ...]] = Counter()
    for _, references in captions:
        document_frequency.update({ngram for reference in references for ngram in _ngrams(reference)})
    log_documents = math.log(float(len(captions)))

    def vector(tokens: str) -> tuple[list[dict[tuple[str, ...], float]], list[float], int]:
        weights: list[dict[tuple[str, ...], float]] = [{} for _ in range(ORDER)]
        norms, bigrams = [0.0] * ORDER, 0
        for ngram, count in _ngrams(tokens).items():
            n = len(ngram) - 1
            weights[n][ngram] = count * (log_documents - math.log(max(1.0, document_frequency[ngram])))
            norms[n] += weights[n][ngram] ** 2
            bigrams += count if n == 1 else 0
        return weights, [math.sqrt(x) for x in norms], bigrams

    scores = []
    for caption, references in captions:
        mine, my_norms, my_length = vector(caption)
        total = [0.0] * ORDER
        for reference in references:
            theirs, their_norms, their_length = vector(reference)
            penalty = math.e ** (-(float(my_length - their_length) ** 2) / (2 * SIGMA ** 2))
            for n in range(ORDER):
                value = sum(min(w, theirs[n].get(g, 0.0)) * theirs[n].get(g, 0.0) for g, w in mine[n].items())
                if my_norms[n] != 0 and their_norms[n] != 0:
                    value /= my_norms[n] * their_norms[n]
                total[n] += value * penalty
        scores.append(sum(total) / ORDER / len(references) * 10.0)
    return math.fsum(scores) / len(scores)


def captions_of(records: Sequence[Record]) -> list[Caption]:
    """The (caption, references) pairs the caption records carry."""
    return [(part["caption"], part["references"]) for r in records if (part := CAPTION.get(r))]


def subtask_bleu4(records: Sequence[Record]) -> float:
    """BLEU-4 over caption records, from the counts each carries."""
    return bleu4_of_counts([part["bleu_counts"] for r in records if (part := CAPTION.get(r))])


def is_caption_subtask(scope: ScopeView) -> bool:
    """A task scope whose scored records are all captions."""
    return scope.kind == "task" and bool(scope.scored) and all(CAPTION.get(r) for r in scope.scored)


@metric("captions", keys=("bleu_4",))
def scope_captions(scope: ScopeView) -> Scope:
    """`bleu_4` of a caption subtask, over the whole subtask."""
    return {"bleu_4": subtask_bleu4(scope.scored)} if is_caption_subtask(scope) else {}


@metric("cider", keys=("cider",))
def scope_cider(scope: ScopeView) -> Scope:
    """`cider` of a caption subtask, over the whole subtask."""
    return {"cider": cider_d(captions_of(scope.scored))} if is_caption_subtask(scope) else {}
