"""`harness/shard.py`: the samples scored together land in one shard, whatever the shard count."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation, EvaluationSettings
from pytest_mllm.harness.shard import ShardError, parse_shard, shard_of, unit_key
from pytest_mllm.sample import Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def samples(bench: str, data: str | None = None) -> list[Sample]:
    evaluation = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off",
                                               data={bench: data} if data else {}))
    return [s for s in evaluation.samples_for(evaluation.spec(find_spec(bench))) if isinstance(s, Sample)]


@pytest.mark.parametrize("bench, data, together", [
    ("shapes", None, lambda s: s.pair_group),  # MME-style pairs
    ("vrp_shapes", None, lambda s: s.metadata["vrp"]["source"]),  # every variant of a source
    ("mmbench", str(FIXTURES / "mmbench_circular"), lambda s: s.pair_group),  # circular passes
])
@pytest.mark.parametrize("count", [2, 3, 4, 7])
def test_groups_stay_in_one_shard(bench: str, data: str | None, together, count: int) -> None:
    found = samples(bench, data)
    shards = defaultdict(set)
    for sample in found:
        if together(sample):
            shards[together(sample)].add(shard_of(unit_key(bench, sample), count))
    assert shards and all(len(s) == 1 for s in shards.values())
    used = {shard_of(unit_key(bench, s), count) for s in found}
    assert used == set(range(1, count + 1))  # every shard gets work


def test_vrp_variants_of_a_pair_stay_with_the_pair() -> None:
    base = Sample(id="t::a::q1", benchmark="b", task="t", question="Q?", answer="yes", pair_group="t::a")
    variants = [Sample(id=f"t::a::q{n}::{v}", benchmark="b", task="t", question="Q?", answer="yes",
                       pair_group=f"t::a::{v}", metadata={"vrp": {"source": f"t::a::q{n}", "variant": v}})
                for n in (1, 2) for v in ("none", "arrow_red")]
    assert {unit_key("b", s) for s in [base, *variants]} == {"b\0pair:t::a"}


def test_parse_shard() -> None:
    assert parse_shard("2/4") == (2, 4) and parse_shard(" 1 / 1 ") == (1, 1)
    for bad in ("0/4", "5/4", "4", "x/4", "1/0", "-1/4"):
        with pytest.raises(ShardError):
            parse_shard(bad)
