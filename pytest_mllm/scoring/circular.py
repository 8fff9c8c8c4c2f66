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

from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import Scope, ScopeView

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
