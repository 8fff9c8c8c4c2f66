"""Difficulty classes from counts of correct judges: both LIME-M presets, scaling, unknown judges."""

from __future__ import annotations

import pytest

from pytest_mllm.curation.difficulty import PRESETS, ThresholdError, scale, thresholds


def classes(t, n: int) -> list[str]:
    return [t.class_of(k) for k in range(n + 1)]


def test_code_preset_at_nine_judges_is_the_public_codes() -> None:
    t = thresholds(9, "code")
    assert (t.easy_min, t.hard_max) == (5, 2)
    assert classes(t, 9) == ["unanswered", "hard", "hard", "middle", "middle", "easy", "easy", "easy", "easy", "easy"]
    assert t.ranges() == {"easy": (5, 9), "middle": (3, 4), "hard": (1, 2), "unanswered": (0, 0)}


def test_paper_preset_at_ten_judges_puts_the_gap_at_two_into_hard() -> None:
    t = thresholds(10, "paper")
    assert (t.easy_min, t.hard_max) == (6, 2)
    assert classes(t, 10)[:7] == ["unanswered", "hard", "hard", "middle", "middle", "middle", "easy"]
    assert t.ranges()["middle"] == (3, 5) and t.ranges()["easy"] == (6, 10)


def test_presets_scale_as_fractions_of_the_panel() -> None:
    assert scale(PRESETS["code"], 10) == (6, 2)  # the code's cut-offs at 10 judges are the paper's
    assert scale(PRESETS["paper"], 9) == (6, 1)
    assert scale(PRESETS["code"], 5) == (3, 1)
    assert scale(PRESETS["code"], 18) == (10, 4)
    assert scale(PRESETS["code"], 2) == (2, 1)  # hard keeps one count, easy starts above it
    assert scale(PRESETS["code"], 3) == (2, 1)
    for n in range(2, 30):
        for preset in PRESETS.values():
            easy, hard = scale(preset, n)
            assert 1 <= hard < easy <= n


def test_description_gives_exact_counts() -> None:
    assert thresholds(5).describe() == "easy 3-5 · middle 2 · hard 1 · unanswered 0 (correct judges of 5)"
    assert "middle none" in thresholds(3).describe()
    assert "scaled to 5 judges" in thresholds(5).origin and "scaled" not in thresholds(9).origin


def test_counts_can_be_set_directly() -> None:
    t = thresholds(9, "paper", easy_min=7, hard_max=3)
    assert (t.easy_min, t.hard_max) == (7, 3) and "--easy-min 7, --hard-max 3" in t.origin
    assert thresholds(9, easy_min=8).hard_max == 2  # the other bound still comes from the preset


@pytest.mark.parametrize("panel, kwargs, message", [
    (1, {}, "at least 2 judges"),
    (5, {"easy_min": 6}, "--easy-min 6"),
    (5, {"easy_min": 2, "hard_max": 2}, "--hard-max 2"),
    (5, {"hard_max": -1}, "--hard-max -1"),
])
def test_bad_thresholds_are_refused(panel: int, kwargs: dict, message: str) -> None:
    with pytest.raises(ThresholdError, match=message):
        thresholds(panel, **kwargs)


def test_unknown_judges_make_the_class_unknown_only_when_they_could_change_it() -> None:
    t = thresholds(9, "code")  # easy 5-9, middle 3-4, hard 1-2
    assert t.classify(5, 4) == "easy"  # easy however the four errored judges would have answered
    assert t.classify(3, 1) == "middle"  # 3 or 4: middle either way
    assert t.classify(1, 1) == "hard"
    assert t.classify(4, 1) == "unknown"  # middle or easy
    assert t.classify(2, 1) == "unknown"  # hard or middle
    assert t.classify(0, 1) == "unknown"  # unanswered or hard
    assert t.classify(0, 0) == "unanswered"
    assert t.classify(0, 9) == "unknown"  # every judge errored
