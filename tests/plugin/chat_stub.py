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
