"""Seeded sampling by task and class: stable, proportional, pairs whole, and a target too large."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

from pytest_mllm.curation.sampling import sample_units
from pytest_mllm.curation.units import Unit


def units(task: str, klass: str, count: int, start: int, size: int = 1) -> list[tuple[Unit, str]]:
    return [(Unit(f"{task}-{klass}-{n}", task, tuple(f"{task}-{klass}-{n}.{m}" for m in range(size)), start + n), klass)
            for n in range(count)]


CANDIDATES = units("a", "middle", 30, 0) + units("a", "hard", 10, 100) + units("b", "hard", 20, 200)


def test_sampling_keeps_the_strata_proportions_and_benchmark_order() -> None:
    sampled = sample_units(CANDIDATES, 30, seed=7)
    klass = {u.key: (u.task, c) for u, c in CANDIDATES}
    assert Counter(klass[u.key] for u in sampled.kept) == {("a", "middle"): 15, ("a", "hard"): 5, ("b", "hard"): 10}
    assert [u.index for u in sampled.kept] == sorted(u.index for u in sampled.kept)
    assert {u.key for u in sampled.kept} | {u.key for u in sampled.dropped} == {u.key for u, _ in CANDIDATES}
    assert "sampled 30 of 60 samples" in sampled.note


def test_sampling_is_seeded_and_stable_across_processes() -> None:
    first = [u.key for u in sample_units(CANDIDATES, 12, seed=3).kept]
    assert first == [u.key for u in sample_units(CANDIDATES, 12, seed=3).kept]
    assert first != [u.key for u in sample_units(CANDIDATES, 12, seed=4).kept]
    code = ("from tests.unit.test_curation_sampling import CANDIDATES; from pytest_mllm.curation.sampling import "
            "sample_units; print([u.key for u in sample_units(CANDIDATES, 12, seed=3).kept])")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "123", "PATH": ""}, cwd=__file__.rsplit("/tests/", 1)[0])
    assert other.stdout.strip() == str(first)


def test_pairs_are_kept_whole_and_spare_room_goes_elsewhere() -> None:
    candidates = units("p", "middle", 3, 0, size=2) + units("s", "hard", 3, 10)
    sampled = sample_units(candidates, 5, seed=0)
    assert sum(u.size for u in sampled.kept) == 5
    assert all(u.size in (1, 2) for u in sampled.kept)


def test_target_larger_than_what_remains_keeps_everything() -> None:
    sampled = sample_units(CANDIDATES, 500, seed=0)
    assert sampled.target_too_large and not sampled.dropped and len(sampled.kept) == 60
    assert "--target 500 is not below the 60 samples that passed the filters: kept all 60" == sampled.note
    assert not sample_units(CANDIDATES, 60, seed=0).target_too_large
    assert sample_units(CANDIDATES, None, seed=0).note.startswith("no --target")
