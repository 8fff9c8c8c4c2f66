"""Pair groups are curated as one unit: a judge is right on a unit only when right on every member."""

from __future__ import annotations

from pytest_mllm.curation.units import Item, build_units, unit_verdict


def test_pairs_form_units_in_benchmark_order() -> None:
    items = [Item("t::a1", "t", 0, "t::a"), Item("u::x", "u", 1), Item("t::a2", "t", 2, "t::a"),
             Item("v::b1", "v", 3, "b"), Item("w::b1", "w", 4, "b")]
    units = build_units(items)
    assert [(u.key, u.ids) for u in units] == [("t::a", ("t::a1", "t::a2")), ("u::x", ("u::x",)),
                                               ("v::b", ("v::b1",)), ("w::b", ("w::b1",))]
    assert [u.size for u in units] == [2, 1, 1, 1]


def test_unit_verdict_needs_every_member_right() -> None:
    [unit] = build_units([Item("a", "t", 0, "p"), Item("b", "t", 1, "p")])
    assert unit_verdict({"a": True, "b": True}, unit) is True
    assert unit_verdict({"a": True, "b": False}, unit) is False
    assert unit_verdict({"a": None, "b": False}, unit) is False  # one wrong member settles it
    assert unit_verdict({"a": True, "b": None}, unit) is None  # errored: unknown, not wrong
    assert unit_verdict({"a": True}, unit) is None  # not answered: unknown
