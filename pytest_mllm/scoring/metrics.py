"""Benchmark metrics over per-sample records: the registry of metrics and the generic aggregation.

Every benchmark reports, for each scope (overall, each task, each group, each category), the
plain counts `count`, `errors` and `accuracy`. Everything else is a registered `Metric`, listed
in `METRICS` as "module:function" and imported only when a benchmark uses it, so each family's
official calculation lives in a module of its own (`scoring/mme.py`, `scoring/pope.py`,
`vrp/metrics.py`, …) and this module never imports one. A metric either adds values to every
scope (`ScopeView` → values) or adds benchmark-level sections (`BenchmarkView` → sections).

A spec declares its metrics by name (`metrics: [accuracy, accuracy_plus, mme_score]`); a metric
may also require others, or apply on its own when the records show it. Records whose status
is "error" never enter a metric: they are counted apart, so a model crash or bad sample can
never turn into a score.
"""

from __future__ import annotations

import functools
import importlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from pytest_mllm.record import Record

Scope = dict[str, float | int]


@dataclass(frozen=True)
class ScopeView:
    """One scope being computed, as a scope metric sees it."""

    kind: str  # "overall", "task", "group", "category" or "l2_category"
    records: Sequence[Record]  # every record of the scope, errors included
    values: Scope  # the scope so far: the counts, then the values of the metrics listed before
    parts: Sequence[Scope] = ()  # the scopes one level down: a group's tasks, overall's groups (its tasks if none)
    benchmark: Sequence[Record] = ()  # every record of the benchmark (MMMU's draws span the run), when known

    @property
    def scored(self) -> list[Record]:
        """The records that may enter a metric: errors left out."""
        return [r for r in self.records if r["status"] != "error"]


@dataclass(frozen=True)
class BenchmarkView:
    """One benchmark's records, as a section metric sees them."""

    records: Sequence[Record]  # in collection order, errors included
    scope: Callable[[Sequence[Record], str], Scope]  # (records, kind) → that scope with the benchmark's metrics


@dataclass(frozen=True)
class Metric:
    """A registered metric: a name a spec declares, and the function that computes it.

    `compute` is "module:function". A scope metric's function takes a `ScopeView` and returns
    the values it adds to that scope; a section metric's (`section=True`) takes a `BenchmarkView`
    and returns the sections it adds beside `overall`, `tasks` and `groups`. `applies`, also
    "module:function", takes the records: when it returns True the metric runs undeclared. It
    holds for a set of records exactly when it holds for one of them (some record shows it), so
    the bootstrap asks it once per resampling unit.
    """

    name: str
    compute: str
    section: bool = False
    requires: tuple[str, ...] = ()  # metrics enabled with this one
    applies: str | None = None
    declarable: bool = True  # False: only `applies` switches it on, a spec may not name it
    keys: tuple[str, ...] | None = None  # a scope metric's value names, which gate paths are checked against
    # before a run; None: not declared (a gate may then name anything)


# The registered metrics. Within a scope, values appear in this order, and sections follow
# `overall`, `tasks` and `groups` in this order: append new ones at the end of their kind.
METRICS: list[Metric] = [
    Metric("mean_score", "pytest_mllm.scoring.mean_score:scope_mean_score", keys=("mean_score",)),
    Metric("accuracy_plus", "pytest_mllm.scoring.mme:scope_accuracy_plus", keys=("accuracy_plus",)),
    Metric("pope", "pytest_mllm.scoring.pope:scope_pope", requires=("pope_undefined",),
           keys=("precision", "recall", "f1", "yes_ratio", "pooled_f1", "mean_f1")),
    Metric("mme_score", "pytest_mllm.scoring.mme:scope_mme_score", requires=("accuracy_plus",), keys=("score",)),
    Metric("circular", "pytest_mllm.scoring.circular:scope_circular",
           keys=("circular_count", "circular_errors", "circular_accuracy", "vanilla_accuracy")),
    Metric("vrp", "pytest_mllm.vrp.metrics:vrp_section", section=True),
    Metric("judge", "pytest_mllm.judge.metrics:judge_section", section=True,
           applies="pytest_mllm.judge.metrics:has_open_answers"),
    Metric("category", "pytest_mllm.scoring.categories:category_sections", section=True),
    Metric("tp_eval", "pytest_mllm.tpeval.report:tp_eval_section", section=True,
           applies="pytest_mllm.tpeval.report:has_original_answers", declarable=False),
    Metric("mmmu", "pytest_mllm.scoring.mmmu:scope_mmmu", keys=("mmmu_accuracy",)),
    Metric("category_mean", "pytest_mllm.scoring.category_mean:scope_category_mean", requires=("category",),
           keys=("category_mean_accuracy",)),
    Metric("ocrbench", "pytest_mllm.scoring.ocrbench:scope_ocrbench", keys=("ocrbench_score",)),
    Metric("hallusionbench", "pytest_mllm.scoring.hallusionbench:scope_hallusionbench",
           keys=("a_acc", "f_acc", "q_acc")),
    Metric("pope_undefined", "pytest_mllm.scoring.pope:undefined_section", section=True, declarable=False),
    Metric("captions", "pytest_mllm.scoring.captions:scope_captions", keys=("bleu_4",)),
    Metric("ocrbench_accuracy", "pytest_mllm.scoring.ocrbench:scope_ocrbench_accuracy", keys=("ocrbench_accuracy",)),
    Metric("lime_score", "pytest_mllm.scoring.lime_score:scope_lime_score", keys=("lime_score",)),
    Metric("cider", "pytest_mllm.scoring.captions:scope_cider", keys=("cider",)),
    Metric("ocr_f1", "pytest_mllm.scoring.ccocr:scope_ocr_f1", keys=("ocr_f1",)),
]


