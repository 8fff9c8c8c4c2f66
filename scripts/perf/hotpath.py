"""Suite "hotpath": figures a (plugin against the raw generate loop and plain pytest), b (cached
re-runs) and f (fixed cost against its floor); the raw loop's and the floor's worker modes."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from perf.core import CACHED_MODEL, GENERATED_MARKER, Workload
from perf.timing import (
    ENTRY,
    RUN_FLAGS,
    SUBPROCESS_TIMEOUT_S,
    Case,
    PerfError,
    Stats,
    all_cached,
    children_cpu_s,
    generation_details,
    never_generated,
    pin_threads,
)

CACHED_GOAL = 1.2
THROUGHPUT_GOAL = 0.95
SHAPES_SAMPLES = 360
BATCH_SIZE = 8
ONE_SAMPLE = "existence and img_000 and q1"  # -k selecting the first shapes sample alone
EIGHT_SAMPLES = "existence and (img_000 or img_001 or img_002 or img_003)"  # -k selecting 8 samples


class RawLoop(Stats):
    """The tiny LLaVA's batched generate loop over the shapes samples, in a persistent subprocess.

    The subprocess (this script's `_raw-loop` mode) loads the model once and answers each "run"
    line with the timings of one pass over all samples; `times` are those loop times.
    """

    def __init__(self, label: str, cwd: Path, env: dict[str, str], log_path: Path, folder: Path | None = None) -> None:
        super().__init__(label)
        self.log_path = log_path
        model = [str(folder)] if folder is not None else []
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen([sys.executable, str(ENTRY), "_raw-loop", *model], cwd=cwd,
                                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                         text=True)
        self.ready: dict[str, Any] = {}

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                tail = self.log_path.read_text(errors="replace")[-2000:]
                raise PerfError(f"{self.label}: the raw loop exited ({self.proc.poll()}):\n{tail}")
            if line.startswith("{"):
                return json.loads(line)

    def wait_ready(self) -> None:
        """Block until the model is loaded and warmed up."""
        if not self.ready:
            self.ready = self._reply()

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        self.wait_ready()
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        result = self._reply()
        self.details.append(result)
        return result["total_s"], result["cpu_s"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class ShapesLoop:
    """The tiny LLaVA (or the model `folder`), loaded as a plain pytest run loads it, answering the
    shapes samples in batches: the raw loop's work, shared by figure a's raw loop and its plain
    pytest tests."""

    def __init__(self, folder: Path | None) -> None:
        start = time.perf_counter()
        import torch

        from pytest_mllm.models.hf import HFModel
        from pytest_mllm.models.tiny import ensure_tiny_llava

        self.torch = torch
        pin_threads(torch)  # one thread, as the plugin's runs have under THREADS
        model = HFModel(str(folder or ensure_tiny_llava()), name="raw")
        self.load_s = time.perf_counter() - start

        from pytest_mllm.engine.evaluator import render_prompt
        from pytest_mllm.engine.images import load_image
        from pytest_mllm.engine.spec import find_spec, load_spec
        from pytest_mllm.loaders.shapes import build_samples

        self.render_prompt, self.load_image = render_prompt, load_image  # imported once, not in the timed loop
        self.spec = load_spec(find_spec("shapes"))
        self.samples = build_samples(self.spec.name, **self.spec.loader_options)  # the plugin's collection order
        self.templates = {s.task: self.spec.task_settings(s.task).prompt for s in self.samples}
        self.processor, self.tokenizer, self.network = model.processor, model.tokenizer, model.model

    def prompt(self, sample: Any) -> str:
        question = self.render_prompt(self.templates[sample.task], sample)
        content = [{"type": "image"} for _ in sample.images] + [{"type": "text", "text": question}]
        return self.processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                                  tokenize=False)

    def answers(self, batch: list[Any]) -> tuple[list[str], float]:
        """The batch's answers, and the seconds spent loading its images."""
        t = time.perf_counter()
        images = [[self.load_image(ref) for ref in s.images] for s in batch]
        images_s = time.perf_counter() - t
        inputs = self.processor(text=[self.prompt(s) for s in batch], images=images, return_tensors="pt", padding=True)
        with self.torch.inference_mode():
            output = self.network.generate(**inputs, do_sample=False, max_new_tokens=self.spec.max_new_tokens,
                                           pad_token_id=self.tokenizer.pad_token_id)
        new = output[:, inputs["input_ids"].shape[1]:]
        return [a.strip() for a in self.processor.batch_decode(new, skip_special_tokens=True)], images_s

    def loop(self, chosen: list[Any]) -> dict[str, Any]:
        """One timed pass over `chosen` in batches of BATCH_SIZE."""
        images_s, answers, first_batch_s = 0.0, [], 0.0
        cpu = time.process_time()
        begin = time.perf_counter()
        for at in range(0, len(chosen), BATCH_SIZE):
            if at == BATCH_SIZE:
                first_batch_s = time.perf_counter() - begin
            batch_answers, batch_images_s = self.answers(chosen[at:at + BATCH_SIZE])
            answers += batch_answers
            images_s += batch_images_s
        total = time.perf_counter() - begin
        return {"total_s": total, "images_s": images_s, "model_s": total - images_s, "first_batch_s": first_batch_s,
                "cpu_s": time.process_time() - cpu, "_answers": answers}


def raw_loop_worker(folder: Path | None) -> int:
    """The `_raw-loop` mode: load the model as a plain pytest run does, then time loops on request."""
    shapes = ShapesLoop(folder)
    shapes.loop(shapes.samples[:1])  # warm-up: the plugin's one-sample run absorbs the same first-call costs
    print(json.dumps({"load_s": shapes.load_s, "threads": shapes.torch.get_num_threads(),
                      "samples": len(shapes.samples)}), flush=True)
    for line in sys.stdin:
        if line.strip() != "run":
            break
        print(json.dumps(shapes.loop(shapes.samples)), flush=True)
    return 0


PLAIN_PYTEST_TESTS = '''"""Figure a's plain pytest run, written by scripts/perf.py: one test per shapes sample, each taking
its answer from the raw loop's batches (the first test of a batch answers all of it)."""

import sys

import pytest

sys.path.insert(0, {scripts!r})
from perf.hotpath import BATCH_SIZE, ShapesLoop  # noqa: E402

SHAPES = ShapesLoop(None)
ANSWERS: dict[int, list[str]] = {{}}


@pytest.mark.parametrize("index", range(len(SHAPES.samples)))
def test_sample(index):
    start = index - index % BATCH_SIZE
    if start not in ANSWERS:
        ANSWERS[start] = SHAPES.answers(SHAPES.samples[start:start + BATCH_SIZE])[0]
    assert isinstance(ANSWERS[start][index - start], str)
'''


def write_plain_pytest_tests(root: Path) -> Path:
    """Figure a's plain pytest tests, in their own folder under `root`; returns the test file."""
    folder = root / "plain_pytest"
    folder.mkdir()
    tests = folder / "test_plain_pytest.py"
    tests.write_text(PLAIN_PYTEST_TESTS.format(scripts=str(ENTRY.parent)), encoding="utf-8")
    return tests


class Floor(Stats):
    """A fresh interpreter importing torch and transformers and loading the tiny LLaVA, nothing else."""

    def __init__(self, label: str, folder: Path) -> None:
        super().__init__(label)
        self.command = [sys.executable, str(ENTRY), "_floor", str(folder)]

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        cpu_start = children_cpu_s()
        start = time.perf_counter()
        proc = subprocess.run(self.command, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_S)
        elapsed = time.perf_counter() - start
        cpu = children_cpu_s() - cpu_start
        if proc.returncode != 0:
            raise PerfError(f"{self.label}: exit status {proc.returncode}\n{(proc.stdout + proc.stderr)[-2000:]}")
        self.details.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        return elapsed, cpu


def floor_worker(folder: Path) -> int:
    """The `_floor` mode: import torch and transformers, load the model folder; print the two times."""
    start = time.perf_counter()
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    pin_threads(torch)
    imported = time.perf_counter()
    AutoProcessor.from_pretrained(str(folder))
    AutoModelForImageTextToText.from_pretrained(str(folder), dtype=torch.float32).eval()
    loaded = time.perf_counter()
    print(json.dumps({"import_s": imported - start, "load_s": loaded - imported}), flush=True)
    return 0


WINDOW_PLUGIN = '''"""Loaded into figure a's plugin runs with -p by scripts/perf.py: in the process, the time from
the end of the first batch's tests to the end of the last test (wall, and this process's CPU time), and
the session finish's time (scores, results JSON, terminal summary)."""

import json
import os
import time

import pytest

_state = {{"tests": 0}}


def pytest_runtest_logfinish(nodeid, location):
    _state["tests"] += 1
    _state["last"], _state["last_cpu"] = time.perf_counter(), time.process_time()
    if _state["tests"] == int(os.environ.get("{batch_variable}", {batch})):
        _state["start"], _state["start_cpu"] = _state["last"], _state["last_cpu"]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    begin = time.perf_counter()
    result = yield
    if "start" in _state:
        window = {{"window_s": _state["last"] - _state["start"], "finish_s": time.perf_counter() - begin,
                  "window_cpu_s": _state["last_cpu"] - _state["start_cpu"], "tests": _state["tests"]}}
        with open(os.environ["{variable}"], "w", encoding="utf-8") as out:
            json.dump(window, out)
    return result
'''
WINDOW_MODULE = "perf_window"
WINDOW_VARIABLE = "PERF_WINDOW_FILE"
WINDOW_BATCH_VARIABLE = "PERF_WINDOW_BATCH"  # the first batch's size, where a run's differs from BATCH_SIZE


def install_window_plugin(root: Path, env: dict[str, str]) -> None:
    """Write figure a's window plugin under `root`, importable by the runs (it writes `root`/window.json)."""
    folder = root / "perf_plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{WINDOW_MODULE}.py").write_text(WINDOW_PLUGIN.format(batch=BATCH_SIZE, variable=WINDOW_VARIABLE,
                                                                     batch_variable=WINDOW_BATCH_VARIABLE),
                                                 encoding="utf-8")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    env[WINDOW_VARIABLE] = str(root / "window.json")


