"""The subset's design: the size asked for, strata of tasks × difficulty bands, a seeded draw."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_mllm.estimate.design import RANDOM, STRATIFIED, DesignError, Unit, draw, parse_size, strata

pytest.importorskip("numpy")


def _units(tasks: dict[str, int], size: int = 2) -> list[Unit]:
    return [Unit(f"{task}:{n}", task, size) for task, count in tasks.items() for n in range(count)]


@pytest.mark.parametrize(("text", "fraction", "samples"), [
    ("20%", 0.2, None), ("0.2", 0.2, None), (" 12.5 % ", 0.125, None), ("100", None, 100), ("2", None, 2)])
def test_a_size_is_a_fraction_or_a_number_of_samples(text: str, fraction: float | None, samples: int | None) -> None:
    size = parse_size(text)
    assert (size.fraction, size.samples) == (pytest.approx(fraction) if fraction else None, samples)


@pytest.mark.parametrize("text", ["0", "100%", "1", "1.5", "abc", "-3", "0.0", "150%"])
def test_a_size_that_cannot_be_drawn_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(DesignError, match=r"--mllm-estimate"):
        parse_size(text)


def test_a_size_becomes_whole_units() -> None:
    assert parse_size("10%").units(200, 360) == 20
    assert parse_size("72").units(200, 360) == 40  # 72 samples of units holding 1.8 samples on average
    assert parse_size("1%").units(24, 312) == 2  # never fewer than two units
    assert parse_size("5000").units(24, 312) == 24  # never more than the benchmark


def test_each_task_gets_its_share_and_each_band_one_draw() -> None:
    units = _units({"a": 40, "b": 40, "c": 20})
    difficulty = {u.key: int(u.key.split(":")[1]) / 40 for u in units}
    found = strata(units, difficulty, 20)
    assert sum(s.draws for s in found) == 20
    per_task = Counter(s.name.split(" #")[0] for s in found for _ in range(s.draws))
    assert per_task == {"a": 8, "b": 8, "c": 4}
    assert all(s.draws == 1 for s in found) and len(found) == 20
    bands = [s for s in found if s.name.startswith("a #")]
    assert [len(s.units) for s in bands] == [5] * 8
    assert bands[0].units == tuple(f"a:{n}" for n in range(5))  # the band of the hardest units (share 0–0.1)


def test_tasks_too_small_for_a_draw_each_are_pooled() -> None:
    units = _units({"a": 12, "b": 12, "c": 1})
    found = strata(units, {}, 2)
    assert {s.name.split(" #")[0] for s in found} == {"all"}
    assert sum(s.draws for s in found) == 2


def test_units_the_panel_does_not_know_sit_at_the_median() -> None:
    units = _units({"a": 5})
    difficulty = {"a:0": 0.0, "a:1": 0.2, "a:2": 0.8, "a:3": 1.0}
    found = strata(units, difficulty, 5)
    order = [key for s in found for key in s.units]
    assert order.index("a:4") in (2, 3)  # between the known 0.2 and 0.8


def test_the_random_method_is_one_stratum_of_the_whole_benchmark() -> None:
    units = _units({"a": 10, "b": 10})
    found = strata(units, {}, 6, RANDOM)
    assert len(found) == 1 and found[0].draws == 6 and len(found[0].units) == 20


def test_an_unknown_method_is_refused() -> None:
    with pytest.raises(DesignError, match="stratified, random"):
        strata(_units({"a": 4}), {}, 2, "anchor")


def test_a_draw_is_fixed_by_its_seed_and_takes_each_stratum_s_count() -> None:
    units = _units({"a": 30, "b": 30})
    difficulty = {u.key: int(u.key.split(":")[1]) % 7 / 7 for u in units}
    found = strata(units, difficulty, 12, STRATIFIED)
    first, again, other = draw(found, 0), draw(found, 0), draw(found, 1)
    assert first == again and first != other
    counts = Counter(d.stratum for d in first.values())
    assert all(counts[s.name] == s.draws for s in found)
    assert all(first[k].stratum_units == len(s.units) for s in found for k in s.units if k in first)
