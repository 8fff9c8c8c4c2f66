"""A real `transformers serve` on loopback for the tests that talk to an OpenAI-compatible server."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path


class ServerDidNotStart(RuntimeError):
    """The server exited or never answered /health; the message holds its log's tail."""


@dataclass
class Server:
    """A running `transformers serve` pinned to one model folder; `stop()` ends it (idempotent)."""

    base_url: str
    model: str
    process: subprocess.Popen[bytes]
    log_path: Path
    timings: dict[str, float] = field(default_factory=dict)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start_transformers_serve(folder: Path, workdir: Path, *, timeout_s: float = 90,
                             extra_env: dict[str, str] | None = None) -> Server:
    """Start `transformers serve <folder>` on a free loopback port and wait until /health answers."""
    (workdir / "hub").mkdir(exist_ok=True)  # GET /v1/models needs HF_HUB_CACHE to exist
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(workdir / "hub"), **(extra_env or {})}
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(folder),
               "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"]
    log_path = workdir / "serve.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    server = Server(f"http://127.0.0.1:{port}/v1", str(folder), process, log_path)
    start = time.monotonic()
    while not _healthy(f"http://127.0.0.1:{port}/health"):
        if process.poll() is not None or time.monotonic() - start > timeout_s:
            server.stop()
            raise ServerDidNotStart(f"transformers serve did not start (exit code {process.poll()}):\n"
                                    f"{server.log()[-3000:]}")
        time.sleep(0.2)
    server.timings["server_start_s"] = time.monotonic() - start
    return server
