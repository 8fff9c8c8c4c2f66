"""A loopback OpenAI-compatible server cheap enough never to be the limit, and a load generator that
checks it alone.

`LoopbackServer` runs `python scripts/served_perf.py _server PORTFILE` in a process of its own:
an asyncio protocol (HTTP/1.1 with keep-alive, no framework) answering any POST with a chat
completion whose text is "Yes" or "No" by the parity of the request body's sha256, so that the
answers follow from the requests and nothing else. It keeps, since its last reset, the digest of
every request body, the time the first request arrived and the last answer left, and its own CPU
time. `GET /stats` returns them (the digests as one sha256 over their sorted list: two runs sent
the same requests exactly when their digests agree) and `GET /reset` starts afresh.
`GET /v1/models` lists the model.

`blast` is the load generator: a process of raw asyncio streams sending one canned request on
`connections` keep-alive connections for `seconds`, counting the answers: the server's rate alone.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

MODEL = "perf-served"
_HEAD_END = b"\r\n\r\n"
START_TIMEOUT_S = 30.0


def _completion(text: str) -> bytes:
    body = json.dumps({"id": "chatcmpl-perf", "object": "chat.completion", "created": 0, "model": MODEL,
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": text}}],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()
    return _response(body)


def _response(body: bytes, status: str = "200 OK") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"Connection: keep-alive\r\n\r\n").encode() + body


def answer_of(body: bytes) -> str:
    """The server's answer to a request body: "Yes" when its sha256's first byte is even."""
    return "Yes" if hashlib.sha256(body).digest()[0] % 2 == 0 else "No"


class _State:
    """What the server kept since its last reset."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.digests: list[str] = []
        self.first: float | None = None
        self.last: float | None = None
        self.cpu_start = time.process_time()

    def stats(self) -> dict[str, Any]:
        window = (self.last - self.first) if self.first is not None and self.last is not None else 0.0
        return {"requests": len(self.digests), "window_s": window, "cpu_s": time.process_time() - self.cpu_start,
                "requests_digest": hashlib.sha256("\n".join(sorted(self.digests)).encode()).hexdigest()}


_ANSWERS = {"Yes": _completion("Yes"), "No": _completion("No")}
_MODELS = _response(json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model",
                                                              "owned_by": "perf"}]}).encode())
_NOT_FOUND = _response(b'{"error": "not found"}', "404 Not Found")


class _Protocol(asyncio.Protocol):
    def __init__(self, state: _State) -> None:
        self.state = state
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(_HEAD_END)
            if end < 0:
                return
            head = bytes(self.buffer[:end])
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            total = end + len(_HEAD_END) + length
            if len(self.buffer) < total:
                return
            body = bytes(self.buffer[end + len(_HEAD_END):total])
            del self.buffer[:total]
            method, path = head.split(b" ", 2)[:2]
            assert self.transport is not None
            self.transport.write(self._answer(method, path, body))

    def _answer(self, method: bytes, path: bytes, body: bytes) -> bytes:
        state = self.state
        if method == b"POST":
            now = time.perf_counter()
            if state.first is None:
                state.first = now
            digest = hashlib.sha256(body)
            state.digests.append(digest.hexdigest())
            state.last = now
            return _ANSWERS["Yes" if digest.digest()[0] % 2 == 0 else "No"]
        if path.endswith(b"/models"):
            return _MODELS
        if path == b"/stats":
            return _response(json.dumps(state.stats()).encode())
        if path == b"/reset":
            state.reset()
            return _response(b"{}")
        return _NOT_FOUND


def server_worker(port_file: Path) -> int:
    """The `_server` mode: serve on a free loopback port, written into `port_file`, until killed."""
    async def main() -> None:
        loop = asyncio.get_running_loop()
        state = _State()
        server = await loop.create_server(lambda: _Protocol(state), "127.0.0.1", 0, backlog=1024)
        port_file.write_text(str(server.sockets[0].getsockname()[1]), encoding="utf-8")
        await server.serve_forever()

    asyncio.run(main())
    return 0


class LoopbackServer:
    """The server in its own process (see the module docstring)."""

    def __init__(self, entry: Path, folder: Path, env: dict[str, str]) -> None:
        port_file = folder / "server.port"
        port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen([sys.executable, str(entry), "_server", str(port_file)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = time.monotonic()
        while not port_file.exists() or not port_file.read_text(encoding="utf-8"):
            if self.proc.poll() is not None or time.monotonic() - started > START_TIMEOUT_S:
                self.stop()
                raise RuntimeError("the loopback server did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text(encoding="utf-8"))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _get(self, path: str) -> dict[str, Any]:
        import urllib.request

        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=30) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        self._get("/reset")

    def stats(self) -> dict[str, Any]:
        return self._get("/stats")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=15)


def blast_worker(port: int, body_file: Path, connections: int, seconds: float) -> int:
    """The `_blast` mode: `connections` keep-alive connections each posting the body in `body_file` one
    after another for `seconds`; prints {"answers": N, "seconds": S} (the answers checked)."""
    body = body_file.read_bytes()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    expected = _ANSWERS[answer_of(body)]

    async def one(deadline: float) -> int:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        answered = 0
        while time.perf_counter() < deadline:
            writer.write(request)
            reply = await reader.readexactly(len(expected))
            if reply != expected:
                raise RuntimeError(f"unexpected answer: {reply[:200]!r}")
            answered += 1
        writer.close()
        return answered

    async def main() -> tuple[int, float]:
        start = time.perf_counter()
        counts = await asyncio.gather(*(one(start + seconds) for _ in range(connections)))
        return sum(counts), time.perf_counter() - start

    answers, took = asyncio.run(main())
    print(json.dumps({"answers": answers, "seconds": took}), flush=True)
    return 0
