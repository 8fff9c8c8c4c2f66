"""Replay's check of a recording against the samples it answers (`models/replay_check.py`): which
recorded fields agree with a sample, and when a recording is refused."""

from __future__ import annotations

import pytest

from pytest_mllm.models.predictions import Recorded
from pytest_mllm.models.replay_check import ReplayCoverage, ReplayMismatch, check_coverage, disagreement
from pytest_mllm.sample import Sample

SAMPLE = Sample(id="7", benchmark="pope", task="random", question="Is there a  dog in the image?", answer="yes")


@pytest.mark.parametrize("fields", [
    {"question": "is there a dog in the image?", "answer": "YES"},  # case and whitespace runs ignored
    {"target": "Yes", "input": "Is there a dog in the image?\nAnswer the question using a single word or phrase."},
    {"target": ["no", "yes"]},  # a list target: one of its items
    {"question": float("nan"), "answer": "yes"},  # a missing cell is not compared
    {"doc": {"question": "Is there a dog in the image?", "image": "<bytes>"}},
    {"category": "anything"},  # fields replay does not compare
])
def test_rows_that_agree(fields: dict) -> None:
    assert disagreement(Recorded("row 2 (index 7)", fields), SAMPLE) is None


@pytest.mark.parametrize("fields, why", [
    ({"question": "Is there a cat?"}, "question 'Is there a cat?' is not the sample's question"),
    ({"target": "No"}, "target 'No' is not the sample's answer 'yes'"),
    ({"answer": 2.0}, "answer '2.0' is not the sample's answer 'yes'"),
    ({"input": "Is there a cat in the image?"}, "input 'Is there a cat in the image?' does not hold the sample's question"),
    ({"doc": {"answer": "no"}}, "doc.answer 'no' is not the sample's answer 'yes'"),
])
def test_rows_that_disagree_say_which_field(fields: dict, why: str) -> None:
    assert (disagreement(Recorded("row 2 (index 7)", fields), SAMPLE) or "").startswith(why)


def test_a_recording_under_the_threshold_is_refused_naming_its_first_mismatch() -> None:
    found = ReplayCoverage(samples=30, answered=30, compared=20, agreeing=17, first_mismatch="line 4 (doc_id 3) for …")
    check_coverage(found, path="f.jsonl", benchmark="pope", min_match=0.85)  # 85 %: accepted
    with pytest.raises(ReplayMismatch, match=r"agree for 17 of 20 \(85.0 %, under --mllm-replay-min-match=0.9\); "
                                             r"first mismatch: line 4 \(doc_id 3\)"):
        check_coverage(found, path="f.jsonl", benchmark="pope", min_match=0.9)
    check_coverage(ReplayCoverage(30, 30, 0, 0, None), path="f.jsonl", benchmark="pope", min_match=1.0)  # nothing compared
    assert found.line("pope") == ("replay: 30 of 30 pope samples have a recorded answer; the recorded questions or "
                                  "targets agree for 17 of 20 (85.0 %)")
