"""HallusionBench's three accuracies, as VLMEvalKit computes them (vlmeval/dataset/utils/yorn.py).

* `a_acc`: all questions, the share answered right;
* `f_acc`: figures, the share of figures whose every question is right;
* `q_acc`: questions, the share of questions right on every figure they are asked about.

A question's TSV index is `<category>_<subcategory>_<visual input>_<set>_<figure>_<question>`: a
figure is (l2-category, set, figure), a question is (l2-category, set, question). The category
(VD, VS) is not part of either key, so a VD and a VS row of the same l2-category, set and figure
count as one figure, as in VLMEvalKit. A sample id whose index lacks those parts is a group of
its own. Values are fractions (VLMEvalKit prints percentages).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric


def _keys(record: Record) -> tuple[str, str]:
    """(figure key, question key) of a record, from its l2-category and its index's parts."""
    index = record["id"].split("::", 1)[-1]
    parts = index.split("_")
    if len(parts) < 6:
        return index, index
    l2 = record.get("l2_category") or ""
    return f"{l2}_{parts[3]}_{parts[4]}", f"{l2}_{parts[3]}_{parts[5]}"


def _all_right_share(records: Sequence[Record], which: int) -> float:
    groups: dict[str, bool] = defaultdict(lambda: True)
    for record in records:
        key = _keys(record)[which]
        groups[key] = groups[key] and bool(record["correct"])
    return sum(groups.values()) / len(groups)


@metric("hallusionbench", keys=("a_acc", "f_acc", "q_acc"))
def scope_hallusionbench(scope: ScopeView) -> Scope:
    """a_acc, f_acc and q_acc of the scope's scored records."""
    scored = scope.scored
    if not scored:
        return {}
    return {"a_acc": sum(1 for r in scored if r["correct"]) / len(scored),
            "f_acc": _all_right_share(scored, 0), "q_acc": _all_right_share(scored, 1)}