def _known_metrics() -> tuple[str, ...]:
    return ("accuracy", *(m.name for m in METRICS if m.declarable))


# The names a spec may declare: accuracy (always reported) and the declarable registered metrics.
KNOWN_METRICS = _known_metrics()


def scope_keys(declared: Collection[str]) -> frozenset[str] | None:
    """The value names a scope can hold with these declared metrics (and those that apply on their own),
    or None when one of them does not declare its keys."""
    names = enabled_metrics(declared, (), applying=[m.name for m in METRICS if m.applies])
    keys = {"count", "errors", "accuracy"}
    for metric in METRICS:
        if metric.name in names and not metric.section:
            if metric.keys is None:
                return None
            keys.update(metric.keys)
    return frozenset(keys)


def headline_names(declared: Collection[str]) -> list[str] | None:
    """The values a benchmark declaring these metrics reports in every scope: a headline is one of them
    (None when one of its metrics does not declare its values)."""
    keys = scope_keys(declared)
    return None if keys is None else sorted(keys)


def register(metric: Metric) -> None:
    """Add a metric after the built-in ones (a plugin's, a test's); a spec may then declare it."""
    global KNOWN_METRICS
    if metric.name in {"accuracy", *(m.name for m in METRICS)}:
        raise ValueError(f"metric {metric.name!r} is already registered")
    METRICS.append(metric)
    KNOWN_METRICS = _known_metrics()


@functools.cache
def _load(target: str) -> Callable[[Any], Any]:
    module, _, name = target.partition(":")
    function: Callable[[Any], Any] = getattr(importlib.import_module(module), name)
    return function


def accuracy(records: Sequence[Record]) -> float:
    """Fraction of records answered correctly."""
    return sum(1 for r in records if r["correct"]) / len(records)


def applies_tests() -> dict[str, Callable[[Sequence[Record]], bool]]:
    """{metric name: its `applies` test} for the metrics that switch themselves on."""
    return {m.name: _load(m.applies) for m in METRICS if m.applies}


def enabled_metrics(declared: Collection[str], records: Sequence[Record],
                    applying: Collection[str] | None = None) -> frozenset[str]:
    """The declared metrics, those that apply on their own to these records, and what they require.
    `applying`: the metrics already known to apply (their `applies` tests are then not run)."""
    if applying is None:
        applying = {m.name for m in METRICS if m.applies and _load(m.applies)(records)}
    names = set(declared) | set(applying)
    for metric in METRICS:
        if metric.name in names:
            names.update(metric.requires)
    return frozenset(names)


def scope_metrics(records: Sequence[Record], enabled: Collection[str], kind: str = "overall",
                  parts: Sequence[Scope] = (), benchmark: Sequence[Record] = ()) -> Scope:
    """Counts and the enabled scope metrics for one scope (overall, a task, a group …)."""
    scored = [r for r in records if r["status"] != "error"]
    scope: Scope = {"count": len(scored), "errors": len(records) - len(scored)}
    if scored:
        scope["accuracy"] = accuracy(scored)
    view = ScopeView(kind, records, scope, parts, benchmark)
    for metric in METRICS:
        if not metric.section and metric.name in enabled:
            scope.update(_load(metric.compute)(view))
    return scope


def benchmark_metrics(
    records: Sequence[Record],
    declared: Sequence[str],
    groups: Mapping[str, Sequence[str]],
    task_order: Sequence[str] = (),
    enabled: frozenset[str] | None = None,
) -> dict[str, Any]:
    """All scopes of one benchmark: overall, tasks, groups, then the enabled metrics' sections.

    `task_order` fixes the order tasks are listed and summed in (MME's official order);
    tasks it does not name follow in order of first appearance. `enabled`: the metrics to
    compute when the caller has decided them (`enabled_metrics`), else decided here.
    """
    if enabled is None:
        enabled = enabled_metrics(declared, records)
    by_task: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        by_task[record["task"]].append(record)
    ordered = [t for t in task_order if t in by_task] + [t for t in by_task if t not in task_order]

    tasks = {task: scope_metrics(by_task[task], enabled, "task", benchmark=records) for task in ordered}
    group_scopes: dict[str, Scope] = {}
    for group, members in groups.items():
        present = [t for t in members if t in by_task]
        if present:
            group_scopes[group] = scope_metrics([r for t in present for r in by_task[t]], enabled, "group",
                                                [tasks[t] for t in present], records)
    overall = scope_metrics(records, enabled, "overall", list((group_scopes or tasks).values()), records)

    result: dict[str, Any] = {"overall": overall, "tasks": tasks, "groups": group_scopes}
    view = BenchmarkView(records, lambda rs, kind: scope_metrics(rs, enabled, kind, benchmark=records))
    for metric in METRICS:
        if metric.section and metric.name in enabled:
            result.update(_load(metric.compute)(view))
    return result
