"""`ChatClient` against a fault injector: a real HTTP server on 127.0.0.1 that answers as scripted."""

from __future__ import annotations

import base64
import io
import json
import logging
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator

import pytest
from PIL import Image

from pytest_mllm.engine import chat as openai_client
from pytest_mllm.engine.chat import (
    ChatClient,
    ChatResult,
    EndpointError,
    EndpointUnreachable,
    MalformedResponse,
    image_content,
)
from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.models.openai import OpenAIModel
from pytest_mllm.sample import Request, Sample

SECRET = "sk-test-secret-123"
BACKOFF_S = 0.05  # the client's first wait between attempts in these tests (0.5 s by default)
Reply = tuple[int, dict[str, str], bytes]


def completion(text: str, finish_reason: str = "stop") -> Reply:
    body = {"choices": [{"index": 0, "finish_reason": finish_reason,
                         "message": {"role": "assistant", "content": text}}]}
    return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()


def status(code: int, body: str = "{}", **headers: str) -> Reply:
    return code, {"Content-Type": "application/json", **headers}, body.encode()


def last_text(body: dict[str, Any]) -> str:
    """The text part of the last message of a request body."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else next(p["text"] for p in content if p["type"] == "text")


class Backlogged(ThreadingHTTPServer):
    """A threading HTTP server with a real server's listen backlog (http.server's is 5: connections opened all
    at once beyond it wait for the client's SYN to be sent again, a second later)."""

    request_queue_size = 128


