"""The bootstrap's vectorised path: every resample's metrics at once, for benchmarks whose metrics are counts.

Accuracy, and every metric that gives a count twin (`metrics.CountTwin`, beside the metric in its module:
accuracy+, POPE's precision/recall/F1, MME's scores, MMBench's circular and vanilla accuracy, the
category scopes), are ratios of counts over the records of a scope (correct answers, pair groups with
every member right, true and false "yes", …), so a resample's value only needs, per scope, the counts
summed over the units it drew. The counts of each unit in each scope are taken once; a resample is a
row of draw multiplicities (a unit drawn twice counts twice, as its renamed copies do), and one matrix
product gives every resample's counts. The twins form the ratios with the same float operations, in
the same order, as their metric functions, so every value equals theirs to the last digit;
`uncertainty.replicates` checks this on the benchmark's own records before taking this path, and
otherwise re-runs the metric functions on each resample.

Used only when every enabled metric has a count twin and the records keep units and pair groups one to
one; numpy is imported only when the path is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.gates import flatten
from pytest_mllm.scoring.metrics import ACCURACY, CountScope, Metric, ordered_metrics

# The counts every scope has, per unit, in the first columns; the enabled twins' columns follow, in order.
(ALL, SCORED, CORRECT) = range(3)
BASE_COLUMNS = 3
_COPY_SUFFIX = re.compile(r"#\d+$")  # what `uncertainty.renamed` appends: an existing group named so could merge


def counted_metrics(enabled: Collection[str]) -> list[Metric] | None:
    """The enabled metrics in computing order when every one has a count twin, else None."""
    metrics = [m for m in ordered_metrics() if m.name in enabled]
    if any(m.twin is None for m in metrics) or len(metrics) != len(set(enabled) - {ACCURACY}):
        return None
    return metrics


def optional_overall() -> frozenset[str]:
    """Overall keys that a resample may lack: a task or group named like one would make its alias come and go."""
    return frozenset({ACCURACY, *(key for m in ordered_metrics() if m.twin and not m.section for key in m.keys or ())})


def unit_counts(records: Sequence[Record], metrics: Sequence[Metric] = ()) -> tuple[int, ...]:
    """The counts of one unit's records within one scope: the base columns, then each metric twin's."""
    scored = [r for r in records if r["status"] != "error"]
    counts = [len(records), len(scored), sum(1 for r in scored if r["correct"])]
    for entry in metrics:
        if entry.twin is not None and entry.twin.counts is not None:
            counts.extend(entry.twin.counts(records))
    return tuple(counts)


@dataclass
class CountReplicates:
    """A benchmark's flat metrics for many resamples at once, each resample given as unit multiplicities."""

    metrics: list[Metric]  # the enabled ones, in computing order
    columns: dict[str, slice]  # a scope metric's name → its twin's columns
    groups: dict[str, list[str]]  # group → its tasks present, in the group's order
    tasks: list[str]  # in the order metrics list them
    spans: dict[str, slice]  # task → its units' columns (units are numbered stratum by stratum)
    per_task: Any  # units × width counts
    sections: list[tuple[str, str, str]]  # (section, record field, value): a partition's scopes
    per_section: Any  # units × (len(sections) · width) counts
    headline: str

    @classmethod
    def build(cls, layers: Sequence[Sequence[Sequence[Record]]], enabled: frozenset[str],
              groups: Mapping[str, Sequence[str]], task_order: Sequence[str], headline: str) -> CountReplicates | None:
        """The path for these strata (units of records, per task), or None where it cannot reproduce the metrics."""
        import numpy as np

        metrics = counted_metrics(enabled)
        if metrics is None or not all(units for units in layers):
            return None
        stratum_task = [units[0][0]["task"] for units in layers]
        owner: dict[str, int] = {}
        for n, unit in enumerate(u for units in layers for u in units):
            for record in unit:
                group = record.get("pair_group")
                if group is None:
                    continue
                if not group or _COPY_SUFFIX.search(group) or owner.setdefault(group, n) != n:
                    return None  # an empty group name, one a copy's could equal, or a pair split between units
        present = [t for t in task_order if t in stratum_task] + [t for t in stratum_task if t not in task_order]
        group_tasks = {g: [t for t in members if t in stratum_task] for g, members in groups.items()}
        group_tasks = {g: members for g, members in group_tasks.items() if members}
        names = present + list(group_tasks)
        optional = optional_overall()
        if len(set(names)) != len(names) or any("." in n or n in optional for n in names):
            return None
        columns, width = {}, BASE_COLUMNS
        for entry in metrics:
            if not entry.section and entry.twin is not None:
                columns[entry.name] = slice(width, width + entry.twin.columns)
                width += entry.twin.columns
        sections: list[tuple[str, str, str]] = []
        for entry in metrics:
            for section, field in entry.twin.partitions if entry.twin else ():
                seen = dict.fromkeys(r.get(field) for units in layers for u in units for r in u)
                sections += [(section, field, value) for value in seen if value]
        units = [u for units in layers for u in units]
        per_task = np.array([unit_counts(u, metrics) for u in units], dtype=np.float64).reshape(len(units), width)
        per_section = np.zeros((len(units), len(sections) * width))
        column = {(field, value): n for n, (_, field, value) in enumerate(sections)}
        fields = list(dict.fromkeys(field for _, field, _ in sections))
        for n, unit in enumerate(units):
            parts: dict[tuple[str, str], list[Record]] = {}
            for field in fields:
                for record in unit:
                    if (field, record.get(field)) in column:
                        parts.setdefault((field, record.get(field)), []).append(record)
            for key, members in parts.items():
                start = column[key] * width
                per_section[n, start:start + width] = unit_counts(members, metrics)
        spans, offset = {}, 0
        for task, units_of_task in zip(stratum_task, layers):
            spans[task] = slice(offset, offset + len(units_of_task))
            offset += len(units_of_task)
        return cls(metrics, columns, group_tasks, present, spans, per_task, sections, per_section, headline)

    @property
    def units(self) -> int:
        return int(self.per_task.shape[0])

    def flat(self, weights: Any) -> dict[str, Any]:
        """{flat key: values, one per resample (NaN where a resample lacks the key)} for resamples × units `weights`."""
        import numpy as np

        with np.errstate(divide="ignore", invalid="ignore"):
            counts = {t: weights[:, self.spans[t]] @ self.per_task[self.spans[t]] for t in self.tasks}
            tasks = {t: self._scope(counts[t], "task", []) for t in self.tasks}
            groups = {g: self._scope(sum(counts[t] for t in members), "group", [tasks[t] for t in members])
                      for g, members in self.groups.items()}
            overall = self._scope(sum(counts.values()), "overall", list((groups or tasks).values()))
            scopes: dict[str, Any] = {"overall": overall, "tasks": tasks, "groups": groups}
            for entry in self.metrics:
                scopes.update({section: {} for section, _ in entry.twin.partitions} if entry.twin else {})
            if self.sections:
                width = self.per_task.shape[1]
                found = (weights @ self.per_section).reshape(len(weights), len(self.sections), width)
                for n, (section, field, value) in enumerate(self.sections):
                    scopes[section][value] = self._scope(found[:, n], field, [], present=found[:, n, ALL] > 0)
        return flatten(scopes, self.headline)

    def _scope(self, c: Any, kind: str, parts: Sequence[Mapping[str, Any]], present: Any = True) -> dict[str, Any]:
        """One scope's values from its counts (resamples × columns), as `metrics.scope_metrics` forms them."""
        import numpy as np

        scope: dict[str, Any] = {"count": c[:, SCORED], "errors": c[:, ALL] - c[:, SCORED]}
        scope[ACCURACY] = np.where(present & (c[:, SCORED] > 0), c[:, CORRECT] / c[:, SCORED], np.nan)
        for entry in self.metrics:
            if entry.name in self.columns and entry.twin is not None and entry.twin.values is not None:
                view = CountScope(c[:, self.columns[entry.name]], kind, scope, parts, present)
                scope.update(entry.twin.values(view))
        return scope
