"""`mean_score`: the mean per-sample score of parsers scored against references (ANLS, VQA
match, BLEU-4 …), LIME-M's official continuous metric of each subtask."""

from __future__ import annotations

import math
from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric


def mean_score(records: Sequence[Record]) -> float:
    """Mean per-sample score: the record's `score` (ANLS, VQA match, BLEU-4 … in [0, 1]) where its
    parser gives one, else 1.0 or 0.0 by correctness, so yes/no and choice tasks count as accuracy.

    Scopes wider than a task (groups, overall) average over samples, as accuracy does, not over
    task means.
    """
    scores = [float(bool(r["correct"])) if (score := r.get("score")) is None else score for r in records]
    return math.fsum(scores) / len(scores)


@metric("mean_score", keys=("mean_score",))
def scope_mean_score(scope: ScopeView) -> Scope:
    """`mean_score` over the scope's scored records, in every scope that has one."""
    scored = scope.scored
    return {"mean_score": mean_score(scored)} if scored else {}
