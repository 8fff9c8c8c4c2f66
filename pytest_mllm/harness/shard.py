"""`--mllm-shard=I/N`: one of N deterministic parts of a run's sample tests, for running a benchmark
on several machines; `pytest-mllm-merge` (`report/merge.py`) joins the parts' `--mllm-json` files.

A test's shard is a stable hash (sha256) of its *unit*, modulo N: the samples scored together stay
together, since MME's accuracy+ and MMBench's circular accuracy need every member of a group and
VRPTEST compares each source's variants. The unit is the benchmark plus

- the sample's `pair_group` (MME's question pairs, MMBench's circular passes), with a VRP
  variant's `::<variant>` suffix taken off, so a pair's variants all stay with the pair;
- else a VRP variant's source sample;
- else the sample's id.

Tests that are not benchmark samples (a conftest's own tests) are hashed by their test id. The
hash depends on nothing else in the collection, so `-k`, `-m` and xdist select within a shard
exactly as they would in the whole run.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

import pytest

from pytest_mllm.sample import Sample, SkippedSample
from pytest_mllm.sections import all_sections

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


class ShardError(ValueError):
    """A --mllm-shard value that cannot be read."""


def parse_shard(text: str) -> tuple[int, int]:
    """`2/4` → (2, 4); ShardError unless it is I/N with 1 <= I <= N."""
    match = _SHARD.match(text)
    if not match:
        raise ShardError("expected I/N, the 1-based shard number and the number of shards (e.g. 2/4)")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise ShardError(f"expected 1 <= I <= N, got I={index}, N={count}")
    return index, count


def unit_key(benchmark: str, sample: object) -> str:
    """What decides a sample's shard (see the module's docstring)."""
    sample_id = getattr(sample, "id", "")
    if not isinstance(sample, Sample):
        return f"{benchmark}\0id:{sample_id}"
    unit = next((unit for section in all_sections() if (unit := section.sample_unit(sample))), None)
    if unit:
        return f"{benchmark}\0{unit}"
    if sample.pair_group:
        return f"{benchmark}\0pair:{sample.pair_group}"
    return f"{benchmark}\0id:{sample_id}"


def shard_of(key: str, count: int) -> int:
    """The 1-based shard of a unit key among `count`."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % count + 1


def item_key(item: pytest.Item) -> str:
    spec, sample = getattr(item, "spec", None), getattr(item, "sample", None)
    if spec is not None and sample is not None:
        return unit_key(spec.name, sample)
    return f"\0test:{item.nodeid}"


def expected_records(items: Sequence[pytest.Item]) -> dict[str, int]:
    """Per benchmark, the records the sample tests among `items` produce (skipped samples produce none;
    -1: not known in advance, where a test draws its records as it runs)."""
    counts: Counter[str] = Counter()
    unknown: set[str] = set()
    for item in items:
        spec, sample = getattr(item, "spec", None), getattr(item, "sample", None)
        if spec is None or sample is None or isinstance(sample, SkippedSample):
            continue
        if getattr(item, "draws_records", False):
            unknown.add(spec.name)
        counts[spec.name] += 1
    return {name: -1 if name in unknown else n for name, n in sorted(counts.items())}


def split(items: Sequence[pytest.Item], index: int, count: int) -> tuple[list[pytest.Item], list[pytest.Item]]:
    """(kept, deselected): the tests of shard `index` of `count`, in collection order, and the others."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (kept if shard_of(item_key(item), count) == index else dropped).append(item)
    return kept, dropped
