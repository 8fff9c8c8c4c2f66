"""Suite "throughput" beyond the hot path: a2 (the in-process figure on a bigger random LLaVA),
d (-n 2 against -n 1) and e (the OpenAI adapter's concurrency against `transformers serve` and
a simulated server)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from perf.hotpath import BATCH_SIZE, SHAPES_ARGS, SHAPES_SAMPLES, WINDOW_MODULE, windowed
from perf.timing import RUN_FLAGS, Case, PerfError, free_port, generation_details, healthy, pin_threads

XDIST_SELECTION = "existence or count"  # 160 samples
OPENAI_SELECTION = "existence"  # 80 samples, 40 of them "Yes"
SIM_DELAY_S = 0.05
SERVE_START_TIMEOUT_S = 180


def build_llava_worker(folder: Path) -> int:
    """The `_build-llava` mode: the tiny LLaVA's recipe, bigger: a 4-layer, 512-wide text model and a
    4-layer vision tower at 64x64 (64 image tokens), with the tiny model's tokenizer."""
    import torch
    from transformers import PreTrainedTokenizerFast

    from pytest_mllm.models.tiny import ensure_tiny_llava, llava_config, llava_processor, untrained_llava

    pin_threads(torch)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(ensure_tiny_llava()))
    tokenizer.padding_side = "left"
    processor = llava_processor(tokenizer, image_size=64, patch_size=8)
    config = llava_config(tokenizer, image_size=64, patch_size=8,
                          vision={"hidden_size": 256, "intermediate_size": 1024, "num_hidden_layers": 4,
                                  "num_attention_heads": 4},
                          text={"hidden_size": 512, "intermediate_size": 1024, "num_hidden_layers": 4,
                                "num_attention_heads": 8, "num_key_value_heads": 4})
    torch.manual_seed(0)
    model = untrained_llava(config, tokenizer).eval()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    print(json.dumps({"parameters": sum(p.numel() for p in model.parameters())}), flush=True)
    return 0


class _SimHandler(BaseHTTPRequestHandler):
    """Any POST is a chat completion answered "Yes" after a fixed delay; any GET is healthy."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(SIM_DELAY_S)
        self._send({"id": "sim", "object": "chat.completion", "model": "sim",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "Yes"}}]})

    def do_GET(self) -> None:  # noqa: N802
        self._send({"status": "ok"})

    def _send(self, document: dict[str, Any]) -> None:
        body = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class SimServer(ThreadingHTTPServer):
    """The simulated OpenAI-compatible server: one thread per connection, so requests overlap."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SimHandler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class TransformersServe:
    """`transformers serve <folder>` on loopback, as tests/plugin/test_openai_model.py starts it."""

    def __init__(self, folder: Path, root: Path, env: dict[str, str]) -> None:
        (root / "hub").mkdir(exist_ok=True)
        self.port = free_port()
        self.log_path = root / "serve.log"
        command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(folder),
                   "--host", "127.0.0.1", "--port", str(self.port), "--device", "cpu"]
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                         env={**env, "HF_HUB_CACHE": str(root / "hub")})
        self.started = time.monotonic()

    def wait_healthy(self) -> None:
        """Block until /health answers; PerfError if the server exits or takes too long."""
        while not healthy(f"http://127.0.0.1:{self.port}/health"):
            if self.proc.poll() is not None or time.monotonic() - self.started > SERVE_START_TIMEOUT_S:
                self.stop()
                tail = self.log_path.read_text(errors="replace")[-3000:]
                raise PerfError(f"transformers serve did not start (exit code {self.proc.poll()}):\n{tail}")
            time.sleep(0.2)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def in_test_ratio(fast: Case, slow: Case) -> dict[str, float]:
    """fast/slow of the summed per-record duration_s (the tests' call phases)."""
    return {"median": fast.detail_median("duration_sum_s") / slow.detail_median("duration_sum_s"),
            "min": fast.detail_min("duration_sum_s") / slow.detail_min("duration_sum_s")}


def throughput_cases(llava: Path) -> dict[str, Case]:
    """Figure d; e is made once its servers run."""
    root = llava.parent
    shapes = SHAPES_ARGS
    a2_json = root / "a2_full.json"
    return {
        "a2_full": Case("a2. plugin, 360 samples, bigger LLaVA", expected=SHAPES_SAMPLES, json_path=a2_json,
                        inspect=windowed(generation_details(SHAPES_SAMPLES), root / "window.json", SHAPES_SAMPLES),
                        args=[f"--mllm=hf:{llava}", *shapes, f"--mllm-json={a2_json}", "-p", WINDOW_MODULE]),
        "d_n1": Case("d. -n 1, bigger LLaVA", expected=160, json_path=root / "d_n1.json", inspect=generation_details(160),
                     args=[f"--mllm=hf:{llava}", *shapes, "-k", XDIST_SELECTION, "-n", "1",
                           f"--mllm-json={root / 'd_n1.json'}"]),
        "d_n2": Case("d. -n 2, bigger LLaVA", expected=160, json_path=root / "d_n2.json", inspect=generation_details(160),
                     args=[f"--mllm=hf:{llava}", *shapes, "-k", XDIST_SELECTION, "-n", "2",
                           f"--mllm-json={root / 'd_n2.json'}"]),
    }


def openai_cases(root: Path, server: str, model: str, base_url: str, title: str,
                 expected: dict[str, int] | int) -> dict[str, Case]:
    """Figure e for one server: concurrency 1 and 8."""
    cases = {}
    for concurrency in (1, 8):
        out = root / f"e_{server}_c{concurrency}.json"
        cases[f"e_{server}_c{concurrency}"] = Case(
            f"e. {title}, concurrency {concurrency}", expected=expected, json_path=out, inspect=generation_details(80),
            args=[f"--mllm=openai:{model}", f"--mllm-base-url={base_url}", "--mllm-bench=shapes", "-k", OPENAI_SELECTION,
                  "--mllm-cache=off", f"--mllm-concurrency={concurrency}", f"--mllm-batch-size={BATCH_SIZE}",
                  *RUN_FLAGS, f"--mllm-json={out}"])
    return cases
