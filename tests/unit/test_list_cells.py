"""`scoring/list_cells.py`: answer cells computed as the reference's `eval` computes them, from literal
arithmetic only; names, calls and attributes are never evaluated, oversized arithmetic is refused.
(What VLMEvalKit's metrics then make of each cell is asserted against the reference's own run in
tests/unit/test_official_reading.py, `list_cells`.)"""

from __future__ import annotations

import pytest

from pytest_mllm.scoring.list_cells import NotComputed, cell_value, list_cell


@pytest.mark.parametrize(("cell", "expected"), [
    ("[1/2]", [0.5]), ("[2*3, 'a']", [6, "a"]), ("[-1.50]", [-1.5]), ("[7 // 2, 3 % 2]", [3, 1]),
    ("['a' + 'b']", ["ab"]), ("[10**2]", [100]), ("[1, [2, 3], (4,)]", [1, [2, 3], (4,)]),
    ("  [True, None]", [True, None]), ("['don\\'t', \"it's\"]", ["don't", "it's"]), ("[not 0, ~1]", [True, -2]),
])
def test_literal_arithmetic_is_computed(cell: str, expected: list[object]) -> None:
    assert list_cell(cell) == expected


@pytest.mark.parametrize("cell", [
    "[Gambia, Niger]",  # names: eval raises NameError, the cell stays text
    "[__import__('os').getcwd()]", "[open('x')]", "[().__class__]", "[x for x in 'ab']",  # never run
    "[1/0]", "['a' - 1]",  # arithmetic eval fails on
    "[10**100000]", "['a' * 10**9]",  # too large to compute
    "(1, 2)", "'[1]'", "[1, 2",  # not a list
])
def test_anything_else_is_text(cell: str) -> None:
    assert list_cell(cell) is None


def test_cell_value_says_why_it_is_not_computed() -> None:
    assert cell_value("'abc'") == "abc"
    with pytest.raises(NotComputed):
        cell_value("hello")
