"""A served model under server faults: requests stay in flight across tests, a hung or garbage
replica is set aside (for longer at each failure in a row) and its requests go to another, and a
served model's cache key holds what its server says of it and the revision the user states.

The faulty servers are `chat_stub.ChatStub`, a fake on purpose: a real server cannot be told to
hang or to answer garbage on demand. Speed is measured by scripts/served_faults.py, not here.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

pytest.importorskip("openai")

from chat_stub import ChatStub  # noqa: E402

from pytest_mllm.engine import chat  # noqa: E402
from pytest_mllm.engine.endpoint import Endpoint  # noqa: E402
from pytest_mllm.models.openai import OpenAIModel  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def jsonl_bench(folder: Path, samples: int) -> Path:
    """A yes/no JSONL benchmark of `samples` rows sharing one small PNG; returns its spec."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "ok.png").write_bytes((FIXTURES / "bad" / "ok.png").read_bytes())
    rows = [{"id": f"s{n}", "image": "ok.png", "question": f"Red? ({n})", "answer": "yes"} for n in range(samples)]
    (data / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = folder / "mine.yaml"
    spec.write_text("name: mine\nloader: jsonl\nparser: mme\ndata: {root: data, file: b.jsonl}\n")
    return spec


def requests(n: int) -> list[Request]:
    sample = Sample(id="s", benchmark="b", task="t", question="Q?", answer="yes")
    return [Request(sample, f"question {i}", [], max_new_tokens=4) for i in range(n)]


def echo(body: dict[str, Any]) -> str:
    return "answer to " + body["messages"][0]["content"][-1]["text"]


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """Set at teardown: a hung stub's handlers return then (ChatStub joins them when it closes)."""
    event = threading.Event()
    yield event
    event.set()


def test_a_hung_replica_is_left_behind_after_the_patience_and_every_request_answered(
        monkeypatch: pytest.MonkeyPatch, released: threading.Event) -> None:
    monkeypatch.setattr(chat, "PATIENCE_FLOOR_S", 0.5)

    def hang(body: dict[str, Any]) -> str:
        released.wait(60)  # accepts the request, never answers while the test runs
        return "too late"

    with ChatStub(echo) as good, ChatStub(hang) as hung:
        model = OpenAIModel("m", Endpoint(hung.base_url, None, concurrency=4, replicas=(good.base_url,)))
        responses = model.generate(requests(12))
        answered = list(model.client.answered)
        released.set()
    assert [r.error for r in responses] == [None] * 12
    assert [r.text for r in responses] == [f"answer to question {i}" for i in range(12)]  # none "too late"
    assert answered == [0, 12]
    assert hung.calls <= 4  # the requests sent before it was found slow, none after


def test_a_replica_answering_200_with_garbage_is_set_aside() -> None:
    with ChatStub(echo) as good, ChatStub(lambda body: {"object": "error", "message": "overloaded"}) as garbage:
        model = OpenAIModel("m", Endpoint(garbage.base_url, None, concurrency=2, max_retries=0,
                                          replicas=(good.base_url,)))
        responses = model.generate(requests(20))
    assert [r.error for r in responses] == [None] * 20
    assert garbage.calls <= 2 and good.calls == 20  # set aside at its first garbage; each of its requests sent on


def test_a_failing_replica_is_set_aside_longer_at_each_failure_in_a_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat, "BACKOFF_FIRST_S", 1.0)
    with ChatStub(echo) as good, ChatStub(lambda body: None) as failing:
        model = OpenAIModel("m", Endpoint(failing.base_url, None, concurrency=1, max_retries=0,
                                          replicas=(good.base_url,)))
        client = model.client

        def calls_to_failing(n: int) -> int:
            before = failing.calls
            for request in requests(n):
                assert client.chat("m", model.messages(request)).text.startswith("answer to")
            return failing.calls - before

        assert calls_to_failing(4) == 1  # tried first, set aside for 1 s
        time.sleep(1.2)
        assert calls_to_failing(4) == 1  # back: one request at a time, which fails: aside for 2 s now
        time.sleep(1.2)
        assert calls_to_failing(4) == 0  # still aside
        time.sleep(1.0)
        assert calls_to_failing(4) == 1


