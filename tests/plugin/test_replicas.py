"""Several replicas of one served model (`--mllm-base-url=A,B,C`): requests spread over them, a dead or
failing replica's requests go to the others, answers are cached under the first URL."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
from typing import Any

import pytest

pytest.importorskip("openai")

from chat_stub import ChatStub  # noqa: E402

from pytest_mllm.engine.chat import ReplicaClient  # noqa: E402
from pytest_mllm.engine.endpoint import Endpoint  # noqa: E402
from pytest_mllm.models.openai import OpenAIModel  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402


def dead_url() -> str:
    """A loopback URL nothing listens at."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def requests(n: int) -> list[Request]:
    sample = Sample(id="s", benchmark="b", task="t", question="Q?", answer="yes")
    return [Request(sample, f"question {i}", [], max_new_tokens=4) for i in range(n)]


def echo(body: dict[str, Any]) -> str:
    return "answer to " + body["messages"][0]["content"][-1]["text"]


def test_a_dead_and_a_failing_replica_leave_every_sample_answered() -> None:
    with ChatStub(echo) as good, ChatStub(lambda body: None) as failing:  # failing: HTTP 500 always
        endpoint = Endpoint(good.base_url, None, max_retries=0, concurrency=2,
                            replicas=(dead_url(), failing.base_url))
        model = OpenAIModel("m", endpoint)
        assert isinstance(model.client, ReplicaClient)
        batch = requests(24)
        responses = model.generate(batch)
        assert [r.error for r in responses] == [None] * 24
        assert [r.text for r in responses] == [f"answer to question {i}" for i in range(24)]
        assert good.calls == 24  # every request ends on the live replica
        assert model.client.answered == [24, 0, 0]
        assert model.identity == f"openai:m@{good.base_url}"


def test_a_request_fails_only_when_every_replica_fails() -> None:
    with ChatStub(lambda body: None) as one, ChatStub(lambda body: None) as two:
        model = OpenAIModel("m", Endpoint(one.base_url, None, max_retries=0, replicas=(two.base_url,)))
        [response] = model.generate(requests(1))
        assert response.error is not None and "HTTP 500" in response.error
        assert one.calls == 1 and two.calls == 1  # each replica tried once


def test_no_reachable_replica_is_one_clear_error() -> None:
    with pytest.raises(Exception, match="no replica is reachable"):
        OpenAIModel("m", Endpoint(dead_url(), None, replicas=(dead_url(),)))


def test_requests_spread_over_replicas_and_run_faster() -> None:
    def slow(body: dict[str, Any]) -> str:
        time.sleep(0.05)  # a server that overlaps requests, 50 ms each
        return "yes"

    batch = requests(96)
    with ChatStub(slow) as a, ChatStub(slow) as b, ChatStub(slow) as c:
        timings = {}
        for label, endpoint in (("1 replica", Endpoint(a.base_url, None, concurrency=4)),
                                ("3 replicas", Endpoint(a.base_url, None, concurrency=4,
                                                        replicas=(b.base_url, c.base_url)))):
            model = OpenAIModel("m", endpoint)
            start = time.perf_counter()
            assert all(r.error is None for r in model.generate(batch))
            timings[label] = time.perf_counter() - start
        assert b.calls >= 20 and c.calls >= 20  # spread, not all on the first
    speedup = timings["1 replica"] / timings["3 replicas"]
    print(f"\n96 requests, 50 ms each, --mllm-concurrency=4: 1 replica {timings['1 replica']:.2f}s, "
          f"3 replicas {timings['3 replicas']:.2f}s, speed-up {speedup:.2f}x")
    assert speedup > 1.8


def test_the_plugin_spreads_over_replicas_and_caches_under_the_first_url(pytester: pytest.Pytester) -> None:
    with ChatStub(lambda body: "yes") as a, ChatStub(lambda body: "yes") as b:
        cache_dir = pytester.path / "cache"
        common = ["-p", "no:cacheprovider", "--mllm=openai:m", "--mllm-bench=shapes", "-k", "img_000 or img_001",
                  f"--mllm-cache-dir={cache_dir}", "--mllm-max-retries=0"]
        out = pytester.path / "out.json"
        result = pytester.runpytest_subprocess(*common, f"--mllm-base-url={a.base_url},{dead_url()}",
                                               f"--mllm-base-url={b.base_url}", f"--mllm-json={out}")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        records = json.loads(out.read_text())["records"]
        assert len(records) == 18 and all(r["status"] != "error" for r in records)
        assert a.calls > 0 and b.calls > 0 and a.calls + b.calls == 18
        with sqlite3.connect(cache_dir / "responses.sqlite3") as db:
            assert {row[0] for row in db.execute("SELECT model FROM responses")} == {f"openai:m@{a.base_url}"}
        # the first URL alone: every answer replays from the cache, whichever replica gave it
        again = pytester.runpytest_subprocess(*common, f"--mllm-base-url={a.base_url}", f"--mllm-json={out}")
        assert again.ret == pytest.ExitCode.OK, again.stdout.str()
        assert a.calls + b.calls == 18
        assert all(r["cached"] for r in json.loads(out.read_text())["records"])


@pytest.mark.parametrize("args, message", [
    (["--mllm-base-url=http://127.0.0.1:9/v1,http://127.0.0.1:9/v1"], "*--mllm-base-url: the same base URL is given twice*"),
    (["--mllm-base-url=http://127.0.0.1:9/v1", "--mllm-base-url=ftp://x"], "*--mllm-base-url: the base URL must look like*"),
    (["--mllm-judge=openai:j", "--mllm-judge-base-url=http://127.0.0.1:9/v1,http://127.0.0.1:8/v1"],
     "*--mllm-judge-base-url: one URL only*"),
])
def test_bad_replica_lists_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=openai:m", "--mllm-bench=shapes", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
