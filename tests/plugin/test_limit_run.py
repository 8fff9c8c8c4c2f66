"""`--mllm-limit=N` end to end: at most N samples per task with the scoring units whole (MME's pairs,
MMBench's circular passes), the first in file order, and the results, the terminal, the JUnit XML and the summary
saying the run was limited. Each run is a subprocess, as a user runs it."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MMBENCH = FIXTURES / "mmbench_circular"


def test_mmbench_runs_whole_circular_groups_in_file_order_across_workers(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--mllm-bench=mmbench",
                                           f"--mllm-data={MMBENCH}", f"--mllm=replay:{MMBENCH / 'responses.jsonl'}",
                                           "--mllm-cache=off", "--mllm-limit=8", f"--mllm-json={out}",
                                           "--junitxml=junit.xml", "--mllm-markdown=summary.md")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()  # no gate: a smoke run that says it is one
    with (MMBENCH / "MMBench_DEV_EN.tsv").open(newline="") as handle:
        indexes = [int(row["index"]) for row in csv.DictReader(handle, delimiter="\t")]
    passes = Counter(index % 1_000_000 for index in indexes)  # a question's circular passes
    questions = list(dict.fromkeys(index % 1_000_000 for index in indexes))  # in file order
    expected, count = [], 0
    for question in questions:  # the first questions whose passes fit in 8
        if count + passes[question] > 8:
            break
        expected.append(question)
        count += passes[question]
    document = json.loads(out.read_text())
    ran = Counter(int(r["id"].rsplit("::", 1)[-1]) % 1_000_000 for r in document["records"])
    assert list(ran) and sorted(ran) == sorted(expected)
    assert all(ran[q] == passes[q] for q in ran)  # every pass of each question that ran
    assert document["settings"]["limit"] == {"per_task": 8, "selection": "first in file order, scoring units whole",
                                             "benchmarks": {"mmbench": {"kept": count, "total": len(indexes)}}}
    assert result.parseoutcomes()["passed"] + result.parseoutcomes().get("incorrect", 0) == count
    reason = f"limited to 8 samples per task ({count} of {len(indexes)} sample tests)"
    assert document["incomplete"] == [{"kind": "limited", "reason": reason, "per_task": 8, "kept": count,
                                       "total": len(indexes)}]
    result.stdout.fnmatch_lines([f"pytest-mllm: incomplete run: {reason}"])
    junit = ET.parse(pytester.path / "junit.xml").getroot()
    assert [p.get("value") for p in junit.iter("property") if p.get("name") == "mllm.incomplete"] == [reason]
    assert f"**⚠️ incomplete run: {reason}**" in (pytester.path / "summary.md").read_text()


def test_mme_runs_one_image_pair_per_subtask_and_scores_its_accuracy_plus(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out.json"
    data = FIXTURES / "mme" / "MME_Benchmark_release_version"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=MME", f"--mllm-data=MME={data}",
                                           "--mllm=baseline:yes", "--mllm-limit=1", f"--mllm-json={out}", "-m",
                                           "perception")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    document = json.loads(out.read_text())
    records = document["records"]
    per_task = Counter(r["task"] for r in records)
    perception = {"existence", "count", "position", "color", "posters", "celebrity", "scene", "landmark", "artwork",
                  "OCR"}
    subtasks = {folder.name for folder in data.iterdir() if folder.is_dir()} & perception  # 5 in the fixture
    assert set(per_task) == subtasks and set(per_task.values()) == {2}  # one pair (2 questions) per subtask
    assert all(n == 2 for n in Counter(r["pair_group"] for r in records).values())
    metrics = document["benchmarks"]["mme"]["metrics"]
    assert metrics["existence.accuracy_plus"] == 0.0  # "yes" to both questions of a pair: one is wrong
    limit = document["settings"]["limit"]["benchmarks"]["mme"]
    assert limit["kept"] == 2 * len(subtasks) and limit["total"] > limit["kept"]  # of the samples -m selected
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] + outcomes["incorrect"] == limit["kept"]


def test_a_limit_below_one_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=shapes", "--mllm=baseline:yes",
                                           "--mllm-limit=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --mllm-limit must be at least 1 sample per task, got 0"])
