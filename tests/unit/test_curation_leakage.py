"""The leakage pass: chance-aware thresholds, identical questions skipped, and a line per task."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.curation.leakage import auto_threshold, exceed_probability, leakage_pass
from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.units import Item, build_units


def run(name: str, correct: set[str], ids: list[str]) -> Run:
    return Run(name, Path(f"{name}.json"),
               {i: {"id": i, "status": "correct" if i in correct else "incorrect"} for i in ids})


def test_auto_threshold_is_what_guessing_rarely_exceeds() -> None:
    assert auto_threshold(3, 0.0) == 0  # open answers: any right text-only answer counts
    assert auto_threshold(1, 0.5) == 1  # one coin toss: nothing to tell it from guessing
    assert auto_threshold(5, 0.5) == 4  # all five right: 1/32 ≈ 3 % by chance
    assert auto_threshold(5, 0.25) == 3
    assert exceed_probability(5, 0.25, 3) == pytest.approx(16 / 1024)


def test_open_answers_right_without_the_image_are_dropped() -> None:
    items = {i: Item(i, "vqa", n, text=f"question {n}") for n, i in enumerate(["q1", "q2", "q3"])}
    units = build_units(list(items.values()))
    texts = [run("t1", {"q1"}, list(items)), run("t2", {"q1", "q2"}, list(items))]
    outcome = leakage_pass(units, items, texts, None)
    assert outcome.leaked == {"q1", "q2"} and outcome.correct == {"q1": 2, "q2": 1, "q3": 0}
    [task] = outcome.tasks
    assert task.action == "checked" and task.threshold == 0 and task.dropped_samples == 2
    assert "dropped when more than 0 of 2 text-only answers are right" in task.note


def test_yes_no_task_with_one_text_only_model_is_skipped_and_says_why() -> None:
    items = {f"q{n}": Item(f"q{n}", "yn", n, answer_type="yes_no", text=f"is it {n}?") for n in range(4)}
    texts = [run("t1", {"q0", "q1"}, list(items))]
    outcome = leakage_pass(build_units(list(items.values())), items, texts, None)
    [task] = outcome.tasks
    assert task.action == "skipped" and not outcome.leaked
    assert "50% chance per guess" in task.note and "cannot be told from guessing" in task.note
    forced = leakage_pass(build_units(list(items.values())), items, texts, 0)
    assert forced.leaked == {"q0", "q1"} and "guessing alone would pass this for 50.0% of units" in forced.tasks[0].note


def test_identical_questions_are_skipped_with_an_explanation() -> None:
    items = {f"k{n}": Item(f"k{n}", "caption", n, text="Describe the image.") for n in range(3)}
    outcome = leakage_pass(build_units(list(items.values())), items, [run("t", {"k0"}, list(items))], None)
    [task] = outcome.tasks
    assert task.action == "skipped" and "same text ('Describe the image.')" in task.note and not outcome.leaked


def test_only_candidates_are_dropped_and_no_text_only_answers_is_said() -> None:
    items = {i: Item(i, "vqa", n, text=i) for n, i in enumerate(["a", "b"])}
    units = build_units(list(items.values()))
    outcome = leakage_pass(units, items, [run("t", {"a", "b"}, list(items))], None, candidates={"b"})
    assert outcome.leaked == {"b"} and outcome.correct == {"a": 1, "b": 1}
    none = leakage_pass(units, items, [], None)
    assert none.tasks[0].action == "skipped" and "no text-only answers" in none.tasks[0].note
    off = leakage_pass(units, items, [run("t", {"a"}, list(items))], None, off="turned off")
    assert off.tasks[0].note == "turned off" and not off.leaked
