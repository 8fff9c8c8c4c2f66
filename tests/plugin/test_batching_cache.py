"""Throughput: tests stay one per sample while the model answers in batches; answers are cached
on disk so a re-run or a killed run never redoes finished work; a failing batch is halved."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

PROBE = """
    import collections, json, os
    from pytest_mllm.sample import Response

    SIZES = []

    class BatchProbe:
        '''Answers "Yes" and notes each batch's size (a probe, not a model under test).'''
        name = "probe"
        needs_images = True
        identity = "probe-v1"

        def generate(self, requests):
            SIZES.append(len(requests))
            if os.environ.get("OOM_ABOVE") and len(requests) > int(os.environ["OOM_ABOVE"]):
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB (fault injector)")
            if any(r.sample.id == os.environ.get("ALWAYS_OOM") for r in requests):
                raise RuntimeError("CUDA out of memory (fault injector, this sample never fits)")
            return [Response("Yes") for _ in requests]

    def pytest_mllm_make_model(spec, config):
        return BatchProbe() if spec == "probe" else None

    def pytest_sessionfinish(session):
        with open(f"sizes-{os.getpid()}.json", "w") as f:
            json.dump(SIZES, f)
"""


def _sizes(pytester: pytest.Pytester) -> list[int]:
    found: list[int] = []
    for path in sorted(pytester.path.glob("sizes-*.json")):
        found += json.loads(path.read_text())
        path.unlink()
    return found


@pytest.mark.parametrize("workers", ["0", "2"])
def test_samples_are_generated_in_batches(pytester: pytest.Pytester, workers: str) -> None:
    pytester.makeconftest(PROBE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", workers, "--mllm=probe",
                                           "--mllm-bench=shapes", "--mllm-batch-size=8", "--mllm-cache=off")
    result.assert_outcomes(passed=160)  # "Yes" is right for the 160 first questions of the pairs
    sizes = _sizes(pytester)
    assert sum(sizes) == 360
    assert sizes.count(8) >= 36  # most batches are full; only each worker's tail is shorter


def test_a_failing_batch_is_halved_and_one_sample_that_never_fits_errors_alone(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE)
    env = {"OOM_ABOVE": "2", "ALWAYS_OOM": "existence::img_001.png::q1"}
    os.environ.update(env)
    try:
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=probe", "--mllm-bench=shapes",
                                               "-k", "existence", "--mllm-batch-size=8", "--mllm-cache=off")
    finally:
        for key in env:
            del os.environ[key]
    result.stdout.fnmatch_lines(["*ERROR*existence::img_001.png::q1*", "*39 passed*1 error*40 incorrect*"])
    sizes = _sizes(pytester)
    assert sizes[:3] == [8, 4, 2]  # halved until it fits


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.skipif(not __import__("importlib").util.find_spec("transformers"), reason="needs the hf extra")
def test_greedy_answers_do_not_depend_on_batch_size_and_a_cached_rerun_loads_no_model(
        pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import sys
        def pytest_sessionfinish(session):
            with open("modules.txt", "w") as f:
                f.write(" ".join(m for m in ("torch", "transformers") if m in sys.modules))
    """)
    common = ("-p", "no:cacheprovider", "--mllm=tiny-llava", "--mllm-bench=shapes", "-k", "img_00")
    one = pytester.runpytest_subprocess(*common, "--mllm-batch-size=1", "--mllm-cache=off", "--mllm-json=b1.json")
    eight = pytester.runpytest_subprocess(*common, "--mllm-batch-size=8", "--mllm-json=b8.json")
    assert one.ret == eight.ret == 0
    answers = {n: [(r["id"], r["response"]) for r in _json(pytester.path / f"b{n}.json")["records"]] for n in (1, 8)}
    assert answers[1] == answers[8] and len(answers[1]) == 90
    again = pytester.runpytest_subprocess(*common, "--mllm-json=again.json")
    assert again.ret == 0
    records = _json(pytester.path / "again.json")["records"]
    assert all(r["cached"] for r in records)
    assert [(r["id"], r["response"]) for r in records] == answers[8]
    assert (pytester.path / "modules.txt").read_text() == ""  # neither torch nor transformers was imported
    refresh = pytester.runpytest_subprocess(*common, "--mllm-cache=refresh", "--mllm-json=refresh.json")
    assert refresh.ret == 0 and not any(r["cached"] for r in _json(pytester.path / "refresh.json")["records"])


@pytest.mark.skipif(not __import__("importlib").util.find_spec("transformers"), reason="needs the hf extra")
def test_a_run_killed_with_sigkill_resumes_without_redoing_work(pytester: pytest.Pytester) -> None:
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--mllm=tiny-llava", "--mllm-bench=shapes",
            "--mllm-batch-size=2"]
    cache = pytester.path / ".mllm_cache" / "responses.sqlite3"
    run = subprocess.Popen(args, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    done_before_kill = 0
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.5)
        if cache.exists():
            try:
                done_before_kill = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
            except sqlite3.OperationalError:
                continue
            if done_before_kill >= 40:
                break
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert 40 <= done_before_kill < 360, "the run finished before it could be killed"
    db = sqlite3.connect(cache)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    db.close()
    resumed = subprocess.run([*args, "--mllm-json=resumed.json"], cwd=pytester.path, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stdout[-2000:]
    records = _json(pytester.path / "resumed.json")["records"]
    assert len(records) == 360
    assert sum(r["cached"] for r in records) == stored  # every finished answer was reused, none redone