class FaultInjector:
    """A fault injector: a loopback HTTP server whose `respond(attempt, body, headers)` decides each reply.

    It records every request (time, body, headers) and the most requests it held at once.
    A handler may sleep for `delay(body)` seconds before answering.
    """

    def __init__(self) -> None:
        self.respond: Callable[[int, dict[str, Any], dict[str, str]], Reply] = lambda n, body, headers: completion("ok")
        self.delay: Callable[[dict[str, Any]], float] = lambda body: 0.0
        self.times: list[float] = []
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.max_active = 0
        self._active = 0
        self._lock = threading.Lock()
        injector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                headers = {name.title(): value for name, value in self.headers.items()}  # any case on the wire
                with injector._lock:
                    attempt = len(injector.times)
                    injector.times.append(time.monotonic())
                    injector.bodies.append(body)
                    injector.headers.append(headers)
                    injector._active += 1
                    injector.max_active = max(injector.max_active, injector._active)
                try:
                    time.sleep(injector.delay(body))
                    code, reply_headers, payload = injector.respond(attempt, body, headers)
                finally:
                    with injector._lock:
                        injector._active -= 1
                self.send_response(code)
                for name, value in reply_headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = Backlogged(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    @property
    def attempts(self) -> int:
        return len(self.times)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def injector() -> Iterator[FaultInjector]:
    server = FaultInjector()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's backoff starts at BACKOFF_S (it doubles per retry, less up to 25% jitter)."""
    monkeypatch.setattr(openai_client, "RETRY_FIRST_S", BACKOFF_S)


def client_for(injector: FaultInjector, **kwargs: Any) -> ChatClient:
    options: dict[str, Any] = {"api_key": SECRET, "timeout_s": 5, "max_retries": 4, **kwargs}
    return ChatClient(injector.url, **options)


HELLO = [{"role": "user", "content": "hello"}]


def test_a_completion_is_parsed_and_the_request_is_well_formed(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: completion(" yes ", "length")
    result = client_for(injector).chat("m1", HELLO, max_tokens=7)
    assert result.text == " yes " and result.raw_finish_reason == "length" and result.latency_s > 0
    assert injector.bodies == [{"model": "m1", "messages": HELLO, "temperature": 0.0, "max_tokens": 7}]
    assert injector.headers[0]["Authorization"] == f"Bearer {SECRET}"


def test_no_authorization_header_without_a_key(injector: FaultInjector, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    ChatClient(injector.url).chat("m", HELLO)
    assert "Authorization" not in injector.headers[0]


def test_the_base_url_falls_back_to_the_environment_but_never_the_key(injector: FaultInjector,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The client reads no key variable itself: `endpoint.api_key_for` decides (tests/unit/test_keys.py)."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert ChatClient().base_url == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")
    assert ChatClient().url == "http://127.0.0.1:9/v1/chat/completions"
    monkeypatch.setenv("OPENAI_BASE_URL", injector.url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    ChatClient().chat("m", HELLO)
    assert "Authorization" not in injector.headers[0]


def test_the_sdk_reads_nothing_else_from_the_environment(injector: FaultInjector, monkeypatch: pytest.MonkeyPatch) -> None:
    """A given key wins over $OPENAI_API_KEY; the SDK's organization and project variables are not sent."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    monkeypatch.setenv("OPENAI_ORG_ID", "org-env")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-env")
    client_for(injector).chat("m", HELLO)
    [headers] = injector.headers
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert "Openai-Organization" not in headers and "Openai-Project" not in headers


def test_without_the_openai_package_the_client_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(ImportError, match=r"pip install 'pytest-mllm\[openai\]'"):
        ChatClient("http://127.0.0.1:9/v1")


def test_the_plugin_does_not_import_openai() -> None:
    code = "import sys, pytest_mllm.plugin, pytest_mllm.engine.endpoint; assert 'openai' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://host/v1", "http://user:pw@host/v1"])
def test_unusable_base_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="base URL") as info:
        ChatClient(url)
    assert "pw" not in str(info.value)


def test_content_given_as_text_parts_is_joined(injector: FaultInjector) -> None:
    body = {"choices": [{"message": {"content": [{"type": "text", "text": "Ye"}, {"type": "text", "text": "s"}]}}]}
    injector.respond = lambda n, b, h: (200, {}, json.dumps(body).encode())
    result = client_for(injector).chat("m", HELLO)
    assert result.text == "Yes" and result.raw_finish_reason is None


@pytest.mark.parametrize("payload, match", [
    (b"<html>bad gateway</html>", "invalid JSON: <html>bad gateway</html>"),
    (b'{"choices": []}', "without choices"),
    (b'{"error": {"message": "quota"}}', "without choices"),
    (b'{"choices": [{"message": {"role": "assistant"}}]}', "without text content"),
    (b'{"choices": [{"message": {"content": null, "tool_calls": []}}]}', "without text content"),
])
def test_malformed_answers_raise_without_retry(injector: FaultInjector, payload: bytes, match: str) -> None:
    injector.respond = lambda n, body, headers: (200, {"Content-Type": "application/json"}, payload)
    with pytest.raises(MalformedResponse, match=match):
        client_for(injector).chat("m", HELLO)
    assert injector.attempts == 1


def test_a_429_storm_that_ends_is_ridden_out_with_growing_backoff(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: status(429, '{"error": "slow down"}') if n < 3 else completion("ok")
    result = client_for(injector).chat("m", HELLO)
    assert result.text == "ok" and injector.attempts == 4
    gaps = [b - a for a, b in zip(injector.times, injector.times[1:])]
    # Retry k waits BACKOFF_S * 2**k less up to 25% jitter.
    assert all(gap >= BACKOFF_S * 2**k * 0.75 for k, gap in enumerate(gaps)), gaps
    assert result.latency_s >= sum(gaps) * 0.9


def test_a_429_storm_that_never_ends_fails_after_max_retries_in_bounded_time(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: status(429, '{"error": "rate limited"}')
    start = time.monotonic()
    with pytest.raises(EndpointError, match="HTTP 429: .*rate limited") as info:
        client_for(injector, max_retries=3).chat("m", HELLO)
    assert info.value.status == 429 and injector.attempts == 4
    assert time.monotonic() - start < BACKOFF_S * (1 + 2 + 4) + 2


def test_retry_after_is_honoured_and_capped(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: status(429, **{"Retry-After": "1"}) if n == 0 else completion("ok")
    client_for(injector).chat("m", HELLO)
    assert injector.times[1] - injector.times[0] >= 0.95

    # Past the SDK's cap the hour is not waited (recent SDKs give up at once, older ones back off as usual).
    injector.respond = lambda n, body, headers: status(503, **{"Retry-After": "3600"})
    start = time.monotonic()
    with pytest.raises(EndpointError, match="HTTP 503") as info:
        client_for(injector).chat("m", HELLO)
    assert info.value.status == 503 and time.monotonic() - start < 5


@pytest.mark.parametrize("code", [500, 502, 503])
def test_a_5xx_then_success_is_retried(injector: FaultInjector, code: int) -> None:
    injector.respond = lambda n, body, headers: status(code, "oops") if n == 0 else completion("fine")
    assert client_for(injector).chat("m", HELLO).text == "fine"
    assert injector.attempts == 2


@pytest.mark.parametrize("code", [400, 401, 404, 422])
def test_other_4xx_are_not_retried(injector: FaultInjector, code: int) -> None:
    injector.respond = lambda n, body, headers: status(code, '{"error": {"message": "bad model name"}}')
    with pytest.raises(EndpointError, match=f"HTTP {code}: .*bad model name") as info:
        client_for(injector).chat("m", HELLO)
    assert info.value.status == code and injector.attempts == 1


def test_a_closed_port_is_unreachable_and_named(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with caplog.at_level(logging.INFO, logger="pytest_mllm.engine.chat"):  # the client logs its retries
        with pytest.raises(EndpointUnreachable) as info:
            ChatClient(url, SECRET, max_retries=2).chat("m", HELLO)
    message = str(info.value)
    assert f"{url}/chat/completions" in message and "--mllm-base-url" in message and "running" in message
    assert info.value.__cause__ is None and info.value.__suppress_context__
    assert len([r for r in caplog.records if "retry" in r.getMessage().lower()]) == 2


def test_a_request_past_its_deadline_is_reported_and_not_sent_again(injector: FaultInjector) -> None:
    injector.delay = lambda body: 0.5
    with pytest.raises(EndpointUnreachable, match=r"no complete answer from .* within 0.1 s \(--mllm-timeout"):
        client_for(injector, timeout_s=0.1, max_retries=1).chat("m", HELLO)
    assert injector.attempts == 1


def test_the_api_key_appears_in_no_error_log_or_repr(injector: FaultInjector,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """The fault injector echoes the Authorization header back, as some servers do in error bodies."""
    replies: list[Callable[[int, dict[str, Any], dict[str, str]], Reply]] = [
        lambda n, body, headers: status(401, json.dumps({"error": f"bad key {headers['Authorization']}"})),
        lambda n, body, headers: status(500, f"crash while serving {headers['Authorization']}"),
        lambda n, body, headers: (200, {}, f"not json {headers['Authorization']}".encode()),
        lambda n, body, headers: (200, {}, json.dumps({"echo": headers["Authorization"]}).encode()),
    ]
    client = client_for(injector, max_retries=1)
    errors: list[Exception] = []
    with caplog.at_level(logging.DEBUG):
        for reply in replies:
            injector.respond = reply
            with pytest.raises(openai_client.ChatError) as info:
                client.chat("m", HELLO)
            errors.append(info.value)
    texts = [str(e) for e in errors] + [repr(e) for e in errors] + [caplog.text, repr(client)]
    assert all("***" in str(e) for e in errors)
    assert not [t for t in texts if SECRET in t]
    assert repr(client) == f"ChatClient(base_url={injector.url!r})"


def test_chat_many_overlaps_requests_up_to_the_concurrency(injector: FaultInjector) -> None:
    injector.delay = lambda body: 0.2
    client = client_for(injector, concurrency=4)  # made first: the first one in a process imports the SDK
    start = time.monotonic()
    results = client.chat_many("m", [HELLO] * 8)
    elapsed = time.monotonic() - start
    assert all(isinstance(r, ChatResult) for r in results)
    assert injector.max_active == 4
    assert elapsed < 8 * 0.2 * 0.75, elapsed  # serial would take 1.6 s; 4 at a time about 0.4 s


def test_the_concurrency_cap_holds_across_threads(injector: FaultInjector) -> None:
    injector.delay = lambda body: 0.1
    client = client_for(injector, concurrency=2)
    threads = [threading.Thread(target=client.chat_many, args=("m", [HELLO] * 3)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert injector.attempts == 9 and injector.max_active == 2


def test_the_concurrency_cap_holds_over_several_connection_pools(injector: FaultInjector) -> None:
    """A concurrency above one pool's share is split over pools: all of it overlaps, and never more."""
    from pytest_mllm.engine.chat import POOL_SHARE

    injector.delay = lambda body: 0.6  # long enough for every connection to open on a busy machine
    concurrency = POOL_SHARE + 3
    results = client_for(injector, concurrency=concurrency).chat_many("m", [HELLO] * (2 * concurrency))
    assert all(isinstance(r, ChatResult) for r in results)
    assert injector.max_active == concurrency


def test_chats_from_greenlets_of_the_served_loop_overlap_on_one_thread(injector: FaultInjector) -> None:
    """`chat` called in greenlets of `served_loop.spawn` steps aside while it waits: the requests overlap,
    every caller runs inside the loop (on the thread that waits for them), and the cap still holds."""
    from pytest_mllm.engine import served_loop

    injector.delay = lambda body: 0.3
    client = client_for(injector, concurrency=4)

    def ask() -> tuple[str, bool]:
        return client.chat("m", HELLO).text, served_loop.on_loop_thread()

    start = time.monotonic()
    futures = [served_loop.spawn(ask) for _ in range(8)]
    outcomes = [served_loop.drive_until(future) for future in futures]
    elapsed = time.monotonic() - start
    assert outcomes == [("ok", True)] * 8
    assert injector.max_active == 4
    assert elapsed < 8 * 0.3 * 0.6, elapsed  # one after another would take 2.4 s; 4 at a time about 0.6 s


def test_chat_many_keeps_input_order_and_isolates_failures(injector: FaultInjector) -> None:
    """Later questions are answered sooner, and question 3 is refused."""
    injector.delay = lambda body: 0.05 * (8 - int(last_text(body)))
    injector.respond = lambda n, body, headers: (
        status(400, "no") if last_text(body) == "3" else completion(f"answer {last_text(body)}"))
    conversations = [[{"role": "user", "content": str(i)}] for i in range(8)]
    results = client_for(injector, concurrency=8).chat_many("m", conversations)
    assert isinstance(results[3], EndpointError) and results[3].status == 400
    assert [r.text for r in results if isinstance(r, ChatResult)] == [f"answer {i}" for i in range(8) if i != 3]
    assert injector.attempts == 8


def test_chat_many_of_nothing_sends_nothing(injector: FaultInjector) -> None:
    assert client_for(injector).chat_many("m", []) == [] and injector.attempts == 0


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "P", "CMYK"])
def test_image_content_is_a_png_data_url(mode: str) -> None:
    image = Image.new(mode, (7, 5))
    part = image_content(image)
    assert part["type"] == "image_url"
    prefix, data = part["image_url"]["url"].split(",", 1)
    assert prefix == "data:image/png;base64"
    decoded = Image.open(io.BytesIO(base64.b64decode(data)))
    assert decoded.format == "PNG" and decoded.size == (7, 5)


def _requests(*specs: tuple[str, int, int]) -> list[Request]:
    """Requests from (prompt, number of images, max_new_tokens)."""
    sample = Sample(id="s", benchmark="b", task="t", question="q", answer="yes")
    return [Request(sample, prompt, [Image.new("RGB", (4, 4))] * images, tokens) for prompt, images, tokens in specs]


def test_openai_model_sends_images_then_prompt_with_each_token_limit(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: completion(f" {last_text(body)}! ")
    model = OpenAIModel("vlm", Endpoint(injector.url, SECRET))
    responses = model.generate(_requests(("a", 2, 8), ("b", 0, 3), ("c", 1, 8)))
    assert [r.text for r in responses] == ["a!", "b!", "c!"] and all(r.latency_s > 0 for r in responses)
    sent = {last_text(body): body for body in injector.bodies}
    assert {k: (b["max_tokens"], b["temperature"], b["model"]) for k, b in sent.items()} == {
        "a": (8, 0.0, "vlm"), "b": (3, 0.0, "vlm"), "c": (8, 0.0, "vlm")}
    [message] = sent["a"]["messages"]
    assert message["role"] == "user" and [p["type"] for p in message["content"]] == ["image_url", "image_url", "text"]
    assert message["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert model.name == "openai:vlm" and model.identity == f"openai:vlm@{injector.url}"
    assert SECRET not in repr(model) and model.generate([]) == []


def test_openai_model_confines_a_failed_call_to_its_request(injector: FaultInjector) -> None:
    injector.delay = lambda body: 0.2 if last_text(body) == "slow" else 0.0
    injector.respond = lambda n, body, headers: (
        status(400, "refused") if last_text(body).startswith("bad") else completion("ok"))
    model = OpenAIModel("vlm", Endpoint(injector.url, SECRET))
    responses = model.generate(_requests(("bad", 0, 8), ("slow", 0, 8), ("bad too", 0, 8), ("fine", 0, 8)))
    assert [r.text for r in responses] == ["", "ok", "", "ok"]
    assert [r.error is not None and "HTTP 400" in r.error for r in responses] == [True, False, True, False]
    assert all(SECRET not in (r.error or "") for r in responses)
    assert injector.attempts == 4  # each call once: the good ones are not asked again


def test_openai_model_fails_fast_when_nothing_listens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    start = time.monotonic()
    with pytest.raises(EndpointUnreachable, match=f"127.0.0.1:{port}"):
        OpenAIModel("vlm", Endpoint(f"http://127.0.0.1:{port}/v1", SECRET))
    assert time.monotonic() - start < 5


def test_the_request_body_is_the_one_the_sdks_create_sends(injector: FaultInjector) -> None:
    """The client posts the request `create` sends: the same keys, in the same order, and the same headers."""
    import openai

    messages = [{"role": "user", "content": [image_content(Image.new("RGB", (4, 4))), {"type": "text", "text": "Q?"}]}]
    client_for(injector).chat("m1", messages, max_tokens=7)
    openai.OpenAI(base_url=injector.url, api_key="x", max_retries=0).chat.completions.create(
        model="m1", messages=messages, temperature=0.0, max_tokens=7)  # type: ignore[arg-type]
    ours, sdks = injector.bodies
    assert json.dumps(ours) == json.dumps(sdks)  # key order included
    # the SDK's headers (its HTTP client's own, such as Accept-Encoding, are the bounded client's choice)
    ours_sdk, sdks_sdk = ({k: v for k, v in headers.items() if k.startswith(("Accept", "Content-Type", "User-Agent",
                                                                            "X-Stainless"))}
                          for headers in injector.headers)
    assert ours_sdk.pop("X-Stainless-Read-Timeout") == "5" and sdks_sdk.pop("X-Stainless-Read-Timeout")  # its timeout, 600 s
    ours_sdk.pop("Accept-Encoding"), sdks_sdk.pop("Accept-Encoding")
    assert ours_sdk == sdks_sdk and "X-Stainless-Retry-Count" in ours_sdk


def test_openai_model_answers_one_request_and_confines_its_failure(injector: FaultInjector) -> None:
    injector.respond = lambda n, body, headers: status(400, "refused") if n == 0 else completion(" fine ")
    model = OpenAIModel("vlm", Endpoint(injector.url, SECRET, max_retries=0))
    [failed] = model.generate(_requests(("a", 1, 8)))
    [answered] = model.generate(_requests(("b", 1, 5)))
    assert failed.text == "" and failed.error is not None and "HTTP 400" in failed.error
    assert answered.text == "fine" and answered.error is None
    assert [b["max_tokens"] for b in injector.bodies] == [8, 5]
