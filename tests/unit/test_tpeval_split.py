"""D_few / D_test per task: validation splits, seeded draws that keep pairs together, and per-task errors."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.sample import Sample
from pytest_mllm.tpeval.split import PAPER_FEW, FewShotError, few_split, split_task, split_task_with_source


def sample(task: str, n: int, split: str = "test", pair: str | None = None) -> Sample:
    return Sample(id=f"{task}-{split}-{n}", benchmark="b", task=task, question=f"q{n}", answer="yes",
                  split=split, pair_group=pair)


def plain(task: str, count: int) -> list[Sample]:
    return [sample(task, i) for i in range(count)]


def pairs(task: str, count: int) -> list[Sample]:
    return [sample(task, i, pair=f"{task}-img{i // 2}") for i in range(2 * count)]


def ids(samples: list[Sample]) -> list[str]:
    return [s.id for s in samples]


def test_validation_source() -> None:
    samples = [sample("t", i, "validation") for i in range(3)] + [sample("t", i, "dev") for i in range(3, 5)] \
        + plain("t", 4) + [sample("t", 9, "train")]
    few, test = split_task("t", samples, few=4, seed=0)  # auto: the task has validation samples
    assert ids(few) == ["t-validation-0", "t-validation-1", "t-validation-2", "t-dev-3"]
    assert ids(test) == ids(plain("t", 4))
    few, test = split_task("t", samples, few=10, seed=0, source="validation")
    assert len(few) == 5 and ids(test) == ids(plain("t", 4))


def test_seeded_is_stable_and_disjoint() -> None:
    samples = plain("t", 30)
    few, test = split_task("t", samples, few=8, seed=3)
    assert len(few) == 8 and len(test) == 22
    assert set(ids(few)).isdisjoint(ids(test)) and set(ids(few)) | set(ids(test)) == set(ids(samples))
    assert ids(few) == sorted(ids(few), key=ids(samples).index)  # kept in sample order
    assert split_task("t", samples, few=8, seed=3) == (few, test)
    assert split_task("t", samples, few=8, seed=4)[0] != few


def test_seeded_draw_depends_on_task_name() -> None:
    a = [int(s.question[1:]) for s in split_task("alpha", plain("alpha", 40), few=8, seed=0)[0]]
    b = [int(s.question[1:]) for s in split_task("beta", plain("beta", 40), few=8, seed=0)[0]]
    assert a != b


def test_seeded_draw_is_the_same_in_another_process() -> None:
    here = ids(split_task("t", plain("t", 30), few=8, seed=7)[0])
    code = ("from pytest_mllm.sample import Sample; from pytest_mllm.tpeval.split import split_task; "
            "s=[Sample(id=f't-test-{i}',benchmark='b',task='t',question=f'q{i}',answer='yes') for i in range(30)]; "
            "print(','.join(x.id for x in split_task('t', s, few=8, seed=7)[0]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert out.strip().split(",") == here


@given(n_pairs=st.integers(2, 20), few=st.integers(1, 10), seed=st.integers(0, 1000))
def test_pairs_stay_together(n_pairs: int, few: int, seed: int) -> None:
    samples = pairs("t", n_pairs)
    try:
        d_few, d_test = split_task("t", samples, few=few, seed=seed)
    except FewShotError:
        assert few >= 2 * n_pairs - 1  # whole pairs for `few` samples would leave nothing to test
        return
    few_groups = {s.pair_group for s in d_few}
    assert few_groups.isdisjoint({s.pair_group for s in d_test})
    assert len(d_few) == 2 * len(few_groups) and few <= len(d_few) <= few + 1
    assert d_test


def test_too_few_samples_names_the_task_and_fix() -> None:
    with pytest.raises(FewShotError) as info:
        split_task("color", plain("color", 8), few=8, seed=0)
    err = info.value
    assert (err.task, err.needed, err.available) == ("color", 9, 8)
    assert "'color'" in str(err) and "8 samples" in str(err) and "9" in str(err)
    assert "--mllm-tp-few=N (at most 7)" in str(err) and "validation samples" in str(err)
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_pairs_that_would_take_everything() -> None:
    with pytest.raises(FewShotError, match="pair groups"):
        split_task("t", pairs("t", 3), few=5, seed=0)


def test_validation_without_test_samples() -> None:
    with pytest.raises(FewShotError, match="no test samples"):
        split_task("t", [sample("t", 0, "val")], few=1, seed=0)
    with pytest.raises(FewShotError, match="no validation samples"):
        split_task("t", plain("t", 5), few=1, seed=0, source="validation")


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="source"):
        split_task("t", plain("t", 5), few=1, seed=0, source="random")
    with pytest.raises(ValueError, match="--mllm-tp-few"):
        split_task("t", plain("t", 5), few=-1, seed=0)


def test_few_split_errors_one_task_alone() -> None:
    samples = plain("big", 12) + plain("small", 3) + plain("other", 10)
    with pytest.raises(FewShotError, match="'small'"):
        few_split(samples, few=4, seed=0)
    errors: dict[str, FewShotError] = {}
    d_few, d_test = few_split(samples, few=4, seed=0, errors=errors)
    assert list(d_few) == ["big", "other"] and list(d_test) == ["big", "other"]
    assert list(errors) == ["small"] and errors["small"].available == 3
    assert len(d_few["big"]) == 4 and len(d_test["big"]) == 8
    assert d_few["big"] == split_task("big", plain("big", 12), few=4, seed=0)[0]


# -- the paper's D_few (TP-Eval §5.1), few=0 ----------------------------------------------------


def test_paper_size_takes_the_whole_validation_split() -> None:
    """MMT-S: "the officially designated validation set" (about 20 per task) is D_few, tested on the test split."""
    samples = [sample("t", i, "validation") for i in range(23)] + plain("t", 200) + [sample("t", 999, "train")]
    few, test, source = split_task_with_source("t", samples, few=0, seed=0)
    assert source == "validation" and len(few) == 23 and all(s.split == "validation" for s in few)
    assert ids(test) == ids(plain("t", 200))
    few, _, _ = split_task_with_source("t", samples, few=8, seed=0)  # a cap, when asked for
    assert len(few) == 8


def test_paper_size_without_test_answers_halves_dev_and_val() -> None:
    """MMMU: "we combine the development and validation sets and allocate half of the data as D_few"."""
    samples = [sample("t", i, "dev") for i in range(5)] + [sample("t", i, "validation") for i in range(5, 30)]
    few, test, source = split_task_with_source("t", samples, few=0, seed=0)
    assert source == "half of dev+val" and len(few) == 15 and len(test) == 15
    assert set(ids(few)).isdisjoint(ids(test)) and set(ids(few)) | set(ids(test)) == set(ids(samples))
    assert split_task_with_source("t", samples, few=0, seed=0) == (few, test, source)  # seeded, stable
    few, test, _ = split_task_with_source("t", samples, few=4, seed=0, source="validation")
    assert len(few) == 4 and len(test) == 26
    with pytest.raises(FewShotError, match="at least 2"):
        split_task("t", [sample("t", 0, "dev")], few=0, seed=0)


def test_paper_size_for_a_test_only_task_is_a_draw_of_20_at_most_half() -> None:
    few, test, source = split_task_with_source("t", plain("t", 100), few=0, seed=0)
    assert source == "seeded" and len(few) == PAPER_FEW == 20 and len(test) == 80
    few, test, _ = split_task_with_source("t", plain("t", 30), few=0, seed=0)
    assert len(few) == 15 and len(test) == 15
    with pytest.raises(FewShotError):
        split_task("t", plain("t", 1), few=0, seed=0)
