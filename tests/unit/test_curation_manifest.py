"""The pipeline's decisions as the manifest counts them, and the report's statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.curation.difficulty import thresholds
from pytest_mllm.curation.manifest import build_manifest, counts
from pytest_mllm.curation.panel import Run
from pytest_mllm.curation.pipeline import Settings, curate
from pytest_mllm.curation.report import build_report, kendall_tau, markdown, same_ranking
from pytest_mllm.curation.units import Item

IDS = ["s1", "s2", "s3", "s4", "s5", "p1", "p2"]
ITEMS = [Item(i, "t" if i.startswith("s") else "pair", n, "g" if i.startswith("p") else None, text=i)
         for n, i in enumerate(IDS)]


def judge(name: str, statuses: str, latency: float = 1.0) -> Run:
    """`statuses` has one letter per id: c correct, i incorrect, e error, - no record."""
    table = {"c": "correct", "i": "incorrect", "e": "error"}
    return Run(name, Path(name), {i: {"id": i, "status": table[s], "latency_s": latency}
                                  for i, s in zip(IDS, statuses) if s != "-"})


#                 s1   s2   s3   s4   s5   p1 p2
PANEL = [judge("A", "c" "c" "c" "i" "c" "c" "c", 2.0),
         judge("B", "c" "c" "i" "i" "e" "c" "i"),
         judge("C", "c" "i" "i" "i" "c" "c" "i"),
         judge("D", "c" "c" "i" "i" "-" "c" "c")]
# 4 judges, code preset scaled: easy >= 3, middle 2, hard 1 (counts of correct judges)
# s1: 4 easy · s2: 3 easy · s3: 1 hard · s4: 0 unanswered · s5: 2 + 2 unknown → unknown · pair: 2 middle


def test_classes_reasons_and_counts() -> None:
    settings = Settings(thresholds(4), target=None)
    curation = curate(ITEMS, PANEL, [], settings)
    decided = {d.unit.key: (d.klass, d.correct, d.unknown, d.reason) for d in curation.decisions.values()}
    assert decided == {"s1": ("easy", 4, 0, "easy"), "s2": ("easy", 3, 0, "easy"), "s3": ("hard", 1, 0, None),
                       "s4": ("unanswered", 0, 0, "unanswered"), "s5": ("unknown", 2, 2, "unknown"),
                       "pair::g": ("middle", 2, 0, None)}
    assert curation.kept_ids == ["s3", "p1", "p2"]
    assert [e["id"] for e in curation.review] == ["s4"]
    c = counts(curation)
    assert (c["samples_before"], c["samples_after"], c["units_before"], c["units_after"]) == (7, 3, 6, 2)
    assert c["dropped_by_reason"] == {"easy": 2, "unanswered": 1, "unknown": 1, "leakage": 0, "sampled-out": 0}
    assert c["by_task"]["pair"] == {"before": 2, "after": 2, "easy": 0, "unanswered": 0, "unknown": 0,
                                    "leakage": 0, "sampled-out": 0}
    assert c["by_class"]["middle"] == {"before": 2, "after": 2}
    assert any("judge B: 1 errored" in w for w in curation.warnings)
    assert any("judge D: 1 not answered" in w for w in curation.warnings)

    report = build_report(curation, PANEL, settings)
    manifest = build_manifest(curation, {"seed": 0}, report)
    assert [(d["id"], d["reason"]) for d in manifest["dropped"]] == [
        ("s1", "easy"), ("s2", "easy"), ("s4", "unanswered"), ("s5", "unknown")]
    assert [(k["id"], k["class"]) for k in manifest["kept"]] == [("s3", "hard"), ("p1", "middle"), ("p2", "middle")]

    a = report["models"][0]
    assert a["accuracy_before"] == pytest.approx(6 / 7) and a["accuracy_after"] == pytest.approx(1.0)
    assert (a["time_before_s"], a["time_after_s"]) == (14.0, 6.0)
    assert report["time"]["ratio"] == pytest.approx((6 + 3 + 3 + 3) / (14 + 7 + 7 + 6))  # D has no record of s5
    b = report["models"][1]
    assert b["accuracy_before"] == pytest.approx(3 / 6)  # the errored sample is left out, not counted wrong
    assert b["accuracy_by_class"]["easy"] == 1.0 and b["accuracy_by_class"]["unknown"] is None
    assert report["spread"]["before"]["max_minus_min"] == pytest.approx(6 / 7 - 3 / 7)
    text = markdown(report, "title")
    assert "| total | 7 | 3 | 2 | 1 | 1 | 0 | 0 |" in text and "Kendall τ" in text


def test_keep_unanswered_keeps_them_and_still_lists_them_for_review() -> None:
    curation = curate(ITEMS, PANEL, [], Settings(thresholds(4), keep_unanswered=True))
    assert curation.kept_ids == ["s3", "s4", "p1", "p2"] and [e["id"] for e in curation.review] == ["s4"]


def test_kendall_tau_and_ranking() -> None:
    assert kendall_tau([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)
    assert kendall_tau([1, 1], [1, 2]) is None
    assert same_ranking([0.5, 0.7, 0.6], [0.1, 0.9, 0.2]) and not same_ranking([0.5, 0.7], [0.7, 0.5])
