"""A server's answer is bounded (`engine/bounded_http.py`, `engine/chat.py`): the whole request has one
deadline, an answer at most MAX_ANSWER_BYTES received and decompressed, and a server that answers
nothing is hung, so a client without replicas stops asking it.

The servers are raw sockets on 127.0.0.1 writing what a faulty server writes (trickled headers or
bodies, a gzip bomb, an endless chunked body): a fake on purpose, as no real server does these on
demand. A healthy answer, compressed or not, comes through unchanged.
"""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

pytest.importorskip("openai")

from pytest_mllm.engine import bounded_http  # noqa: E402
from pytest_mllm.engine.chat import ChatClient, EndpointUnreachable, MalformedResponse  # noqa: E402

HELLO = [{"role": "user", "content": "hello"}]
Handler = Callable[[socket.socket], None]


def completion_body(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}]}).encode()


def head(status: str = "200 OK", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *(f"{name.replace('_', '-')}: {value}" for name, value in headers.items()), "", ""]
    return "\r\n".join(lines).encode()


@contextmanager
def raw_server(handle: Handler) -> Iterator[tuple[str, list[float]]]:
    """A loopback server calling `handle(connection)` once each request's head and body are read; yields the
    base URL and the times requests came (the handler's thread is released when the block ends)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stopped = threading.Event()
    times: list[float] = []

    def serve(conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            header, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in header.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            while len(body) < length:
                body += conn.recv(65536)
            times.append(time.monotonic())
            try:
                handle(conn)
            except OSError:
                pass

    def accept() -> None:
        listener.settimeout(0.1)
        while not stopped.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1", times
    finally:
        stopped.set()
        thread.join()
        listener.close()


def trickle(prefix: bytes, every_s: float = 0.1, seconds: float = 10.0) -> Handler:
    """Send `prefix`, then a byte every `every_s` for `seconds`."""
    def handle(conn: socket.socket) -> None:
        conn.sendall(prefix)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(every_s)
            conn.sendall(b"x")
    return handle


def answer(body: bytes, **headers: str) -> Handler:
    def handle(conn: socket.socket) -> None:
        conn.sendall(head(**{"Content-Type": "application/json", "Content-Length": str(len(body)), **headers}) + body)
    return handle


def client(url: str, **options: object) -> ChatClient:
    return ChatClient(url, None, **{"timeout_s": 1.0, "max_retries": 0, **options})  # type: ignore[arg-type]


@pytest.mark.parametrize("handler", [
    trickle(head(**{"Content-Type": "application/json", "Content-Length": "100000"}) + b'{"choices": '),
    trickle(b"HTTP/1.1 200 OK\r\nX-Slow: "),
], ids=["a body", "the headers"])
def test_a_trickling_server_is_bounded_by_the_deadline_of_the_whole_request(handler: Handler) -> None:
    with raw_server(handler) as (url, times):
        start = time.monotonic()
        with pytest.raises(EndpointUnreachable, match=r"no complete answer from .* within 1 s \(--mllm-timeout"):
            client(url, max_retries=3).chat("m", HELLO)
        took = time.monotonic() - start
    assert 0.9 < took < 3, took  # one deadline: a byte every 0.1 s never trips a per-read timeout
    assert len(times) == 1  # a request that had its whole deadline is not sent again


def test_a_gzip_bomb_is_refused_at_the_limit_without_inflating_it_whole() -> None:
    decoded = 200 * 2**20  # 200 MiB of spaces inside a completion: about 200 kB compressed
    payload = gzip.compress(b'{"choices": [{"message": {"content": "' + b" " * decoded + b'"}}]}', compresslevel=9)
    with raw_server(answer(payload, **{"Content-Encoding": "gzip"})) as (url, _):
        chat = client(url, timeout_s=30)
        tracemalloc.start()
        try:
            with pytest.raises(MalformedResponse, match="answered more than 16 MiB once decompressed: an answer may "
                                                        "take at most 16 MiB"):
                chat.chat("m", HELLO)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 3 * bounded_http.MAX_ANSWER_BYTES, peak  # what was kept before the refusal, not 200 MiB


def test_an_endless_chunked_body_is_refused_at_the_limit() -> None:
    def endless(conn: socket.socket) -> None:
        conn.sendall(head(**{"Content-Type": "application/json", "Transfer-Encoding": "chunked"}))
        chunk = b" " * 2**20
        while True:
            conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")

    with raw_server(endless) as (url, times):
        start = time.monotonic()
        with pytest.raises(MalformedResponse, match="answered more than 16 MiB: an answer may take at most 16 MiB"):
            client(url, timeout_s=30, max_retries=2).chat("m", HELLO)
        assert time.monotonic() - start < 20 and len(times) == 1  # refused, not asked again


@pytest.mark.parametrize("encoding, compress", [
    ("gzip", gzip.compress), ("deflate", zlib.compress),
    ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
    ("identity", lambda data: data)])
def test_a_compressed_answer_within_the_limit_is_read(encoding: str, compress: Callable[[bytes], bytes]) -> None:
    with raw_server(answer(compress(completion_body("yes " * 1000)), **{"Content-Encoding": encoding})) as (url, _):
        assert client(url).chat("m", HELLO).text == "yes " * 1000


def test_an_unknown_content_encoding_is_refused_with_its_name() -> None:
    with raw_server(answer(b"\x00" * 40, **{"Content-Encoding": "br"})) as (url, _):
        with pytest.raises(MalformedResponse, match="content encoding 'br', which is not read here"):
            client(url).chat("m", HELLO)


def test_a_hung_server_without_replicas_costs_one_deadline_then_fails_the_rest_at_once() -> None:
    released = threading.Event()
    with raw_server(lambda conn: released.wait(30)) as (url, times):
        chat = client(url, concurrency=2)
        start = time.monotonic()
        outcomes = chat.chat_many("m", [HELLO] * 6)
        took = time.monotonic() - start
        released.set()
    assert took < 2.5, took  # two requests wait their deadline together; the four others are not sent
    assert len(times) == 2
    assert all(isinstance(o, EndpointUnreachable) for o in outcomes)
    assert "not sent: " in str(outcomes[-1]) and "taken as hung" in str(outcomes[-1])


def test_a_hung_server_that_answers_again_is_asked_again() -> None:
    replies = iter([None, completion_body("back")])  # the first request hangs, the next is answered

    def handle(conn: socket.socket) -> None:
        body = next(replies)
        if body is None:
            time.sleep(1.5)
            return
        answer(body)(conn)

    with raw_server(handle) as (url, _):
        chat = client(url)
        with pytest.raises(EndpointUnreachable, match="within 1 s"):
            chat.chat("m", HELLO)
        with pytest.raises(EndpointUnreachable, match="taken as hung"):
            chat.chat("m", HELLO)
        chat._answered()  # what any answer of the server does (one still in flight, say)
        assert chat.chat("m", HELLO).text == "back"


def test_a_lone_surrogate_in_an_answer_becomes_a_replacement_character() -> None:
    body = b'{"choices": [{"message": {"content": "yes \\ud800 and \\ud83d\\ude00"}, "finish_reason": "stop"}]}'
    with raw_server(answer(body)) as (url, _):
        assert client(url).chat("m", HELLO).text == "yes \ufffd and \U0001f600"


def test_the_bounded_client_is_made_in_a_process_that_made_no_http_client_before() -> None:
    """httpx imports its httpcore only when it makes a transport: the bounded client still finds both."""
    import subprocess
    import sys

    script = ("import sys\nfrom pytest_mllm.engine.bounded_http import bounded_http_client\n"
              "assert not [m for m in sys.modules if m.startswith('httpcore')]\n"
              "bounded_http_client('http://127.0.0.1:9/v1', connections=2)\nprint('made')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["made"], done.stderr[-2000:]