def window_of(window_file: Path, tests: int) -> Callable[[], dict[str, Any]]:
    """The run's in-process window, as the window plugin wrote it (the file is consumed)."""
    def read() -> dict[str, Any]:
        try:
            window = json.loads(window_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PerfError(f"the window plugin wrote no {window_file}: {exc}") from None
        window_file.unlink()
        if window["tests"] != tests:
            raise PerfError(f"the window plugin saw {window['tests']} tests, expected {tests}")
        return {"window_s": window["window_s"], "finish_s": window["finish_s"], "window_cpu_s": window["window_cpu_s"]}
    return read


def windowed(inspect: Callable[[dict[str, Any]], dict[str, Any]], window_file: Path,
             tests: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`inspect`'s details plus the run's in-process window (the file is consumed)."""
    window = window_of(window_file, tests)
    return lambda document: {**inspect(document), **window()}


def throughput_figures(full: Case, one: Case, raw: RawLoop, plain: Case) -> dict[str, Any]:
    """Figure a: per-sample times and plugin/raw throughput (see the module docstring)."""
    n = SHAPES_SAMPLES

    def per_sample(f: Callable[[list[float]], float]) -> tuple[float, float, float, float]:
        plugin = (f(full.times) - f(one.times)) / (n - 1)
        plugin_cpu = (f(full.cpu_times) - f(one.cpu_times)) / (n - 1)
        return plugin, f(raw.times) / n, plugin_cpu, f(raw.cpu_times) / n

    med, best = per_sample(statistics.median), per_sample(min)
    # Runs of one repetition are adjacent in time: their ratios are paired against slow drifts.
    paired = [(r / n) / ((f - o) / (n - 1)) for f, o, r in zip(full.times, one.times, raw.times)]
    answers = raw.details[0]["_answers"] if raw.details else []
    responses = full.details[0]["_responses"] if full.details else []
    differ = sum(a != b for a, b in zip(answers, responses)) + abs(len(answers) - len(responses))
    return {
        "plugin_s_per_sample": {"median": med[0], "min": best[0], "cpu_median": med[2]},
        "raw_s_per_sample": {"median": med[1], "min": best[1], "cpu_median": med[3]},
        "throughput_ratio": {"median": med[1] / med[0], "min": best[1] / best[0], "cpu_median": med[3] / med[2],
                             "per_repetition": paired, "median_of_repetitions": statistics.median(paired)},
        "in_process": in_process_figures(full, raw, plain),
        "plugin_generation_s": {"median": full.detail_median("latency_sum_s"), "min": full.detail_min("latency_sum_s")},
        "raw_generation_s": {"median": raw.detail_median("model_s"), "min": raw.detail_min("model_s")},
        "raw_images_s": {"median": raw.detail_median("images_s")},
        "generation_ratio": {"median": raw.detail_median("model_s") / full.detail_median("latency_sum_s"),
                             "min": raw.detail_min("model_s") / full.detail_min("latency_sum_s")},
        "raw_load_s": raw.ready.get("load_s"), "torch_threads": raw.ready.get("threads"),
        "answers_differing": differ,
    }


def in_process_figures(full: Case, raw: RawLoop, plain: Case | None = None) -> dict[str, Any]:
    """Per sample after the first batch, inside the plugin's run (its window plugin) and the raw loop;
    with `plain`, also inside plain pytest's run of tests doing the raw loop's work."""
    after_first = SHAPES_SAMPLES - BATCH_SIZE
    plugin = [d["window_s"] / after_first for d in full.details]
    loop = [(d["total_s"] - d["first_batch_s"]) / after_first for d in raw.details]

    def throughput(faster: list[float], slower: list[float]) -> dict[str, Any]:
        return {"median": statistics.median(faster) / statistics.median(slower), "min": min(faster) / min(slower),
                "per_repetition": [f / s for f, s in zip(faster, slower)]}

    figures = {
        "plugin_s_per_sample": {"median": statistics.median(plugin), "min": min(plugin)},
        "raw_s_per_sample": {"median": statistics.median(loop), "min": min(loop)},
        "throughput_ratio": throughput(loop, plugin),
        "session_finish_s": {"median": full.detail_median("finish_s"), "min": full.detail_min("finish_s")},
    }
    if plain is not None:
        tests = [d["window_s"] / after_first for d in plain.details]
        figures.update(plain_pytest_s_per_sample={"median": statistics.median(tests), "min": min(tests)},
                       plain_pytest_ratio=throughput(loop, tests), plugin_vs_plain_pytest=throughput(tests, plugin))
    return figures


SHAPES_ARGS = ["--mllm-bench=shapes", "--mllm-cache=off", f"--mllm-batch-size={BATCH_SIZE}", *RUN_FLAGS]


def hotpath_cases(work: Workload) -> dict[str, Case]:
    """Figures a (plugin side), b, f (plugin side); a's raw loop and f's floor are made at set-up."""
    root, n = work.root, work.samples
    tiny = ["--mllm=tiny-llava", *SHAPES_ARGS]
    cached_json = root / "cached.json"
    return {
        "a_full": Case("a. plugin, 360 samples", args=[*tiny, f"--mllm-json={root / 'a_full.json'}", "-p", WINDOW_MODULE],
                       expected=SHAPES_SAMPLES, json_path=root / "a_full.json",
                       inspect=windowed(generation_details(SHAPES_SAMPLES), root / "window.json", SHAPES_SAMPLES)),
        "a_one": Case("a. plugin, 1 sample (-k)", args=[*tiny, f"--mllm-json={root / 'a_one.json'}", "-k", ONE_SAMPLE],
                      expected=1, json_path=root / "a_one.json", inspect=generation_details(1)),
        "cached_plugin": Case("b. cached re-run, plugin", expected=work.plugin_outcomes,
                              args=[str(work.cached_spec.relative_to(root)), f"--mllm={CACHED_MODEL}", *RUN_FLAGS],
                              verify=never_generated(root / GENERATED_MARKER)),
        "cached_json": Case("b2. cached re-run, plugin, --mllm-json", expected=work.plugin_outcomes,
                            json_path=cached_json, inspect=all_cached(n),
                            args=[str(work.cached_spec.relative_to(root)), f"--mllm={CACHED_MODEL}", *RUN_FLAGS,
                                  f"--mllm-json={cached_json}"]),
        "a_pytest": Case("a. plain pytest, 360 tests, raw loop's work",
                         args=[str(write_plain_pytest_tests(root).relative_to(root)), "-p", "no:mllm", "-p", WINDOW_MODULE,
                               *RUN_FLAGS],
                         expected={"passed": SHAPES_SAMPLES}, verify=window_of(root / "window.json", SHAPES_SAMPLES)),
        "f_plugin8": Case("f. plugin, 8 samples (-k)", args=[*tiny, "-k", EIGHT_SAMPLES], expected=8),
    }
