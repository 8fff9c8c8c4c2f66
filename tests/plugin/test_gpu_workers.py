"""One xdist worker per GPU, bound through the worker's environment; a crashed worker loses only
its in-flight sample and its replacement keeps the GPU. (Runs on CPU: only the binding is checked.)"""

from __future__ import annotations

import collections
import json

import pytest

WHERE = """
    import os, signal
    from pytest_mllm.sample import Response

    class WhereAmI:
        '''Answers with the GPUs its process may see; kills its own process on one sample (fault injector).'''
        name = "where"
        needs_images = False

        def generate(self, requests):
            for r in requests:
                if r.sample.id == os.environ.get("KILL_ON") and not os.path.exists("killed.flag"):
                    open("killed.flag", "w").close()
                    os.kill(os.getpid(), signal.SIGKILL)
            return [Response(os.environ.get("CUDA_VISIBLE_DEVICES", "unset")) for _ in requests]

    def pytest_mllm_make_model(spec, config):
        return WhereAmI() if spec == "where" else None
"""


def _answers(pytester: pytest.Pytester, *args: str) -> collections.Counter:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=where", "--mllm-bench=shapes",
                                           f"--mllm-json={out}", *args)
    assert result.ret in (0, 1), result.stdout.str()
    return collections.Counter(r["response"] for r in json.loads(out.read_text())["records"])


FEW = ("-k", "img_000 or img_001")  # 18 samples: every worker gets some


def test_each_worker_is_bound_to_its_gpu(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(WHERE)
    assert set(_answers(pytester, *FEW, "-n", "2", "--mllm-gpus=0,1")) == {"0", "1"}
    assert set(_answers(pytester, *FEW, "-n", "auto", "--mllm-gpus=0,1,2,3", "--mllm-gpus-per-worker=2")) == {"0,1", "2,3"}


def test_n_auto_is_one_worker_per_gpu_group_whatever_the_cpu_count(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """-n auto counts GPU groups, not cores (xdist's own answer, the core count, must not win: on a
    16-core machine with one GPU it asked for 16 workers); PYTEST_XDIST_AUTO_NUM_WORKERS still rules."""
    pytester.makeconftest(WHERE)
    # the plugin registered before xdist (as where its package comes first on the path) is asked after it
    assert set(_answers(pytester, *FEW, "-p", "no:mllm", "-p", "pytest_mllm.plugin", "-n", "auto",
                        "--mllm-gpus=0")) == {"0"}
    assert set(_answers(pytester, *FEW, "-n", "auto", "--mllm-gpus=0,1,2")) == {"0", "1", "2"}
    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", "1")
    assert set(_answers(pytester, *FEW, "-n", "auto", "--mllm-gpus=0,1")) == {"0"}


def test_more_workers_than_gpus_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--mllm=baseline:yes", "--mllm-bench=shapes", "-n", "3", "--mllm-gpus=0,1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*-n 3 asks for more workers than GPU groups (2: 0 | 1); use -n 2 or -n auto*"])
    result = pytester.runpytest_subprocess("--mllm=baseline:yes", "--mllm-bench=shapes", "--mllm-gpus=0,x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid --mllm-gpus '0,x'*"])


def test_a_killed_worker_loses_nothing_and_its_in_flight_sample_is_an_error(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(WHERE)
    monkeypatch.setenv("KILL_ON", "count::img_005.png::q1")
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=where", "--mllm-bench=shapes",
                                           "-n", "2", "--mllm-gpus=0,1", "--mllm-batch-size=1", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*worker*crashed while running*count::img_005.png::q1*"])
    records = json.loads(out.read_text())["records"]
    assert len(records) == 360  # every finished sample is reported, and the in-flight one as an error
    crashed = [r for r in records if r["status"] == "error"]
    assert [r["id"] for r in crashed] == ["count::img_005.png::q1"] and "died" in crashed[0]["error"]
    answered = [r for r in records if r["status"] != "error"]
    assert {r["response"] for r in answered} == {"0", "1"}  # the replacement worker kept its GPU
