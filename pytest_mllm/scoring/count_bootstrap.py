"""The bootstrap's vectorised path: every resample's metrics at once, for benchmarks whose metrics are counts.

Accuracy, accuracy+, POPE's precision/recall/F1, MME's scores and MMBench's circular and vanilla
accuracy are ratios of counts over the records of a scope (correct answers, pair groups with every
member right, true and false "yes", questions with every circular pass right), so a resample's
value only needs, per scope, the counts summed over the units it drew. The counts of each unit
in each scope are taken once; a resample is a row of draw multiplicities (a unit drawn twice
counts twice, as its renamed copies do), and one matrix product gives every resample's counts.
The ratios are then formed with the same float operations, in the same order, as the metric
functions (`scoring.metrics`, `mme`, `pope`, `circular`), so every value equals theirs to the
last digit; `uncertainty.replicates` checks this on the benchmark's own records before taking
this path, and otherwise re-runs the metric functions on each resample.

Used only when every enabled metric is one of `COUNT_METRICS` and the records keep units and
pair groups one to one; numpy is imported only when the path is built.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pytest_mllm.record import Record
from pytest_mllm.scoring.gates import flatten

COUNT_METRICS = frozenset({"accuracy", "accuracy_plus", "pope", "pope_undefined", "mme_score", "circular",
                           "category"})

# The counts per unit and scope, in this column order.
(ALL, SCORED, CORRECT, PAIRS, PAIRS_RIGHT, TP, FP, FN, YES_NO,
 QUESTIONS, QUESTIONS_RIGHT, QUESTION_ERRORS, FIRST_SCORED, FIRST_RIGHT) = range(14)
COLUMNS = 14

# Overall keys that a resample may lack: a task or group named like one would make its alias come and go.
_OPTIONAL_OVERALL = frozenset({"accuracy", "accuracy_plus", "precision", "recall", "f1", "yes_ratio", "pooled_f1",
                               "mean_f1", "score", "circular_count", "circular_errors", "circular_accuracy",
                               "vanilla_accuracy"})
_COPY_SUFFIX = re.compile(r"#\d+$")  # what `uncertainty.renamed` appends: an existing group named so could merge


def unit_counts(records: Sequence[Record]) -> tuple[int, ...]:
    """The counts of one unit's records within one scope (see the column names above)."""
    from pytest_mllm.scoring.circular import is_first_pass

    scored = [r for r in records if r["status"] != "error"]
    broken = {r.get("pair_group") for r in records if r["status"] == "error"}
    pairs: dict[str, bool] = {}
    for record in scored:
        group = record.get("pair_group")
        if group is not None and group not in broken:
            pairs[group] = pairs.get(group, True) and bool(record["correct"])
    yes_no = [r for r in scored if r.get("answer_type") == "yes_no"]
    passes: dict[str, list[Record]] = {}
    for record in records:
        if record.get("answer_type") == "choice" and record.get("pair_group"):
            passes.setdefault(record["pair_group"], []).append(record)  # type: ignore[arg-type]
    questions = [0, 0, 0, 0, 0]  # counted, all passes right, left out for an error, first passes scored, right
    for group in passes.values():
        first = [r for r in group if is_first_pass(r)]
        if not first:
            continue  # a question enters through its first pass only
        scored_first = [r for r in first if r["status"] != "error"]
        questions[3] += len(scored_first)
        questions[4] += sum(1 for r in scored_first if r["correct"])
        if any(r["status"] == "error" for r in group):
            questions[2] += 1
        else:
            questions[0] += 1
            questions[1] += all(r["correct"] for r in group)
    return (len(records), len(scored), sum(1 for r in scored if r["correct"]), len(pairs),
            sum(1 for ok in pairs.values() if ok),
            sum(1 for r in yes_no if r["parsed"] == "yes" and r["answer"] == "yes"),
            sum(1 for r in yes_no if r["parsed"] == "yes" and r["answer"] != "yes"),
            sum(1 for r in yes_no if r["parsed"] != "yes" and r["answer"] == "yes"), len(yes_no), *questions)


