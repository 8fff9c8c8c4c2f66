"""The judge-graded benchmarks' part of the results (`scopes["graded"]`), from the records' `graded` parts
(`judge/grading.py`), and its flat keys; `graded_section.py` shows it.

The part holds who graded (every judge identity met, with the prompt's digest), how (by the benchmark's
rules, by the judge, replayed from a judged file, VLMEvalKit's fallback), the judge errors and calls, the
breakdowns a sample may count in several of (each a scope with the benchmark's metrics), and with several
judge runs their means and spread. `flat` gives gates and comparisons its keys.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Mapping, Sequence

from pytest_mllm.record import Record, RecordPart
from pytest_mllm.scoring.metrics import BenchmarkView, metric

PART = "graded"  # its key in a benchmark's scopes, its record part's key
GRADED_BY = PART  # the section whose verdict step grades a judge-graded parser's answers (`Parser.verdict_by`)
# A judge-graded answer: the grader, the judge's identity and prompt digest, the source (rules, judge, replay,
# fallback), the grader's values, every call, the breakdowns (`judge/grading.py`, `graded_part`).
GRADED: RecordPart[dict[str, Any]] = RecordPart(PART)
GATE_VALUES = ("judge_error_rate", "runs_std")


def has_graded(records: Sequence[Record]) -> bool:
    """Whether any record was graded by a judge-graded benchmark's grader."""
    return any(GRADED.get(r) for r in records)


def judges(records: Sequence[Record]) -> list[dict[str, Any]]:
    """Every judge identity (with its prompt digest) that graded these records, in first-seen order."""
    seen: dict[str, dict[str, Any]] = {}
    for record in records:
        judge = (GRADED.get(record) or {}).get("judge")
        if judge:
            seen.setdefault(repr(sorted(judge.items())), judge)
    return list(seen.values())


@metric("graded", section=True, applies=has_graded, declarable=False, keys=(PART,))
def graded_section(benchmark: BenchmarkView) -> dict[str, Any]:
    """The `graded` part of one benchmark's scopes."""
    graded = [r for r in benchmark.records if GRADED.get(r)]
    if not graded:
        return {}
    sources: defaultdict[str, int] = defaultdict(int)
    for record in graded:
        own = _part(record)
        sources["judge_errors" if own["status"] == "error" else f"by_{own['source']}"] += 1
    calls = sum(1 for r in graded if _part(r)["judge"].get("kind") != "replay"
                for a in _part(r)["attempts"] if not a["cached"])
    part: dict[str, Any] = {
        "grader": _part(graded[0])["grader"], "judges": judges(graded), "answered": len(graded),
        **{key: sources.get(key, 0) for key in ("by_rules", "by_judge", "by_replay", "by_fallback", "judge_errors")},
        "judge_error_rate": sources.get("judge_errors", 0) / len(graded), "judge_calls": calls,
        "breakdowns": _breakdowns(benchmark, graded),
    }
    runs = _runs(graded)
    if runs:
        part.update(runs)
    return {PART: part}


def _part(record: Record) -> dict[str, Any]:
    return GRADED.get(record) or {}


def _breakdowns(benchmark: BenchmarkView, graded: Sequence[Record]) -> dict[str, dict[str, Any]]:
    """{kind: {name: scope}}: each name's records (a record counts under each name it lists, as often as it lists
    it), in first-seen order; a kind that shares another's names (`shared`) reports that kind's scope for them."""
    buckets: dict[str, dict[str, list[Record]]] = defaultdict(lambda: defaultdict(list))
    shared: dict[str, str] = {}
    for record in graded:
        shared.update(_part(record).get("shared") or {})
        for kind, names in _part(record)["breakdowns"].items():
            for name in names:
                buckets[kind][name].append(record)
    scopes = {kind: {name: benchmark.scope(records, kind) for name, records in names.items()}
              for kind, names in buckets.items()}
    for kind, other in shared.items():
        for name in scopes.get(kind, {}):
            if name in scopes.get(other, {}):
                scopes[kind][name] = scopes[other][name]
    return scopes


def _runs(graded: Sequence[Record]) -> dict[str, Any]:
    """With several judge runs: each run's mean grade over the scored samples, and their standard deviation
    (population, as the official MM-Vet scorer's numpy std)."""
    per_sample = [_part(r)["values"].get("grades") for r in graded if _part(r)["status"] == "graded"]
    per_sample = [g for g in per_sample if g]
    if not per_sample or len(per_sample[0]) < 2 or any(len(g) != len(per_sample[0]) for g in per_sample):
        return {}
    totals = [math.fsum(g[k] for g in per_sample) / len(per_sample) for k in range(len(per_sample[0]))]
    mean = math.fsum(totals) / len(totals)
    return {"runs": totals, "runs_std": math.sqrt(math.fsum((t - mean) ** 2 for t in totals) / len(totals))}


def flat(part: Mapping[str, Any]) -> dict[str, float]:
    """The part's flat keys: `graded.<kind>.<name>.<value>` of every breakdown scope, and its gate values."""
    found = {f"{PART}.{value}": part[value] for value in GATE_VALUES if part.get(value) is not None}
    for kind, scopes in part.get("breakdowns", {}).items():
        for name, scope in scopes.items():
            for value, number in scope.items():
                found[f"{PART}.{kind}.{name}.{value}"] = number
    return found
