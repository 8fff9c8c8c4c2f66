"""Wall time (and peak memory) of a served model's run under server faults.

    python scripts/served_faults.py [--scenario NAME|all] [--repeat 3] [--source DIR] [--json out.json]

Each scenario runs `pytest --mllm=openai:fake --mllm-base-url=… --mllm-bench=<synthetic jsonl>
--mllm-cache=off` in a fresh subprocess against `FaultyChatServer`s on loopback, with every other
option at its default (batch size, concurrency, timeout, retries) unless the scenario names some:

  hung     20 samples, two replicas: the first accepts connections and never answers, the second answers;
  flaky    500 samples, one server failing 30 % of requests with HTTP 500 (seeded), the rest answered;
  garbage  20 samples, two replicas: the first answers HTTP 200 with a body that is no completion;
  healthy  500 samples, one server without faults: the run's own cost, which flaky adds to;
  healthy-replicas  20 samples, two replicas without faults: the run's own cost, which hung adds to;
  hung-single  20 samples, one server that never answers, no replica: what a hung server costs at the defaults;
  trickle-body  2 samples, one server sending its headers, then a byte of its body every 0.5 s
           (--mllm-timeout=5 --mllm-max-retries=0: the deadline is 5 s, not 5 s per read);
  trickle-headers  2 samples, one server sending a byte of its headers every 0.5 s (same options);
  gzip-bomb  1 sample, one server answering a gzip body of about 0.5 MB that decodes to 500 MB
           (--mllm-max-retries=0: one answer's cost);
  endless  1 sample, one server streaming a chunked body of 1 MiB chunks without end (it stops at
           ENDLESS_CAP bytes; --mllm-max-retries=0).

An answer takes LATENCY_S (a model's generation time). `--source DIR` runs the plugin of another
checkout (a `git archive` of a commit unpacked there: the "before" figures), put first on PYTHONPATH;
the script checks that the run imported it. Figures: the wall time of each repetition, their
median, the run's peak resident memory (its VmHWM, read while it runs), and how many records were
answered and errored. Each run is bounded by --run-limit seconds (then killed: wall time NaN,
`over_limit` true, the memory it had reached).

`FaultyChatServer` is a fake on purpose: a real server (`transformers serve`, vLLM) cannot be
told to hang, to trickle, to fail a given share of requests or to answer garbage on demand.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LATENCY_S = 0.05
MAX_REQUESTS = 20_000  # the fake stops answering (HTTP 503) after this many: bounded in requests
MAX_HOLD_S = 900.0  # a hung request is held at most this long: bounded in time
TRICKLE_S = 0.5  # a trickling server sends a byte this often
BOMB_BYTES = 500_000_000  # what the gzip bomb decodes to
ENDLESS_CAP = 2**30  # the endless body stops after this many bytes (a bound on the fake, not on the client)
ONE_TRY = ("--mllm-max-retries=0",)
SCENARIOS: dict[str, tuple[int, tuple[str, ...], tuple[str, ...]]] = {
    # name: (samples, faults of the replicas in URL order, options besides the defaults)
    "hung": (20, ("hung", "ok"), ()),
    "flaky": (500, ("flaky",), ()),
    "garbage": (20, ("garbage", "ok"), ()),
    "healthy": (500, ("ok",), ()),  # no fault: the floor flaky is read against
    "healthy-replicas": (20, ("ok", "ok"), ()),  # no fault: the floor hung is read against
    "hung-single": (20, ("hung",), ()),
    "trickle-body": (2, ("trickle-body",), ("--mllm-timeout=5", *ONE_TRY)),
    "trickle-headers": (2, ("trickle-headers",), ("--mllm-timeout=5", *ONE_TRY)),
    "gzip-bomb": (1, ("gzip-bomb",), ONE_TRY),
    "endless": (1, ("endless",), ONE_TRY),
}


def completion(text: str) -> dict[str, Any]:
    return {"id": "c", "object": "chat.completion", "model": "fake", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


_BOMB: list[bytes] = []


def gzip_bomb() -> bytes:
    """A completion whose answer is BOMB_BYTES spaces, gzip-compressed (about 0.5 MB; made once)."""
    if not _BOMB:
        head, tail = json.dumps(completion("<>")).encode().split(b"<>")
        buffer = io.BytesIO()
        with gzip.GzipFile(fileobj=buffer, mode="wb", compresslevel=9) as stream:
            stream.write(head)
            block = b" " * 2**20
            for _ in range(BOMB_BYTES // len(block)):
                stream.write(block)
            stream.write(tail)
        _BOMB.append(buffer.getvalue())
    return _BOMB[0]


class FaultyChatServer:
    """A fault-injecting OpenAI-compatible chat endpoint on 127.0.0.1 (a fake; see the module docstring).

    fault: "ok" answers "yes" after LATENCY_S; "flaky" fails 30 % of requests (seeded) with HTTP 500;
    "hung" reads each request and never answers (until stopped, or MAX_HOLD_S); "garbage" answers
    HTTP 200 with a JSON body that is not a completion; "trickle-body" sends its headers, then a byte
    of a long body every TRICKLE_S; "trickle-headers" sends a byte of endless headers every TRICKLE_S;
    "gzip-bomb" answers `gzip_bomb()`; "endless" streams a chunked body of spaces until ENDLESS_CAP
    bytes. GET /v1/models lists the model (a hung server holds it too).
    """

    def __init__(self, fault: str, seed: int = 0) -> None:
        self.fault = fault
        self.requests = 0
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                if fake.fault == "hung":
                    fake._stopped.wait(MAX_HOLD_S)
                    return
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "faulty"}]})

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with fake._lock:
                    fake.requests += 1
                    over = fake.requests > MAX_REQUESTS
                    fail = fake._random.random() < 0.3
                if over:
                    return self._send(503, {"error": {"message": "request budget of the fake spent"}})
                if fake.fault == "hung":
                    fake._stopped.wait(MAX_HOLD_S)
                    return
                if fake.fault == "garbage":
                    return self._send(200, {"object": "error", "message": "the model is overloaded"})
                if fake.fault == "flaky" and fail:
                    return self._send(500, {"error": {"message": "injected failure"}})
                if fake.fault in ("trickle-body", "trickle-headers", "gzip-bomb", "endless"):
                    return self._misbehave(fake.fault)
                time.sleep(LATENCY_S)
                self._send(200, completion("yes"))

            def _misbehave(self, fault: str) -> None:
                """A body or headers sent slowly, a decompression bomb, a body without end."""
                try:
                    if fault == "trickle-headers":
                        self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                        while not fake._stopped.wait(TRICKLE_S):
                            self.wfile.write(b"X")
                            self.wfile.flush()
                        return
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    if fault == "gzip-bomb":
                        payload = gzip_bomb()
                        self.send_header("Content-Encoding", "gzip")
                        self.send_header("Content-Length", str(len(payload)))
                        self.end_headers()
                        self.wfile.write(payload)
                    elif fault == "trickle-body":
                        self.send_header("Content-Length", str(10**6))
                        self.end_headers()
                        self.wfile.write(b'{"choices": [{"message": {"role": "assistant", "content": "')
                        while not fake._stopped.wait(TRICKLE_S):
                            self.wfile.write(b"y")
                            self.wfile.flush()
                    else:  # endless
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        chunk = b" " * 2**20
                        framed = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
                        sent = 0
                        while sent < ENDLESS_CAP and not fake._stopped.is_set():
                            self.wfile.write(framed)
                            sent += len(chunk)
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the client gave up on this request

            def _send(self, status: int, document: dict[str, Any]) -> None:
                payload = json.dumps(document).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the client gave up on this request

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.daemon_threads = True
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "FaultyChatServer":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopped.set()
        self._server.shutdown()
        self._server.server_close()


def write_benchmark(folder: Path, samples: int) -> Path:
    """A yes/no JSONL benchmark of `samples` rows sharing one small PNG; returns its spec."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "fixtures" / "bad" / "ok.png", data / "ok.png")
    rows = [{"id": f"s{n:04d}", "image": "ok.png", "question": f"Is it red? ({n})", "answer": "yes" if n % 2 else "no"}
            for n in range(samples)]
    (data / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    spec = folder / "faults.yaml"
    spec.write_text("name: faults\nloader: jsonl\nparser: mme\ndata: {root: data, file: b.jsonl}\n")
    return spec


def run_once(scenario: str, source: Path, work: Path, limit_s: float) -> dict[str, Any]:
    samples, faults, options = SCENARIOS[scenario]
    spec = write_benchmark(work / scenario, samples)
    servers = [FaultyChatServer(fault, seed=n) for n, fault in enumerate(faults)]
    out = work / scenario / "out.json"
    out.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": f"{source}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": ""}
    for server in servers:
        server.__enter__()
    try:
        urls = ",".join(s.base_url for s in servers)
        command = [sys.executable, "-c", "import resource, sys, pytest, pytest_mllm; "
                   "print('plugin:', pytest_mllm.__file__); status = pytest.main(sys.argv[1:]); "
                   "print('maxrss_kb:', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(status)",
                   "-p", "no:cacheprovider", "-q", "--mllm=openai:fake",
                   f"--mllm-base-url={urls}", f"--mllm-bench={spec}", "--mllm-cache=off", f"--mllm-json={out}",
                   "--no-header", "--tb=no", *options]
        start = time.perf_counter()
        log = work / scenario / "output.txt"
        with open(log, "w") as stream:
            process = subprocess.Popen(command, cwd=work / scenario, env=env, stdout=stream, stderr=subprocess.STDOUT)
            peak_kb = 0
            while process.poll() is None and time.perf_counter() - start < limit_s:
                peak_kb = max(peak_kb, _peak_kb(process.pid))
                time.sleep(0.1)
            over = process.poll() is None
            if over:
                peak_kb = max(peak_kb, _peak_kb(process.pid))
                process.kill()
            process.wait()
        wall = float("nan") if over else time.perf_counter() - start
        output = log.read_text()
    finally:
        for server in servers:
            server.__exit__()
    imported = next((line.split(" ", 1)[1] for line in output.splitlines() if line.startswith("plugin: ")), "")
    if imported and not imported.startswith(str(source)):
        raise SystemExit(f"the run imported {imported}, not the plugin of {source}")
    records = json.loads(out.read_text())["records"] if out.exists() else []
    errors = sum(1 for r in records if r["status"] == "error")
    rss = next((int(line.split()[1]) for line in output.splitlines() if line.startswith("maxrss_kb: ")), peak_kb)
    return {"wall_s": round(wall, 2), "over_limit": over, "peak_rss_mb": round(max(rss, peak_kb) / 1024),
            "records": len(records),
            "errors": errors, "requests": [s.requests for s in servers],
            "first_error": next((r["error"][:200] for r in records if r["status"] == "error"), None)}


def _peak_kb(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in kB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=[*SCENARIOS, "all"], default="all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose plugin runs")
    parser.add_argument("--run-limit", type=float, default=900.0, help="seconds one run may take")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    source = args.source.resolve()
    scenarios = list(SCENARIOS) if args.scenario == "all" else [args.scenario]
    print(f"source {source}; python {sys.version.split()[0]}; load {os.getloadavg()[0]:.2f}", flush=True)
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="served-faults-") as tmp:
        for scenario in scenarios:
            runs = []
            for n in range(args.repeat):
                result = run_once(scenario, source, Path(tmp), args.run_limit)
                runs.append(result)
                print(f"{scenario} #{n + 1}: {json.dumps(result)}", flush=True)
            walls = [r["wall_s"] for r in runs]
            samples, faults, options = SCENARIOS[scenario]
            figures[scenario] = {"samples": samples, "faults": faults, "options": options,
                                 "median_wall_s": statistics.median(walls), "runs": runs}
            print(f"{scenario}: median {statistics.median(walls):.2f} s over {len(walls)} runs {walls}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"source": str(source), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
