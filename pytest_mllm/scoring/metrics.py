"""Benchmark metrics over per-sample records: the registry of metrics and the generic aggregation.

Every benchmark reports, for each scope (overall, each task, each group, each category), the
plain counts `count`, `errors` and `accuracy`. Everything else is a `Metric` registered where it
is defined, by the `@metric` decorator, so each family's official calculation lives in a module of
its own (`scoring/mme.py`, `scoring/pope.py`, `vrp/metrics.py`, …) and this module never names one:
`METRICS` imports a metric's module when a benchmark first uses it (`pytest_mllm.registry`). A
metric either adds values to every scope (`ScopeView` → values) or adds benchmark-level sections
(`section=True`: `BenchmarkView` → sections):

    @metric("abstentions", keys=("abstentions",))
    def scope_abstentions(scope: ScopeView) -> Scope:
        return {"abstentions": sum(1 for r in scope.scored if r["parsed"] == "other")}

A spec declares its metrics by name (`metrics: [accuracy, accuracy_plus, mme_score]`); a metric
may also require others, or apply on its own when the records show it. Records whose status
is "error" never enter a metric: they are counted apart, so a model crash or bad sample can
never turn into a score. A metric whose values are ratios of counts may give its numpy twin
(`CountTwin`, beside it in its module): the bootstrap's intervals then take the fast path
(`count_bootstrap.py`).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Collection, Mapping, Sequence

from pytest_mllm.record import Record
from pytest_mllm.registry import Registry

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
class CountScope:
    """One scope of many bootstrap resamples at once, as a metric's count twin sees it (numpy arrays,
    a row per resample)."""

    counts: Any  # resamples × the twin's columns: the counts summed over the units each resample drew
    kind: str  # as `ScopeView.kind`
    values: Mapping[str, Any]  # the scope so far: count, errors, accuracy, the values of the metrics before
    parts: Sequence[Mapping[str, Any]]  # the scopes one level down, as `ScopeView.parts`
    present: Any  # where the scope has records (a bool per resample, or True)


@dataclass(frozen=True)
class CountTwin:
    """A metric's values as ratios of counts, for every bootstrap resample at once (`count_bootstrap.py`).

    A scope metric gives `columns` counts per resampling unit (`counts`: a unit's records within one
    scope → that many integers) and `values` (a `CountScope` → its values, computed with the same float
    operations in the same order as the metric itself, so that they agree to the last digit). A section
    metric splitting records into scopes by a record field gives `partitions` ((section, field) pairs);
    one adding no value a gate reads gives nothing."""

    columns: int = 0
    counts: Callable[[Sequence[Record]], Sequence[int]] | None = None
    values: Callable[[CountScope], dict[str, Any]] | None = None
    partitions: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Metric:
    """A registered metric: a name a spec declares, and the function that computes it.

    A scope metric's `compute` takes a `ScopeView` and returns the values it adds to that scope; a
    section metric's (`section=True`) takes a `BenchmarkView` and returns the sections it adds beside
    `overall`, `tasks` and `groups`. `applies` takes the records: when it returns True the metric runs
    undeclared. It holds for a set of records exactly when it holds for one of them (some record shows
    it), so the bootstrap asks it once per resampling unit.
    """

    name: str
    compute: Callable[[Any], Any]
    section: bool = False
    requires: tuple[str, ...] = ()  # metrics enabled with this one (and computed before it)
    applies: Callable[[Sequence[Record]], bool] | None = None
    declarable: bool = True  # False: only `applies` or another metric's `requires` switches it on
    # A scope metric's value names, which gate paths are checked against before a run (None: not declared,
    # a gate may then name anything); a section metric's: the first parts of the flat keys its sections give.
    keys: tuple[str, ...] | None = None
    twin: CountTwin | None = None  # its values from per-unit counts: the bootstrap's fast path
    headline: str | None = None  # the value shown as the result of a benchmark declaring it (unless it names one)


# The registered metrics, by name. Within a scope, values appear in the registry's order (modules by
# name, then source order; a required metric before the one requiring it), and sections follow
# `overall`, `tasks` and `groups` in that order.
METRICS: Registry[Metric] = Registry("metric", "metric")
ACCURACY = "accuracy"  # always reported, never registered


def metric(name: str, *, section: bool = False, requires: tuple[str, ...] = (),
           applies: Callable[[Sequence[Record]], bool] | None = None, declarable: bool = True,
           keys: tuple[str, ...] | None = None, twin: CountTwin | None = None,
           headline: str | None = None) -> Callable[[Callable[[Any], Any]], Any]:
    """Register the decorated function as metric `name` (see `Metric` for the arguments)."""
    def register_function(compute: Callable[[Any], Any]) -> Callable[[Any], Any]:
        register(Metric(name, compute, section, requires, applies, declarable, keys, twin, headline))
        return compute

    return register_function


def register(entry: Metric) -> None:
    """Add a metric (the decorator's work; a plugin's or a test's); a spec may then declare it."""
    if entry.name == ACCURACY:
        raise ValueError(f"metric {ACCURACY!r} is already registered (it is always reported)")
    METRICS.add(entry.name, entry, entry.compute.__module__)


def ordered_metrics() -> list[Metric]:
    """Every registered metric in computing order: the registry's, each one's requirements first."""
    return _ordered(METRICS.version)


@functools.lru_cache(maxsize=1)
def _ordered(version: int) -> list[Metric]:
    entries = METRICS.entries()
    done: dict[str, Metric] = {}

    def place(name: str) -> None:
        if name not in done and name in entries:
            for required in entries[name].requires:
                place(required)
            done[name] = entries[name]

    for name in entries:
        place(name)
    return list(done.values())


def known_metrics() -> tuple[str, ...]:
    """The names a spec may declare: accuracy (always reported) and the declarable registered metrics."""
    return (ACCURACY, *(m.name for m in ordered_metrics() if m.declarable))


def scope_keys(declared: Collection[str]) -> frozenset[str] | None:
    """The value names a scope can hold with these declared metrics (and those that apply on their own),
    or None when one of them does not declare its keys."""
    names = enabled_metrics(declared, (), applying=[m.name for m in ordered_metrics() if m.applies])
    keys = {"count", "errors", ACCURACY}
    for entry in ordered_metrics():
        if entry.name in names and not entry.section:
            if entry.keys is None:
                return None
            keys.update(entry.keys)
    return frozenset(keys)


def headline_names(declared: Collection[str]) -> list[str] | None:
    """The values a benchmark declaring these metrics reports in every scope: a headline is one of them
    (None when one of its metrics does not declare its values)."""
    keys = scope_keys(declared)
    return None if keys is None else sorted(keys)


def metrics_shown(flat: Collection[str]) -> list[str]:
    """The declarable metrics whose values a benchmark's flat keys show (results written before their
    metrics were recorded): a scope metric by one of its value names, a section metric by the first part
    of its keys."""
    lasts = {key.split(".")[-1] for key in flat}
    firsts = {key.split(".")[0] for key in flat}
    return [m.name for m in ordered_metrics()
            if m.declarable and m.keys and not set(m.keys).isdisjoint(firsts if m.section else lasts)]


def accuracy(records: Sequence[Record]) -> float:
    """Fraction of records answered correctly."""
    return sum(1 for r in records if r["correct"]) / len(records)


def applies_tests() -> dict[str, Callable[[Sequence[Record]], bool]]:
    """{metric name: its `applies` test} for the metrics that switch themselves on."""
    return {m.name: m.applies for m in ordered_metrics() if m.applies}


def enabled_metrics(declared: Collection[str], records: Sequence[Record],
                    applying: Collection[str] | None = None) -> frozenset[str]:
    """The declared metrics, those that apply on their own to these records, and what they require.
    `applying`: the metrics already known to apply (their `applies` tests are then not run)."""
    if applying is None:
        applying = {name for name, applies in applies_tests().items() if applies(records)}
    names = set(declared) | set(applying)
    for entry in reversed(ordered_metrics()):  # requirements come first: a dependent is met before them
        if entry.name in names:
            names.update(entry.requires)
    return frozenset(names)


def scope_metrics(records: Sequence[Record], enabled: Collection[str], kind: str = "overall",
                  parts: Sequence[Scope] = (), benchmark: Sequence[Record] = ()) -> Scope:
    """Counts and the enabled scope metrics for one scope (overall, a task, a group …)."""
    scored = [r for r in records if r["status"] != "error"]
    scope: Scope = {"count": len(scored), "errors": len(records) - len(scored)}
    if scored:
        scope[ACCURACY] = accuracy(scored)
    view = ScopeView(kind, records, scope, parts, benchmark)
    for entry in ordered_metrics():
        if not entry.section and entry.name in enabled:
            scope.update(entry.compute(view))
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
    for entry in ordered_metrics():
        if entry.section and entry.name in enabled:
            result.update(entry.compute(view))
    return result
