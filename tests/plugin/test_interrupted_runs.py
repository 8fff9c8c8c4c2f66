"""A run cut short by a real signal, sent to a real pytest process (and to its xdist workers) once its model has
started k answers: every output it asked for is written with what was gathered, each says the run was interrupted,
no gate passes, the exit status is 2, and the answers given are in the cache for the next run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

# A user's model (as a conftest registers one): "yes" after a quarter second, each request it starts noted in
# $PROGRESS (its process id, one line each), so that the test knows when to send its signal and to whom.
SLOW_MODEL = '''
import os, time
from pytest_mllm.sample import Response

class Slow:
    name = "slow"
    needs_images = False
    identity = "slow-v1"  # its answers are cached

    def generate(self, requests):
        answers = []
        for _ in requests:
            with open(os.environ["PROGRESS"], "a") as progress:
                progress.write(f"{os.getpid()}\\n")
            time.sleep(0.25)
            answers.append(Response("yes"))
        return answers

def pytest_mllm_make_model(spec, config):
    return Slow() if spec == "slow" else None
'''
TEN = "existence and (img_000 or img_001 or img_002 or img_003 or img_004)"  # 10 sample tests of shapes
OUTPUTS = ("--mllm-json=out/results.json", "--mllm-html=out/report.html", "--mllm-markdown=out/summary.md",
           "--junitxml=out/junit.xml")
TIMEOUT_S = 120


def start(pytester: pytest.Pytester, *extra: str) -> subprocess.Popen[str]:
    pytester.makeconftest(SLOW_MODEL)
    (pytester.path / "step_summary.md").write_text("")
    env = {**os.environ, "PROGRESS": str(pytester.path / "progress.txt"), "OMP_NUM_THREADS": "1",
           "GITHUB_STEP_SUMMARY": str(pytester.path / "step_summary.md")}
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "--mllm=slow",
            "--mllm-bench=shapes", "-k", TEN, "--mllm-batch-size=1", "--mllm-gate=shapes.accuracy>=0.1", *OUTPUTS,
            *extra]
    return subprocess.Popen(args, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def started(pytester: pytest.Pytester) -> list[int]:
    """The process of each answer started so far."""
    path = pytester.path / "progress.txt"
    return [int(line) for line in path.read_text().split()] if path.exists() else []


def signal_after(pytester: pytest.Pytester, run: subprocess.Popen[str], k: int, number: int,
                 to_worker: bool = False) -> tuple[str, int]:
    """Send `number` once k answers were started (to the process answering the k-th under xdist, if `to_worker`);
    the run's output and how many answers had been started then."""
    deadline = time.monotonic() + TIMEOUT_S
    while len(started(pytester)) < k:
        assert run.poll() is None, run.communicate()[0]
        assert time.monotonic() < deadline, "the run never reached its k-th answer"
        time.sleep(0.02)
    seen = started(pytester)
    os.kill(seen[k - 1] if to_worker else run.pid, number)
    output, _ = run.communicate(timeout=TIMEOUT_S)
    return output, len(seen)


def outputs(pytester: pytest.Pytester) -> tuple[dict, ET.Element, str, str, str]:
    out = pytester.path / "out"
    return (json.loads((out / "results.json").read_text()), ET.parse(out / "junit.xml").getroot(),
            (out / "summary.md").read_text(), (pytester.path / "step_summary.md").read_text(),
            (out / "report.html").read_text())


def assert_marked_everywhere(pytester: pytest.Pytester, output: str, cause: str) -> dict:
    """Every output holds the records gathered, says the run was interrupted (by `cause`), and the gate failed."""
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    document, junit, summary, step_summary, html = outputs(pytester)
    incomplete, = document["incomplete"]
    assert incomplete["kind"] == "interrupted" and re.fullmatch(cause, incomplete["cause"]), incomplete
    assert incomplete["tests_selected"] == 10
    assert incomplete["tests_done"] == len(document["records"]) >= 1  # every test that ended is in the results
    reason = incomplete["reason"]
    assert reason == f"interrupted: {incomplete['cause']} after {len(document['records'])} of 10 tests"
    gate, = document["gates"]
    assert gate["verdict"] == "fail" and gate["note"] == f"not passed: the run was {reason}", gate
    assert f"pytest-mllm: incomplete run: {reason}" in output
    assert f"gate failed: shapes.accuracy {gate['value']:.4g} >= 0.1, not passed: the run was {reason}" in output
    assert [p.get("value") for p in junit.iter("property") if p.get("name") == "mllm.incomplete"] == [reason]
    failure, = [case.find("failure") for case in junit.iter("testcase") if case.get("name") == "shapes.accuracy>=0.1"]
    assert failure is not None and "not passed: the run was interrupted" in failure.get("message", ""), failure
    for text in (summary, step_summary):
        assert f"**⚠️ incomplete run: {reason}**" in text and "**1 of 1 gates failed**" in text, text
    assert "incomplete run" in html and reason in html
    return document


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_writes_what_was_gathered_marked_interrupted(pytester: pytest.Pytester, name: str) -> None:
    run = start(pytester)
    output, answered = signal_after(pytester, run, 4, getattr(signal, name))
    assert run.returncode == 2, output
    document = assert_marked_everywhere(pytester, output, name)
    assert len(document["records"]) == answered - 1  # the 4th answer was under way: the first 3 are kept
    if name != "SIGTERM":
        return
    again = start(pytester)  # the answers of the interrupted run are not asked for again
    output, _ = again.communicate(timeout=TIMEOUT_S)
    assert again.returncode == 0, output
    document = json.loads((pytester.path / "out" / "results.json").read_text())
    assert document["incomplete"] == [] and document["gates"][0]["verdict"] == "pass"
    assert len(document["records"]) == 10 and sum(r["cached"] for r in document["records"]) == answered - 1


def test_a_signal_to_the_xdist_controller_stops_its_workers_and_writes_what_was_gathered(
        pytester: pytest.Pytester) -> None:
    run = start(pytester, "-n", "2")
    output, answered = signal_after(pytester, run, 4, signal.SIGTERM)
    assert run.returncode == 2, output
    assert_marked_everywhere(pytester, output, "SIGTERM")
    assert len(started(pytester)) <= answered + 2, "a worker went on answering after the run was interrupted"


def test_a_signal_to_an_xdist_worker_interrupts_the_run_and_names_the_worker(pytester: pytest.Pytester) -> None:
    run = start(pytester, "-n", "2")
    output, _ = signal_after(pytester, run, 4, signal.SIGTERM, to_worker=True)
    assert run.returncode == 2, output
    assert_marked_everywhere(pytester, output, r"SIGTERM in worker gw[01]")
