"""`harness/limit.py`: --mllm-limit's selection, the first samples of each task in file order with the
scoring units whole (MME pairs, MMBench circular passes, VRP variants)."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation, EvaluationSettings
from pytest_mllm.harness.limit import first_units
from pytest_mllm.harness.shard import unit_key
from pytest_mllm.sample import Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def kept(entries: list[tuple[str, str]], limit: int) -> list[str]:
    return [unit for (task, unit), keep in zip(entries, first_units(entries, limit)) if keep]


def test_single_samples_are_the_first_n_of_each_task_in_file_order() -> None:
    entries = [("a", "a1"), ("b", "b1"), ("a", "a2"), ("a", "a3"), ("b", "b2"), ("a", "a4"), ("b", "b3")]
    assert kept(entries, 2) == ["a1", "b1", "a2", "b2"]
    assert kept(entries, 3) == ["a1", "b1", "a2", "a3", "b2", "b3"]
    assert kept(entries, 100) == [unit for _, unit in entries]


def test_pairs_stay_whole_and_a_pair_that_does_not_fit_ends_the_task() -> None:
    entries = [("t", "p1"), ("t", "p1"), ("t", "p2"), ("t", "p2"), ("t", "s3"), ("t", "p4"), ("t", "p4")]
    assert kept(entries, 3) == ["p1", "p1"]  # p2 would make 4: the selection stops there (a prefix of units)
    assert kept(entries, 4) == ["p1", "p1", "p2", "p2"]
    assert kept(entries, 5) == ["p1", "p1", "p2", "p2", "s3"]


def test_a_task_always_runs_its_first_unit_even_past_the_limit() -> None:
    entries = [("t", "p1"), ("t", "p1"), ("u", "s1"), ("t", "p2"), ("t", "p2")]
    assert kept(entries, 1) == ["p1", "p1", "s1"]


def test_a_circular_group_is_kept_with_its_passes_later_in_the_file() -> None:
    # MMBench's circular file: the first passes of every question, then the second passes, and so on
    entries = [("dev", f"q{i}") for i in range(4)] + [("dev", f"q{i}") for i in range(4)]
    assert kept(entries, 4) == ["q0", "q1", "q0", "q1"]


def test_a_unit_spanning_tasks_counts_in_the_task_of_its_first_sample() -> None:
    entries = [("a", "u1"), ("b", "u1"), ("b", "u2"), ("b", "u3")]
    assert kept(entries, 2) == ["u1", "u1", "u2", "u3"]  # u1 is a's; b keeps its own first two


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        first_units([("t", "u")], 0)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 12)), max_size=40), st.integers(1, 8))
def test_the_selection_is_a_prefix_of_whole_units_within_the_limit(raw: list[tuple[str, int]], limit: int) -> None:
    # a unit belongs to one task here (as MME pairs and circular passes do)
    entries = [(task, f"{task}{unit}") for task, unit in raw]
    keep = first_units(entries, limit)
    chosen = {unit for (_, unit), k in zip(entries, keep) if k}
    assert all(k == (unit in chosen) for (_, unit), k in zip(entries, keep))  # whole units
    sizes = Counter(unit for _, unit in entries)
    per_task: dict[str, list[str]] = defaultdict(list)
    for task, unit in dict.fromkeys(entries):  # units in order of first appearance
        per_task[task].append(unit)
    for units in per_task.values():
        taken = [u for u in units if u in chosen]
        assert taken == units[:len(taken)] and taken  # a prefix, never empty
        count = sum(sizes[u] for u in taken)
        assert count <= limit or len(taken) == 1
        if len(taken) < len(units):
            assert count + sizes[units[len(taken)]] > limit  # the next unit would not fit
    bigger = {unit for (_, unit), k in zip(entries, first_units(entries, limit + 1)) if k}
    assert chosen <= bigger  # a larger limit keeps what a smaller one ran (its cached answers are reused)


def _samples(bench: str, data: Path) -> list[Sample]:
    evaluation = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off", data={bench: str(data)}))
    return [s for s in evaluation.samples_for(evaluation.spec(find_spec(bench))) if isinstance(s, Sample)]


def test_mme_keeps_both_questions_of_each_image() -> None:
    samples = _samples("mme", FIXTURES / "mme" / "MME_Benchmark_release_version")
    keep = first_units([(s.task, unit_key("mme", s)) for s in samples], 3)
    chosen = [s for s, k in zip(samples, keep) if k]
    per_task = Counter(s.task for s in chosen)
    assert per_task and all(n == 2 for n in per_task.values())  # one pair fits in 3, two would not
    assert set(per_task) == {s.task for s in samples}
    pairs = Counter(s.pair_group for s in chosen)
    assert all(n == 2 for n in pairs.values())


def test_mmbench_keeps_every_circular_pass_of_the_questions_it_runs() -> None:
    samples = _samples("mmbench", FIXTURES / "mmbench_circular")
    keep = first_units([(s.task, unit_key("mmbench", s)) for s in samples], 8)
    chosen = [s for s, k in zip(samples, keep) if k]
    groups = Counter(s.pair_group for s in samples)
    kept_groups = Counter(s.pair_group for s in chosen)
    assert kept_groups and all(kept_groups[g] == groups[g] for g in kept_groups)
    assert len(chosen) <= 8
    first_seen = list(dict.fromkeys(s.pair_group for s in samples))
    assert list(kept_groups) == first_seen[:len(kept_groups)]
