"""MMBench's CircularEval (Liu et al., "MMBench: Is Your Multi-modal Model an All-around Player?"),
as VLMEvalKit's `mcq_circular_eval` scores it without a GPT judge.

An MMBench TSV holds every circular pass of a question: row `index + k·1_000_000` asks question
`index` with its options rotated k places. The TSV loader gives all passes of a question one
`pair_group`; each pass stays one test and one record. A question counts right only when every
one of its passes is right (an unreadable answer is wrong). Reported per scope:

* ``circular_accuracy``: the fraction of questions whose passes are all right (MMBench's headline);
* ``vanilla_accuracy``: accuracy over the first passes alone (index < 1_000_000, the question as
  released; VLMEvalKit's "vanilla_0"). ``accuracy`` remains the accuracy over every pass;
* ``circular_count`` and ``circular_errors``: the questions scored, and those left out because a
  pass errored (a model crash or a bad row never turns into a score).

As in VLMEvalKit, a question enters only through its first pass: passes whose first pass is not
in the scope (deselected, say) are not scored.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.catalogue_templates import MCQ_PROMPT, MCQ_READ, POOLED, catalogue_template
from pytest_mllm.scoring.metrics import CountScope, CountTwin, Scope, ScopeView, metric

OFFSET = 1_000_000


def _index(record: Record) -> int | None:
    """The TSV index of a pass, from its id "<task>::<index>" (None when not an integer)."""
    try:
        return int(record["id"].rsplit("::", 1)[-1])
    except ValueError:
        return None


def is_first_pass(record: Record) -> bool:
    index = _index(record)
    return index is not None and 0 <= index < OFFSET


def question_counts(records: Sequence[Record]) -> tuple[int, int, int, int, int]:
    """(questions counted, those with every pass right, those left out for an error, first passes scored,
    those right) among `records`: a question enters through its first pass only."""
    passes: dict[str, list[Record]] = {}
    for record in records:
        if record.get("answer_type") == "choice" and record.get("pair_group"):
            passes.setdefault(record["pair_group"], []).append(record)  # type: ignore[arg-type]
    counted = right = errors = first_scored = first_right = 0
    for group in passes.values():
        first = [r for r in group if is_first_pass(r)]
        if not first:
            continue
        scored_first = [r for r in first if r["status"] != "error"]
        first_scored += len(scored_first)
        first_right += sum(1 for r in scored_first if r["correct"])
        if any(r["status"] == "error" for r in group):
            errors += 1
        else:
            counted += 1
            right += all(r["correct"] for r in group)
    return counted, right, errors, first_scored, first_right


def counted_circular(scope: CountScope) -> dict[str, Any]:
    """The circular values of every resample from its question counts (`question_counts`)."""
    import numpy as np

    nan = np.nan
    counted, right, errors, first_scored, first_right = (scope.counts[:, n] for n in range(5))
    asked = scope.present & (counted + errors > 0)
    return {"circular_count": np.where(asked, counted, nan), "circular_errors": np.where(asked, errors, nan),
            "circular_accuracy": np.where(asked & (counted > 0), right / counted, nan),
            "vanilla_accuracy": np.where(asked & (first_scored > 0), first_right / first_scored, nan)}


@metric("circular", keys=("circular_count", "circular_errors", "circular_accuracy", "vanilla_accuracy"),
        twin=CountTwin(columns=5, counts=question_counts, values=counted_circular))
def scope_circular(scope: ScopeView) -> Scope:
    """Circular and vanilla accuracy over the scope's multiple-choice questions."""
    passes: dict[str, list[Record]] = defaultdict(list)
    for record in scope.records:
        if record.get("answer_type") == "choice" and record.get("pair_group"):
            passes[record["pair_group"]].append(record)
    hits = counted = errors = 0
    first_right = first_scored = 0
    for group in passes.values():
        first = [r for r in group if is_first_pass(r)]
        if not first:
            continue
        for record in first:
            if record["status"] != "error":
                first_scored += 1
                first_right += bool(record["correct"])
        if any(r["status"] == "error" for r in group):
            errors += 1
            continue
        counted += 1
        hits += all(r["correct"] for r in group)
    if not counted and not errors:
        return {}
    values: Scope = {"circular_count": counted, "circular_errors": errors}
    if counted:
        values["circular_accuracy"] = hits / counted
    if first_scored:
        values["vanilla_accuracy"] = first_right / first_scored
    return values


catalogue_template(
    "mcq_circular", label="multiple choice, circular", parser="choice", prompt=MCQ_PROMPT, max_new_tokens=8,
    scored_by=f"{MCQ_READ}; CircularEval: rows index + k*1000000 rotate question index's options, which counts only "
              f"when every rotation is right; per split (the tasks), category and l2-category{POOLED}",
    metrics=("accuracy", "circular", "category"), headline="circular_accuracy")
