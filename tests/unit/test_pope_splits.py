"""POPE splits: a POPE.tsv row naming several splits counts in each; per split, pooled and the
mean of the splits' F1 equal POPE's official `evaluate.py` (repository AoiDragon/POPE, commit
08d957b917e5a378a2f99d35b6293c536a66298b; the run is described in fixtures/pope_splits/README.md
and its numbers are in fixtures/pope_splits/official_scores.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.record import new_record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.scoring.pope import pope
from pytest_mllm.scoring.score import normalize_answer

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "pope_splits"
OFFICIAL = json.loads((FIXTURE / "official_scores.json").read_text())
RESPONSES = {json.loads(line)["id"]: json.loads(line)["response"]
             for line in (FIXTURE / "responses.jsonl").read_text().splitlines()}
SPLITS = ("adversarial", "popular", "random")


def _samples() -> list[Sample]:
    samples = load_samples(load_spec(find_spec("pope")), FIXTURE)
    assert all(isinstance(s, Sample) for s in samples)
    return samples  # type: ignore[return-value]


def test_a_row_naming_several_splits_is_a_sample_in_each() -> None:
    samples = _samples()
    assert {s.task for s in samples} == set(SPLITS)
    assert [s.id for s in samples if s.metadata["source_id"] == "7"] == ["popular::7", "random::7"]
    assert [s.category for s in samples if s.metadata["source_id"] == "7"] == ["popular", "random"]
    assert {task: sum(s.task == task for s in samples) for task in SPLITS} == {t: 10 for t in SPLITS}


def test_per_split_pooled_and_mean_f1_equal_the_official_script() -> None:
    records = []
    for sample in _samples():
        parsed = pope(RESPONSES[sample.metadata["source_id"]], sample)
        answer = normalize_answer(sample.answer, "pope")
        records.append(new_record(id=sample.id, benchmark="pope", task=sample.task, answer=answer,
                                  answer_type="yes_no", parser="pope", parsed=parsed, correct=parsed == answer,
                                  status="correct" if parsed == answer else "incorrect"))
    result = benchmark_metrics(records, ["accuracy", "pope"], {})
    for split in SPLITS:
        theirs, ours = OFFICIAL["splits"][split], result["tasks"][split]
        assert (ours["count"], ours["accuracy"], ours["precision"], ours["recall"], ours["f1"], ours["yes_ratio"]) == (
            theirs["n"], theirs["Accuracy"], theirs["Precision"], theirs["Recall"], theirs["F1 score"],
            theirs["Yes ratio"]), split
    pooled, overall = OFFICIAL["pooled"], result["overall"]
    assert overall["pooled_f1"] == overall["f1"] == pooled["F1 score"]
    assert (overall["accuracy"], overall["precision"], overall["recall"], overall["yes_ratio"]) == (
        pooled["Accuracy"], pooled["Precision"], pooled["Recall"], pooled["Yes ratio"])
    assert overall["mean_f1"] == sum(OFFICIAL["splits"][s]["F1 score"] for s in SPLITS) / 3


def test_the_fixture_is_what_its_script_writes() -> None:
    done = subprocess.run([sys.executable, str(FIXTURE / "make_fixture.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
