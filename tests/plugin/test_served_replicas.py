"""Replicas for real: two `transformers serve` processes of one tiny LLaVA folder on loopback behind
one `--mllm-base-url=A,B`. The run spreads its requests over both and answers as one server does;
a replica killed in the middle of the run leaves every sample answered by the other."""

from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("openai")

from local_serve import Server, ServerDidNotStart, start_transformers_serve  # noqa: E402

from pytest_mllm.models.tiny import ensure_tiny_llava  # noqa: E402

START_TIMEOUT_S = 120
SELECTION = "img_000 or img_001 or img_002"  # 27 shapes samples: four batches of 8
SAMPLES = 27
KILL_AFTER_FIRST_TEST = '''
import os
import signal

_killed = []


def pytest_runtest_logfinish(nodeid, location):
    """Kill replica B (its process id in the environment) once the first batch is answered."""
    if not _killed:
        _killed.append(nodeid)
        os.kill(int(os.environ["REPLICA_B_PID"]), signal.SIGKILL)
'''


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[Server, Server]]:
    """Two `transformers serve` of one tiny LLaVA folder, started at once; stopped at teardown."""
    folder = ensure_tiny_llava(tmp_path / "tiny")
    roots = [tmp_path / "a", tmp_path / "b"]
    for root in roots:
        root.mkdir()
    with ThreadPoolExecutor(2) as pool:
        starts = [pool.submit(start_transformers_serve, folder, root, timeout_s=START_TIMEOUT_S,
                              extra_env={"OMP_NUM_THREADS": "1"}) for root in roots]
    servers = [start.result() for start in starts if start.exception() is None]
    try:
        for start in starts:
            error = start.exception()
            if isinstance(error, ServerDidNotStart):
                pytest.fail(str(error))
            if error is not None:
                raise error
        yield servers[0], servers[1]
    finally:
        for server in servers:
            server.stop()


def chat_requests(server: Server) -> int:
    """Chat completions the server answered, from its access log."""
    return len(re.findall(r'"POST /v1/chat/completions HTTP/1\.1" 200', server.log()))


def run(pytester: pytest.Pytester, model: str, urls: str, out: Path, *extra: str) -> list[dict[str, Any]]:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm=openai:{model}", "--mllm-bench=shapes",
                                           "-k", SELECTION, "--mllm-cache=off", "--mllm-batch-size=8",
                                           "--mllm-concurrency=2", "--mllm-max-retries=0", f"--mllm-base-url={urls}",
                                           f"--mllm-json={out}", *extra)
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    records = json.loads(out.read_text())["records"]
    assert len(records) == SAMPLES
    return sorted(records, key=lambda r: r["id"])


def test_two_served_replicas_share_the_run_and_answer_as_one_server(
        replicas: tuple[Server, Server], pytester: pytest.Pytester) -> None:
    a, b = replicas
    alone = run(pytester, a.model, a.base_url, pytester.path / "alone.json")
    assert chat_requests(a) == SAMPLES
    spread = run(pytester, a.model, f"{a.base_url},{b.base_url}", pytester.path / "spread.json")
    assert chat_requests(a) > SAMPLES and chat_requests(b) > 0  # both replicas answered some
    assert chat_requests(a) + chat_requests(b) == 2 * SAMPLES  # no request answered twice
    assert [r["status"] for r in spread if r["status"] == "error"] == []
    assert [(r["id"], r["response"]) for r in spread] == [(r["id"], r["response"]) for r in alone]
    assert {r["model"] for r in spread} == {f"openai:{a.model}"}


def test_a_replica_killed_mid_run_leaves_every_sample_answered(
        replicas: tuple[Server, Server], pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = replicas
    pytester.makepyfile(kill_replica=KILL_AFTER_FIRST_TEST)  # a plugin: the samples lie outside a conftest's folder
    monkeypatch.setenv("REPLICA_B_PID", str(b.process.pid))
    records = run(pytester, a.model, f"{a.base_url},{b.base_url}", pytester.path / "out.json", "-p", "kill_replica")
    assert b.process.wait(timeout=10) != 0  # killed by the run's conftest
    answered_by_b = chat_requests(b)
    assert answered_by_b <= 8  # B answered at most part of the first batch (none when killed first), then died
    assert chat_requests(a) == SAMPLES - answered_by_b  # A answered the rest, B's retried requests included
    assert [r["id"] for r in records if r["status"] == "error" or r["response"] is None] == []
