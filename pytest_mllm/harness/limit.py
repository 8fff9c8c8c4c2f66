"""`--mllm-limit=N`: a smoke run of at most N samples per task, the first in file order, scoring units whole.

Which samples: per task (per benchmark and task), the scoring units in the order their first sample
appears in the benchmark's file, taken while the task's count stays at most N; the first unit that
does not fit ends the task's selection. A unit is what `--mllm-shard` keeps together
(`harness/shard.py`): MME's question pairs, MMBench's circular passes, a source and its VRP variants,
else one sample. A task's first unit is always taken, so a task whose units are larger than N still
runs one (MME with N=1 runs one pair: 2 samples).

Why the first N and not a seeded draw: it is lmms-eval's `--limit` (the first N documents of a task),
so a smoke run compares with one there; the selection of a smaller N is part of a larger N's, so
answers cached by a smoke run are reused when the limit grows; and a user can see which samples
ran from the file alone. Per task rather than per benchmark, so that every task shows in the scores.

Only sample tests are limited (a benchmark file's, a `@pytest.mark.mllm_bench` test's); other tests, such as
one test per task, are left as they are. The limit applies after `-k` and `-m` (the first N of the selected
samples of each task) and before
`--mllm-shard` (shards split the limited run). The results' settings record it: N, and per
benchmark the sample tests kept and the total they were chosen from. A limit that left samples out makes the run
not a full run (`shortfall.limited`): the results, the terminal, the JUnit XML and the summaries say "limited to N
samples per task", and no gate passes.
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Sequence
from typing import Any

import pytest

from pytest_mllm.harness.shard import unit_key
from pytest_mllm.pytest_compat import is_worker
from pytest_mllm.sample import BadSample, Sample, SkippedSample
from pytest_mllm.shortfall import Shortfall, limited


def read_limit(config: pytest.Config) -> int | None:
    """--mllm-limit=N: at least 1 (a limit on sample tests; tests of other kinds are left as they are)."""
    value = config.getoption("mllm_limit")
    if value is not None and value < 1:
        raise pytest.UsageError(f"--mllm-limit must be at least 1 sample per task, got {value}")
    return value


def first_units(entries: Sequence[tuple[Hashable, Hashable]], limit: int) -> list[bool]:
    """For each (task, unit) entry in file order, whether it is kept: per task, the units in order of their
    first entry while the task's kept entries stay at most `limit` (its first unit always)."""
    if limit < 1:
        raise ValueError(f"the limit must be at least 1, got {limit}")
    sizes: dict[Hashable, int] = {}
    task_of: dict[Hashable, Hashable] = {}
    for task, unit in entries:
        sizes[unit] = sizes.get(unit, 0) + 1
        task_of.setdefault(unit, task)
    used: dict[Hashable, int] = {}
    closed: set[Hashable] = set()
    kept: set[Hashable] = set()
    for unit, size in sizes.items():  # in order of first appearance
        task = task_of[unit]
        if task in closed:
            continue
        if task not in used or used[task] + size <= limit:
            used[task] = used.get(task, 0) + size
            kept.add(unit)
        else:
            closed.add(task)
    return [unit in kept for _, unit in entries]


def _sample_of(item: pytest.Item) -> tuple[str, Sample | BadSample | SkippedSample] | None:
    """(benchmark, sample) of a sample test: a benchmark file's, or a `@pytest.mark.mllm_bench` test's."""
    spec, sample = getattr(item, "spec", None), getattr(item, "sample", None)
    if spec is not None and sample is not None:
        return spec.name, sample
    callspec = getattr(item, "callspec", None)
    marked = callspec.params.get("mllm_sample") if callspec is not None else None
    if isinstance(marked, Sample):
        return marked.benchmark, marked
    return None


class RunLimit:
    """The limit of one run: which tests it leaves out, and what the results say of it."""

    def __init__(self, per_task: int) -> None:
        self.per_task = per_task
        self.counts: dict[str, dict[str, int]] | None = None  # benchmark → {"kept", "total"} sample tests

    def beyond(self, config: pytest.Config, items: Sequence[pytest.Item]) -> list[pytest.Item]:
        """The sample tests past the limit (to deselect); the counts are noted (an xdist worker sends them
        to the controller, which collects nothing)."""
        samples = [(item, found) for item in items if (found := _sample_of(item)) is not None]
        entries = [((benchmark, sample.task), unit_key(benchmark, sample)) for _, (benchmark, sample) in samples]
        keep = first_units(entries, self.per_task)
        counts: dict[str, dict[str, int]] = {}
        dropped = []
        for (item, (benchmark, _)), kept in zip(samples, keep):
            count = counts.setdefault(benchmark, {"kept": 0, "total": 0})
            count["total"] += 1
            count["kept"] += kept
            if not kept:
                dropped.append(item)
        self.counts = dict(sorted(counts.items()))
        if is_worker(config):
            config.workeroutput["mllm_limit_counts"] = json.dumps(self.counts)  # type: ignore[attr-defined]
        return dropped

    def worker_done(self, node: Any) -> None:
        """xdist: a worker's counts (every worker selects the same tests), for the controller's results."""
        raw = getattr(node, "workeroutput", {}).get("mllm_limit_counts")
        if raw and self.counts is None:
            self.counts = json.loads(raw)

    def shortfall(self) -> Shortfall | None:
        """"limited to N samples per task (kept of total sample tests)", or None when the limit left no sample out
        (then the run is a full one). Where the counts never arrived (an interrupted xdist run), it is limited."""
        if self.counts is None:
            return limited(self.per_task)
        kept = sum(count["kept"] for count in self.counts.values())
        total = sum(count["total"] for count in self.counts.values())
        return limited(self.per_task, kept, total) if kept < total else None

    def settings(self) -> dict[str, Any]:
        """For the results' settings: the limit, and per benchmark the sample tests kept of the total."""
        return {"per_task": self.per_task, "selection": "first in file order, scoring units whole",
                "benchmarks": self.counts or {}}