@dataclass
class CountReplicates:
    """A benchmark's flat metrics for many resamples at once, each resample given as unit multiplicities."""

    enabled: frozenset[str]
    groups: dict[str, list[str]]  # group → its tasks present, in the group's order
    tasks: list[str]  # in the order metrics list them
    spans: dict[str, slice]  # task → its units' columns (units are numbered stratum by stratum)
    per_task: Any  # units × COLUMNS counts
    sections: list[tuple[str, str]]  # ("categories" or "l2_categories", value)
    per_section: Any  # units × (len(sections) · COLUMNS) counts
    headline: str

    @classmethod
    def build(cls, layers: Sequence[Sequence[Sequence[Record]]], enabled: frozenset[str],
              groups: Mapping[str, Sequence[str]], task_order: Sequence[str], headline: str) -> CountReplicates | None:
        """The path for these strata (units of records, per task), or None where it cannot reproduce the metrics."""
        import numpy as np

        if not enabled <= COUNT_METRICS or not all(units for units in layers):
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
        if len(set(names)) != len(names) or any("." in n or n in _OPTIONAL_OVERALL for n in names):
            return None
        sections: list[tuple[str, str]] = []
        if "category" in enabled:
            for kind, field in (("categories", "category"), ("l2_categories", "l2_category")):
                seen = dict.fromkeys(r.get(field) for units in layers for u in units for r in u)  # type: ignore[misc]
                sections += [(kind, value) for value in seen if value]
        units = [u for units in layers for u in units]
        per_task = np.array([unit_counts(u) for u in units], dtype=np.float64).reshape(len(units), COLUMNS)
        per_section = np.zeros((len(units), len(sections) * COLUMNS))
        column = {key: n for n, key in enumerate(sections)}
        for n, unit in enumerate(units):
            parts: dict[tuple[str, str], list[Record]] = {}
            for kind, field in (("categories", "category"), ("l2_categories", "l2_category")):
                for record in unit:
                    if (kind, record.get(field)) in column:
                        parts.setdefault((kind, record.get(field)), []).append(record)  # type: ignore[arg-type]
            for key, members in parts.items():
                start = column[key] * COLUMNS
                per_section[n, start:start + COLUMNS] = unit_counts(members)
        spans, offset = {}, 0
        for task, units_of_task in zip(stratum_task, layers):
            spans[task] = slice(offset, offset + len(units_of_task))
            offset += len(units_of_task)
        return cls(enabled, group_tasks, present, spans, per_task, sections, per_section, headline)

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
            if "category" in self.enabled:
                found = (weights @ self.per_section).reshape(len(weights), len(self.sections), COLUMNS)
                scopes["categories"], scopes["l2_categories"] = {}, {}
                for n, (section, value) in enumerate(self.sections):
                    kind = "category" if section == "categories" else "l2_category"
                    scopes[section][value] = self._scope(found[:, n], kind, [], present=found[:, n, ALL] > 0)
        return flatten(scopes, self.headline)

    def _scope(self, c: Any, kind: str, parts: Sequence[Mapping[str, Any]], present: Any = True) -> dict[str, Any]:
        """One scope's values from its counts (resamples × COLUMNS), as `metrics.scope_metrics` forms them."""
        import numpy as np

        nan = np.nan
        scope: dict[str, Any] = {"count": c[:, SCORED], "errors": c[:, ALL] - c[:, SCORED]}
        scope["accuracy"] = np.where(present & (c[:, SCORED] > 0), c[:, CORRECT] / c[:, SCORED], nan)
        if "accuracy_plus" in self.enabled:
            scope["accuracy_plus"] = np.where(present & (c[:, PAIRS] > 0), c[:, PAIRS_RIGHT] / c[:, PAIRS], nan)
        if "pope" in self.enabled and kind in ("task", "group", "overall"):
            tp, fp, fn, yes_no = c[:, TP], c[:, FP], c[:, FN], c[:, YES_NO]
            with np.errstate(divide="ignore", invalid="ignore"):  # undefined where a denominator is 0 (`pope`)
                precision = np.where(tp + fp > 0, tp / (tp + fp), nan)
                recall = np.where(tp + fn > 0, tp / (tp + fn), nan)
                f1 = np.where(tp > 0, 2 * precision * recall / (precision + recall), nan)
            has = yes_no > 0
            scope.update({"precision": np.where(has, precision, nan), "recall": np.where(has, recall, nan),
                          "f1": np.where(has, f1, nan), "yes_ratio": np.where(has, (tp + fp) / yes_no, nan)})
            if kind != "task" and parts:
                total, n, lost = np.zeros(len(c)), np.zeros(len(c)), np.zeros(len(c), dtype=bool)
                for part in parts:
                    part_has = ~np.isnan(part["yes_ratio"])  # the part holds yes/no answers
                    part_f1 = ~np.isnan(part["f1"])
                    total = total + np.where(part_f1, part["f1"], 0.0)
                    n = n + part_has
                    lost = lost | (part_has & ~part_f1)
                scope["pooled_f1"] = np.where(has & (n > 0), f1, nan)
                scope["mean_f1"] = np.where(has & (n > 0) & ~lost, total / np.maximum(n, 1), nan)
        if "circular" in self.enabled:
            asked = present & (c[:, QUESTIONS] + c[:, QUESTION_ERRORS] > 0)
            scope.update({"circular_count": np.where(asked, c[:, QUESTIONS], nan),
                          "circular_errors": np.where(asked, c[:, QUESTION_ERRORS], nan),
                          "circular_accuracy": np.where(asked & (c[:, QUESTIONS] > 0),
                                                        c[:, QUESTIONS_RIGHT] / c[:, QUESTIONS], nan),
                          "vanilla_accuracy": np.where(asked & (c[:, FIRST_SCORED] > 0),
                                                       c[:, FIRST_RIGHT] / c[:, FIRST_SCORED], nan)})
        if "mme_score" in self.enabled:
            if kind == "task":
                plus = scope["accuracy_plus"]
                scope["score"] = np.where(np.isnan(plus), nan, 0.0 + scope["accuracy"] * 100 + plus * 100)
            elif kind in ("group", "overall"):
                total = np.zeros(len(c))
                for part in parts:
                    total = total + np.where(np.isnan(part["score"]), 0.0, part["score"])
                scope["score"] = total
        return scope
