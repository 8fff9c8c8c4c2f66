"""A fault injector for the tests: an OpenAI-compatible chat endpoint on loopback whose replies the
test computes (and whose `GET /v1/models` it sets). Real servers (`transformers serve`) cannot be
told to fail, hang, answer garbage or say a given thing on demand; this can, and it is used only
for that."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

# request body → reply text; None answers HTTP 500; a dict is sent as it is with HTTP 200 (a body that is no completion)
Reply = Callable[[dict[str, Any]], "str | dict[str, Any] | None"]


class ChatStub:
    """`with ChatStub(reply) as stub:` serves at `stub.base_url`; `stub.requests` keeps what came in."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[dict[str, Any]] = []  # {"body": ..., "auth": Authorization header}
        self.models: list[dict[str, Any]] | None = None  # what GET /v1/models lists (None: HTTP 404)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                text = stub.reply(body)
                if text is None:
                    self._send(500, {"error": "injected failure"})
                elif isinstance(text, dict):
                    self._send(200, text)
                else:
                    self._send(200, {"choices": [{"message": {"role": "assistant", "content": text},
                                                  "finish_reason": "stop"}]})

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models") and stub.models is not None:
                    self._send(200, {"object": "list", "data": stub.models})
                else:
                    self._send(404, {"error": "not found"})

            def _send(self, status: int, document: dict[str, Any]) -> None:
                payload = json.dumps(document).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def calls(self) -> int:
        return len(self.requests)

    def __enter__(self) -> "ChatStub":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FaultyServer:
    """A loopback HTTP server that misbehaves as a broken or hostile server does, for every request (the
    model listing included): `fault` is "trickle" (headers, then a byte of the body every 0.1 s), "hung"
    (reads the request, never answers), "gzip-bomb" (a gzip body of about 64 kB that decodes to 64 MiB),
    "endless" (a chunked body without end). A fake on purpose: no real server does these on demand."""

    _bomb: list[bytes] = []  # made once

    def __init__(self, fault: str) -> None:
        import socket

        self.fault = fault
        self.calls = 0
        self._stopped = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)
        self.base_url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def _serve(self, conn: Any) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            self.calls += 1
            try:
                self._misbehave(conn)
            except OSError:
                pass  # the client gave up

    def _misbehave(self, conn: Any) -> None:
        import gzip

        json_head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        if self.fault == "hung":
            self._stopped.wait(120)
        elif self.fault == "trickle":
            conn.sendall(json_head + b"Content-Length: 1000000\r\n\r\n" + b'{"choices": [{"message": {"content": "')
            while not self._stopped.wait(0.1):
                conn.sendall(b"y")
        elif self.fault == "gzip-bomb":
            if not FaultyServer._bomb:
                FaultyServer._bomb.append(gzip.compress(b'{"choices": [{"message": {"content": "'
                                                        + b" " * (64 * 2**20) + b'"}}]}'))
            body = FaultyServer._bomb[0]
            conn.sendall(json_head + f"Content-Encoding: gzip\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body)
        elif self.fault == "endless":
            conn.sendall(json_head + b"Transfer-Encoding: chunked\r\n\r\n")
            chunk = b" " * 2**20
            while not self._stopped.is_set():
                conn.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def __enter__(self) -> "FaultyServer":
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._thread.join()
        self._listener.close()
