"""Caption subtasks scored over the whole subtask, as pycocoevalcap scores them (LIME-M's textcaps and
coco_cap through lmms-eval's `*_aggregation_result`): corpus BLEU-4 and CIDEr-D.

Each caption record carries its tokenised caption and references (`record["caption"]`, written by the
scorer with `references.caption_tokens`, our stand-in for the PTB tokeniser). From them:

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

import math
from collections import Counter
from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import Scope, ScopeView

ORDER = 4
SIGMA = 6.0
_SMALL, _TINY = 1e-9, 1e-15  # pycocoevalcap's BleuScorer constants

Caption = tuple[str, Sequence[str]]  # (tokenised caption, tokenised references)


def _ngrams(tokens: str) -> Counter[tuple[str, ...]]:
    words = tokens.split()
    return Counter(tuple(words[i:i + k]) for k in range(1, ORDER + 1) for i in range(len(words) - k + 1))


def corpus_bleu4(captions: Sequence[Caption]) -> float:
    """pycocoevalcap's corpus BLEU-4 over (caption, references) pairs of tokenised text."""
    correct, guess = [0] * ORDER, [0] * ORDER
    caption_length = reference_length = 0
    for caption, references in captions:
        length = len(caption.split())
        most: Counter[tuple[str, ...]] = Counter()
        for reference in references:
            most |= _ngrams(reference)
        for ngram, count in _ngrams(caption).items():
            correct[len(ngram) - 1] += min(most[ngram], count)
        for k in range(ORDER):
            guess[k] += max(0, length - k)
        caption_length += length
        reference_length += min((abs(len(r.split()) - length), len(r.split())) for r in references)[1]
    bleu, product = 0.0, 1.0
    for k in range(ORDER):
        product *= (correct[k] + _TINY) / (guess[k] + _SMALL)
        bleu = product ** (1.0 / (k + 1))
    ratio = (caption_length + _TINY) / (reference_length + _SMALL)
    return bleu * math.exp(1 - 1 / ratio) if ratio < 1 else bleu


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
    return [(r["caption"]["caption"], r["caption"]["references"]) for r in records]


def scope_captions(scope: ScopeView) -> Scope:
    """`bleu_4` and `cider` of a caption subtask (a task scope whose scored records are all captions)."""
    scored = scope.scored
    if scope.kind != "task" or not scored or not all(r.get("caption") for r in scored):
        return {}
    captions = captions_of(scored)
    return {"bleu_4": corpus_bleu4(captions), "cider": cider_d(captions)}
