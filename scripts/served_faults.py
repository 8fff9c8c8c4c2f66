"""Wall time of a served model's run under server faults, at the default settings.

    python scripts/served_faults.py [--scenario NAME|all] [--repeat 3] [--source DIR] [--json out.json]

Each scenario runs `pytest --mllm=openai:fake --mllm-base-url=… --mllm-bench=<synthetic jsonl>
--mllm-cache=off` in a fresh subprocess against `FaultyChatServer`s on loopback, with every other
option at its default (batch size, concurrency, timeout, retries):

  hung     20 samples, two replicas: the first accepts connections and never answers, the second answers;
  flaky    500 samples, one server failing 30 % of requests with HTTP 500 (seeded), the rest answered;
  garbage  20 samples, two replicas: the first answers HTTP 200 with a body that is no completion;
  healthy  500 samples, one server without faults: the run's own cost, which flaky adds to;
  healthy-replicas  20 samples, two replicas without faults: the run's own cost, which hung adds to.

An answer takes LATENCY_S (a model's generation time). `--source DIR` runs the plugin of another
checkout (a `git archive` of a commit unpacked there: the "before" figures), put first on PYTHONPATH;
the script checks that the run imported it. Figures: the wall time of each repetition, their
median, and how many records were answered and errored. Each run is bounded by --run-limit seconds.

`FaultyChatServer` is a fake on purpose: a real server (`transformers serve`, vLLM) cannot be
told to hang, to fail a given share of requests or to answer garbage on demand.
"""

from __future__ import annotations

import argparse
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
SCENARIOS = {  # name: (samples, faults of the replicas in URL order)
    "hung": (20, ("hung", "ok")),
    "flaky": (500, ("flaky",)),
    "garbage": (20, ("garbage", "ok")),
    "healthy": (500, ("ok",)),  # no fault: the floor flaky is read against
    "healthy-replicas": (20, ("ok", "ok")),  # no fault: the floor hung is read against
}


class FaultyChatServer:
    """A fault-injecting OpenAI-compatible chat endpoint on 127.0.0.1 (a fake; see the module docstring).

    fault: "ok" answers "yes" after LATENCY_S; "flaky" fails 30 % of requests (seeded) with HTTP 500;
    "hung" reads each request and never answers (until stopped, or MAX_HOLD_S); "garbage" answers
    HTTP 200 with a JSON body that is not a completion. GET /v1/models lists the model.
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
                time.sleep(LATENCY_S)
                self._send(200, {"id": "c", "object": "chat.completion", "model": "fake", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": "yes"}, "finish_reason": "stop"}]})

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
    samples, faults = SCENARIOS[scenario]
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
        command = [sys.executable, "-c", "import sys, pytest, pytest_mllm; print('plugin:', pytest_mllm.__file__); "
                   "sys.exit(pytest.main(sys.argv[1:]))", "-p", "no:cacheprovider", "-q", "--mllm=openai:fake",
                   f"--mllm-base-url={urls}", f"--mllm-bench={spec}", "--mllm-cache=off", f"--mllm-json={out}",
                   "--no-header", "--tb=no"]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, cwd=work / scenario, env=env, capture_output=True, text=True, timeout=limit_s)
            wall, output = time.perf_counter() - start, done.stdout + done.stderr
        except subprocess.TimeoutExpired as exc:
            wall, output = float("nan"), f"over the {limit_s:g} s limit\n{exc.stdout or ''}"
    finally:
        for server in servers:
            server.__exit__()
    imported = next((line.split(" ", 1)[1] for line in output.splitlines() if line.startswith("plugin: ")), "")
    if imported and not imported.startswith(str(source)):
        raise SystemExit(f"the run imported {imported}, not the plugin of {source}")
    records = json.loads(out.read_text())["records"] if out.exists() else []
    errors = sum(1 for r in records if r["status"] == "error")
    return {"wall_s": round(wall, 2), "records": len(records), "errors": errors,
            "requests": [s.requests for s in servers],
            "first_error": next((r["error"][:160] for r in records if r["status"] == "error"), None)}


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
            figures[scenario] = {"samples": SCENARIOS[scenario][0], "faults": SCENARIOS[scenario][1],
                                 "median_wall_s": statistics.median(walls), "runs": runs}
            print(f"{scenario}: median {statistics.median(walls):.2f} s over {len(walls)} runs {walls}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"source": str(source), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