def test_requests_stay_in_flight_across_tests(pytester: pytest.Pytester) -> None:
    """Batch size 1, concurrency 4: the server sees 4 requests at once (a batch at a time, it saw 1)."""
    lock, state = threading.Lock(), {"now": 0, "most": 0}

    def slow(body: dict[str, Any]) -> str:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return "yes"

    out = pytester.path / "out.json"
    with ChatStub(slow) as server:
        result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=openai:m",
                                    f"--mllm-bench={jsonl_bench(pytester.path, 6)}", "--mllm-batch-size=1",
                                    "--mllm-concurrency=4", "--mllm-cache=off", f"--mllm-base-url={server.base_url}",
                                    f"--mllm-json={out}")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    records = json.loads(out.read_text())["records"]
    assert len(records) == 6 and all(r["status"] != "error" for r in records)
    assert state["most"] == 4


def test_xdist_workers_share_the_concurrency_and_the_cache(pytester: pytest.Pytester) -> None:
    """Two workers, concurrency 3: never more than 3 requests in flight between them (2 + 1), every sample
    answered once; the re-run is answered from the cache they share, asking nothing."""
    lock, state = threading.Lock(), {"now": 0, "most": 0, "calls": 0}

    def slow(body: dict[str, Any]) -> str:
        with lock:
            state["now"] += 1
            state["calls"] += 1
            state["most"] = max(state["most"], state["now"])
        time.sleep(0.05)
        with lock:
            state["now"] -= 1
        return "yes"

    spec = jsonl_bench(pytester.path, 40)
    with ChatStub(slow) as server:
        def run(out: Path) -> list[dict[str, Any]]:
            result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "--mllm=openai:m",
                                                   f"--mllm-bench={spec}", "--mllm-concurrency=3",
                                                   f"--mllm-base-url={server.base_url}", f"--mllm-json={out}",
                                                   f"--mllm-cache-dir={pytester.path / 'cache'}")
            assert result.ret == pytest.ExitCode.OK, result.stdout.str()
            return json.loads(out.read_text())["records"]

        first = run(pytester.path / "first.json")
        assert state["calls"] == 40 and 2 <= state["most"] <= 3
        again = run(pytester.path / "again.json")
    assert state["calls"] == 40  # nothing asked again
    assert sorted(r["id"] for r in first) == sorted(r["id"] for r in again) and len(first) == 40
    assert all(r["cached"] for r in again) and not any(r["cached"] for r in first)
    assert all(r["status"] == "correct" for r in first + again)


def test_the_served_identity_holds_the_servers_model_entry_and_the_stated_revision() -> None:
    entry = {"id": "m", "object": "model", "owned_by": "me", "root": "/ckpt/step-1000", "created": 1}
    with ChatStub(echo) as server:
        def identity(**settings: Any) -> str:
            return OpenAIModel("m", Endpoint(server.base_url, None, **settings)).identity

        assert identity() == f"openai:m@{server.base_url}"  # the server lists nothing (HTTP 404)
        server.models = [{"id": "other", "root": "/x"}, entry]
        listed = identity()
        assert listed.startswith(f"openai:m@{server.base_url}#server=")
        server.models = [{**entry, "created": 2, "status": {"value": "loaded"}, "permission": [{"id": "p-9"}]}]
        assert identity() == listed  # fields that change between calls are left out
        server.models = [{**entry, "root": "/ckpt/step-2000"}]  # a new checkpoint under the same name
        assert identity() != listed
        assert identity(model_revision="v2") == f"{identity()}".replace("#server=", "#revision=v2#server=")


def test_a_new_checkpoint_or_revision_is_not_answered_from_the_cache(pytester: pytest.Pytester) -> None:
    calls = {"n": 0}

    def counting(body: dict[str, Any]) -> str:
        calls["n"] += 1
        return "yes"

    spec = jsonl_bench(pytester.path, 2)

    def run(server: ChatStub, *extra: str) -> int:
        before = calls["n"]
        result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=openai:m", f"--mllm-bench={spec}",
                                    f"--mllm-base-url={server.base_url}",
                                    f"--mllm-cache-dir={pytester.path / 'cache'}", *extra)
        assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
        return calls["n"] - before

    with ChatStub(counting) as server:
        server.models = [{"id": "m", "owned_by": "me", "root": "/ckpt/step-1000"}]
        assert run(server) == 2  # two samples, asked
        assert run(server) == 0  # the same deployment: answered from the cache
        server.models = [{"id": "m", "owned_by": "me", "root": "/ckpt/step-2000"}]
        assert run(server) == 2  # what the server says of the model changed
        assert run(server, "--mllm-model-revision=2026-11-25") == 2
        assert run(server, "--mllm-model-revision=2026-11-25") == 0
