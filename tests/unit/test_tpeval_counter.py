"""The decaying edit budget: start in round 1, floor in the last, never increasing, never below floor."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.tpeval.counter import FLOOR, MIN_START, edit_budget, edit_start


def test_linear_schedule() -> None:
    assert [edit_budget(r, 5, 10, 2) for r in range(1, 6)] == [10, 8, 6, 4, 2]
    assert [edit_budget(r, 16, 10, 2) for r in range(1, 17)] == [10, 9, 8, 8, 7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2]


def test_one_round_and_rounds_past_the_end() -> None:
    assert edit_budget(1, 1, 7, 2) == 7
    assert edit_budget(20, 16, 10, 2) == 2
    assert edit_budget(2, 1, 7, 2) == 2


def test_start_below_floor_is_raised() -> None:
    assert [edit_budget(r, 4, 1, 3) for r in range(1, 5)] == [3, 3, 3, 3]


@pytest.mark.parametrize("args", [(0, 16, 10, 2), (1, 0, 10, 2), (1, 16, 10, -1)])
def test_bad_arguments(args: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        edit_budget(*args)


@given(rounds=st.integers(1, 60), start=st.integers(0, 200), floor=st.integers(0, 20))
def test_monotone_and_bounded(rounds: int, start: int, floor: int) -> None:
    budgets = [edit_budget(r, rounds, start, floor) for r in range(1, rounds + 1)]
    assert budgets[0] == max(start, floor)
    assert budgets[-1] == (floor if rounds > 1 else max(start, floor))
    assert all(b >= floor for b in budgets)
    assert all(a >= b for a, b in zip(budgets, budgets[1:]))


def test_edit_start() -> None:
    assert edit_start("Please answer yes or no.") == MIN_START
    long = "Answer with the option's letter from the given choices directly and nothing else."
    assert edit_start(long) == len(long.split()) > MIN_START
    assert FLOOR < MIN_START
