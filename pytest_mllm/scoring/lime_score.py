"""`lime_score`: each LIME-M subtask's number as its lmms-eval task reports it, and their mean.

A subtask's number is its caption BLEU-4 over the whole subtask (`scoring/captions.py`), else its
right answers over the fixed total its scorer declares (`@scorer(out_of=…)`: OCRBench's 1000, lmms-eval's
`ocrbench_accuracy`), else its
mean per-row score (`mean_score`: ANLS, relaxed accuracy, VQA match, accuracy). A group's and the
overall `lime_score` are the unweighted mean of their subtasks' numbers (LIME-M averages subtask
scores; its reference code reports the subtasks only).
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.captions import CAPTION, subtask_bleu4
from pytest_mllm.scoring.mean_score import mean_score
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric
from pytest_mllm.scoring.score import PARSERS


def subtask_number(records: Sequence[Record]) -> float:
    """One subtask's number from its scored records, as its lmms-eval task computes it."""
    if all(CAPTION.get(r) for r in records):
        return subtask_bleu4(records)
    out_of = {_out_of(r["parser"]) for r in records}
    if len(out_of) == 1 and (total := out_of.pop()) is not None:
        return sum(1 for r in records if r["correct"]) / total
    return mean_score(records)


def _out_of(parser: str) -> int | None:
    """The fixed total a task scored by `parser` reports its right answers over (`@scorer(out_of=…)`), if any."""
    entry = PARSERS.get(parser) if parser in PARSERS else None
    return entry.scorer.out_of if entry is not None and entry.scorer is not None else None


@metric("lime_score", keys=("lime_score",))
def scope_lime_score(scope: ScopeView) -> Scope:
    """`lime_score` of the scope: its one subtask's number, or the mean of its subtasks' numbers."""
    by_task: dict[str, list[Record]] = defaultdict(list)
    for record in scope.scored:
        by_task[record["task"]].append(record)
    numbers = [subtask_number(records) for records in by_task.values()]
    return {"lime_score": math.fsum(numbers) / len(numbers)} if numbers else {}
