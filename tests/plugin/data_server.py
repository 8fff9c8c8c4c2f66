"""Loopback HTTP servers for the download tests (nothing in the tests reaches the internet):

- `FileServer`: released data files by path, as VLMEvalKit's file server gives them (Content-Length, HTTP
  Range requests answered with 206), with faults switched on per test: a response cut short, a response
  without a length, a slow response, refused ranges.
- `HubStandIn`: a loopback stand-in of the Hugging Face hub's API for `HF_ENDPOINT`, holding dataset
  repositories at one commit each: the tree listing with each file's git blob id and, for large (LFS)
  files, its SHA-256, and the files under `/datasets/<repo>/resolve/<revision>/<path>`, as
  `huggingface_hub` reads them. `corrupt` serves other bytes than the listing describes (a fault).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A loopback HTTP server answering with `handler` on a thread while the block runs; yields its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class FileServer:
    """Files served from memory on 127.0.0.1; every request is logged as (method, path, Range header)."""

    files: dict[str, bytes]
    ranges: bool = True  # answer Range requests (206); False: always the whole file (200)
    cut_after: dict[str, int] = field(default_factory=dict)  # path → bytes sent before the connection closes
    no_length: set[str] = field(default_factory=set)  # paths sent without Content-Length (until the connection closes)
    delay_s: float = 0.0  # a pause before the body: concurrent fetchers overlap
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    def gets(self, path: str) -> int:
        return sum(1 for method, p, _ in self.requests if method == "GET" and p == f"/{path}")

    @contextmanager
    def running(self) -> Iterator[FileServer]:
        with _serving(_file_handler(self)) as self.port:
            yield self


def _file_handler(state: FileServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = unquote(urlsplit(self.path).path)
            asked = self.headers.get("Range")
            state.requests.append(("GET", path, asked))
            body = state.files.get(path.lstrip("/"))
            if body is None:
                self.send_error(404, "Not Found")
                return
            start, status = 0, 200
            match = re.match(r"bytes=(\d+)-$", asked or "")
            if match and state.ranges:
                start = int(match.group(1))
                if start >= len(body):
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{len(body)}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
            part = body[start:]
            self.send_response(status)
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            if path.lstrip("/") in state.no_length:
                self.send_header("Connection", "close")
            else:
                self.send_header("Content-Length", str(len(part)))
            self.send_header("Accept-Ranges", "bytes" if state.ranges else "none")
            self.end_headers()
            time.sleep(state.delay_s)
            cut = state.cut_after.get(path.lstrip("/"))
            self.wfile.write(part if cut is None else part[:cut])
            self.wfile.flush()
            if cut is not None or path.lstrip("/") in state.no_length:
                self.close_connection = True

    return Handler


# --- the hub's stand-in ---------------------------------------------------------------------------------


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class HubStandIn:
    """Dataset repositories ({repo: {path: bytes}}) at one commit each, served as the hub's API serves them."""

    repos: dict[str, dict[str, bytes]]
    commits: dict[str, str] = field(default_factory=dict)  # repo → its commit (made up: 40 hex digits)
    corrupt: set[str] = field(default_factory=set)  # "repo/path" whose served bytes differ from the listing
    requests: list[tuple[str, str]] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        for repo in self.repos:
            self.commits.setdefault(repo, hashlib.sha1(repo.encode()).hexdigest())

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def downloads(self) -> list[str]:
        return [path for method, path in self.requests if method == "GET" and "/resolve/" in path]

    def entry(self, repo: str, path: str) -> dict[str, object]:
        data = self.repos[repo][path]
        entry: dict[str, object] = {"type": "file", "path": path, "size": len(data), "oid": git_blob_id(data)}
        if path.endswith((".parquet", ".tsv")):  # stored with LFS on the hub: the listing holds its SHA-256
            entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
        return entry

    @contextmanager
    def running(self) -> Iterator[HubStandIn]:
        with _serving(_hub_handler(self)) as self.port:
            yield self


def _hub_handler(hub: HubStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _json(self, value: object, status: int = 200) -> None:
            body = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            path = unquote(urlsplit(self.path).path)
            hub.requests.append(("HEAD" if head else "GET", path))
            for repo, files in hub.repos.items():
                commit = hub.commits[repo]
                if path.startswith(f"/api/datasets/{repo}/revision/"):
                    self._json({"id": repo, "sha": commit, "siblings": [{"rfilename": p} for p in files]})
                    return
                if path.startswith(f"/api/datasets/{repo}/tree/"):
                    self._json([hub.entry(repo, p) for p in sorted(files)])
                    return
                match = re.match(rf"^/datasets/{re.escape(repo)}/resolve/([^/]+)/(.+)$", path)
                if match and match.group(2) in files:
                    name = match.group(2)
                    data = files[name]
                    if f"{repo}/{name}" in hub.corrupt:
                        data = bytes(b ^ 0x20 for b in data)  # as long as the listed file, other bytes
                    entry = hub.entry(repo, name)
                    etag = entry["lfs"]["oid"] if "lfs" in entry else entry["oid"]  # type: ignore[index]
                    self.send_response(200)
                    self.send_header("X-Repo-Commit", commit)
                    self.send_header("ETag", f'"{etag}"')
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if not head:
                        self.wfile.write(data)
                    return
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self) -> None:  # noqa: N802
            self._answer(head=False)

        def do_HEAD(self) -> None:  # noqa: N802
            self._answer(head=True)

    return Handler
