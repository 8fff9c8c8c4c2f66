"""Speed of pytest-mllm: its overhead against plain pytest, and its throughput against raw loops.

    python scripts/perf.py [--suite {core,hotpath,throughput,all}] [--samples 10000] [--repeat 3] [--json out.json]
    python scripts/perf.py --suite peers [--repeat 3] [--peer-images 56] [--json out.json]

Every figure is measured in this one invocation, over --repeat repetitions, each run in a fresh
subprocess (except the raw generate loop, see a.); the runs of one figure alternate (ABBA
order: A B C, then C B A, ...) so that drift in the machine's speed hits them alike. Figures
are medians (and mins) of wall time, with the CPU time (user + system) of the process tree
beside them: on a shared machine CPU time varies less than wall time. The machine, the
versions and the 1-minute load average before and after each suite are printed and written.

Suite "core" (the original figures) builds a synthetic yes/no benchmark in a temporary folder
(--samples JSONL samples in ten tasks, in pairs scored by accuracy+, every image path pointing
at one small real PNG; recorded answers for `--mllm=replay:`, a fifth of them wrong) and times:

  c.  collecting it (`--collect-only -q`); goal: under 3 s;
  c2. running it (`-q -p no:cacheprovider`) against plain pytest running as many trivial
      parametrized tests with the same flags; goal: plugin/plain at most 1.5x;
  c3. the same two runs with `-n 2` (pytest-xdist); same goal.

Suite "hotpath" times figures a, b and f below; suite "throughput" all of a to f:

  a.  plugin throughput against a raw batched `generate` loop: the tiny LLaVA on the bundled
      `shapes` benchmark (360 samples), batch size 8, no cache, no xdist, torch's default thread
      count in both (the plugin sets 1 thread only in xdist workers). Method (differencing):
        plugin s/sample = (wall of the 360-sample run - wall of the same command with `-k`
                           selecting 1 sample) / 359,
      both `pytest --mllm=tiny-llava --mllm-bench=shapes --mllm-batch-size=8 --mllm-cache=off
      -p no:cacheprovider -q --mllm-json=...`: the two runs share process start, imports,
      collection of all 360 samples, the model load and the first `generate` call's warm-up,
      so the difference is what the other 359 samples cost end to end (images, prompts,
      generation, scoring, reports, results). The raw loop is a persistent subprocess that
      loaded the model once (`HFModel`, default threads) and ran one untimed 1-sample batch
      (the same warm-up the subtraction removes from the plugin); each repetition times its
      loop over the 360 samples in the plugin's order and batches: `load_image`, prompt
      template, chat template, processor, `model.generate(do_sample=False, max_new_tokens=8)`,
      decode. raw s/sample = loop time / 360. Figure: plugin throughput / raw throughput =
      raw s/sample / plugin s/sample. The goal (>= 0.95) is judged on the in-process figure,
      which the start-up's noise (a second or more between runs) does not reach: a plugin
      loaded into the 360-sample run with `-p` times, inside the process, from the end of the
      first batch's 8 tests to the end of the last test (every later batch's images, prompts,
      generation, scoring and test reports), per sample after the first batch (the session
      finish, scores, results JSON and terminal summary, is shown beside it: a cost per run,
      which the differencing figure includes as far as it grows with the samples); the raw
      loop's figure is its loop minus its first batch, per sample after it. Also shown: generation alone, sum of
      per-record `latency_s` of the plugin run (what HFModel.generate measures: chat template,
      processor, generate, decode) against the raw loop's time for the same steps, and
      whether the plugin's answers equal the raw loop's. And plain pytest doing the same work: plain
      pytest (`-p no:mllm`) on a generated module of 360 parametrized tests, each taking its
      sample's answer from the raw loop's batches (a batch's first test answers all 8), timed
      in-process the same way: plain pytest/raw is what pytest as shipped leaves of the raw
      loop's throughput once each sample is a test; plugin/plain pytest compares pytest-mllm
      with that (above 1: faster than plain pytest doing the same work).
  a2. (suite "throughput") the in-process figure of a on the bigger random LLaVA of d (all 360
      samples, its own raw loop): a model whose batch takes 0.2 s rather than 25 ms, where the
      per-test cost weighs as it would on a real model (information, no goal).
  b.  a fully cached re-run of the --samples benchmark against the plain run of c2 (goal <=
      1.2x): a conftest in a subfolder registers "perf-model", a model with an `identity`
      (so the plugin caches its answers) that answers instantly; one untimed run fills the
      response cache, then each timed run (`--mllm-cache=on`, the default) must leave the model
      unasked (it touches a marker file when asked). b2: the same run writing `--mllm-json`
      (every record must say `cached: true`), whose intervals bootstrap every metric over the
      10,000 records (no goal: it shows what the results file costs).
  d.  `-n 2` against `-n 1` (workers use 1 torch thread each) on a bigger random LLaVA built
      once into the temporary folder (4-layer text model of hidden size 512, 64x64 vision
      tower): `pytest --mllm=hf:<folder> --mllm-bench=shapes -k "existence or count"
      --mllm-cache=off --mllm-batch-size=8`; figure: wall n2/n1 (expect < 1 on 2 cores).
  e.  the OpenAI adapter at `--mllm-concurrency=8` against 1, `-k existence` (80 samples),
      batch size 8: against `transformers serve` of the tiny LLaVA on loopback (which answers
      one request at a time), and against a SIMULATED server in this script (stdlib,
      threaded, answers "Yes" to any chat completion after sleeping 50 ms, so it overlaps
      requests); figures: wall c8/c1, and in-test time c8/c1 (the sum of per-record
      `duration_s`: the tests' call phases, without process start and reporting).
  f.  fixed cost: the wall time of `pytest --mllm=tiny-llava --mllm-bench=shapes --mllm-cache=off
      -k <8 samples>` against its floor, a fresh interpreter that only imports torch and
      transformers and loads the tiny LLaVA (`AutoProcessor` and
      `AutoModelForImageTextToText.from_pretrained`, this script's `_floor` mode); figure:
      plugin/floor (no goal: what is left above 1 is pytest, collection, the plugin and 8
      answers).

The subprocesses write Python and assertion-rewrite bytecode caches (into the temporary folder,
even where PYTHONDONTWRITEBYTECODE is set, as on a developer's machine), filled by unrecorded
warm-up runs first. Set-up is untimed and runs several things at once: first the warm-up runs
and the cache fill (they compile torch's and transformers' bytecode), then the raw loop's model
load, the bigger LLaVA's build and the start of `transformers serve`, which then idles until e.
Every run's final summary line is checked: a wrong number of results, or any error, is an error
of this script (exit status 2). The output ends with the time each phase took; with the
defaults that is about 7-8 minutes on a quiet 2-core machine (--repeat 2: about 5).

Suite "peers" (not part of "all") runs pytest-mllm, lmms-eval and VLMEvalKit, each from its own
virtual environment (--lmms-eval-python, --vlmeval-python, --vlmeval-src or $PERF_LMMS_EVAL_PYTHON,
$PERF_VLMEVAL_PYTHON, $PERF_VLMEVAL_SRC; setup in docs/peers.md; skipped, exit status 0, when
neither is found), on one tiny-LLaVA folder (save_pretrained output, loaded by all three as
LlavaForConditionalGeneration) and one data set written three ways (--peer-images PNGs, two
yes/no questions each: an MME release folder for `--mllm-bench=mme`, an lmms-lab/MME-style
parquet file for an lmms-eval task in an --include_path folder, a VLMEvalKit MME-style TSV in
$LMUData): greedy, 16 new tokens, each tool's default batching, OMP/MKL threads 1. Each timed
run is a whole process. Cold: nothing reused; cached: pytest-mllm's response cache, lmms-eval's
--use_cache and datasets cache, VLMEvalKit's --reuse of its prediction file and decoded images,
filled by an untimed run of each tool. Figures: medians and mins of each, pytest-mllm/peer
(goals <= 0.4 cold, <= 0.1 cached), and the answers compared sample by sample.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import argparse
import json
import os
import platform
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from PIL import Image
from rich.console import Console
from rich.table import Table
from rich.text import Text

TASKS = 10
SAMPLE_ID = "s{:06d}"
WRONG_EVERY = 5  # every fifth recorded answer is the wrong one
COLLECT_GOAL_S = 3.0
RATIO_GOAL = 1.5
CACHED_GOAL = 1.2
THROUGHPUT_GOAL = 0.95
RUN_FLAGS = ["-q", "-p", "no:cacheprovider"]
SUBPROCESS_TIMEOUT_S = 600
SUITES = ("core", "hotpath", "throughput", "all", "peers")  # "peers": not in "all" (needs the peers' environments)
SUITE_PARTS = {"core": {"core"}, "hotpath": {"hotpath"}, "throughput": {"hotpath", "throughput"},
               "all": {"core", "hotpath", "throughput"}}  # "hotpath": figures a, b, f; "throughput": d, e
TABLE_WIDTH = 128

SHAPES_SAMPLES = 360
BATCH_SIZE = 8
ONE_SAMPLE = "existence and img_000 and q1"  # -k selecting the first shapes sample alone
EIGHT_SAMPLES = "existence and (img_000 or img_001 or img_002 or img_003)"  # -k selecting 8 samples
XDIST_SELECTION = "existence or count"  # 160 samples
OPENAI_SELECTION = "existence"  # 80 samples, 40 of them "Yes"
SIM_DELAY_S = 0.05
SERVE_START_TIMEOUT_S = 180
CACHED_MODEL = "perf-model"
GENERATED_MARKER = "perf-model-generated"  # the cached model touches this file whenever it is asked
NOISY_SPREAD = 1.3  # a figure whose runs vary more than this (slowest/fastest) is marked noisy

_COLLECTED = re.compile(r"^(\d+) tests? collected in \d")
_SUMMARY = re.compile(r"^\d+ \w+(?:, \d+ \w+)* in \d")
_COUNT = re.compile(r"(\d+) (\w+)")
_BAD_OUTCOMES = ("failed", "error", "errors")


class PerfError(Exception):
    """A run failed or did not produce the results it should have."""


@dataclass(frozen=True)
class Workload:
    """The generated files, and what a run of the benchmark must report."""

    root: Path
    spec: Path
    predictions: Path
    plain_tests: Path
    samples: int
    correct: int
    cached_spec: Path

    @property
    def plugin_outcomes(self) -> dict[str, int]:
        """Summary counts of a plugin run: right answers pass, wrong ones are "incorrect"."""
        return {"passed": self.correct, "incorrect": self.samples - self.correct}


# -- what gets timed ------------------------------------------------------------------------

class Timed(Protocol):
    """Something timed once per repetition: a pytest command line, or the raw loop."""

    label: str
    times: list[float]
    cpu_times: list[float]
    details: list[dict[str, Any]]

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]: ...


@dataclass
class Stats:
    """Medians and mins of what was timed."""

    label: str
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    loads: list[float | None] = field(default_factory=list)  # 1-min load average as each run started

    @property
    def spread(self) -> float:
        """Slowest over fastest wall time: how much the machine's speed moved between runs."""
        return max(self.times) / min(self.times)

    @property
    def median(self) -> float:
        """Median wall time, seconds."""
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        """Shortest wall time, seconds."""
        return min(self.times)

    @property
    def cpu_median(self) -> float:
        """Median CPU time of the process tree, seconds."""
        return statistics.median(self.cpu_times)

    def detail_median(self, key: str) -> float:
        """Median of a per-run figure from the runs' details."""
        return statistics.median(d[key] for d in self.details)

    def detail_min(self, key: str) -> float:
        """Least of a per-run figure from the runs' details."""
        return min(d[key] for d in self.details)


@dataclass
class Case(Stats):
    """One pytest command line to time, and what each of its runs must show.

    `expected`: the exact summary counts, or (an int) the number of results, whatever their
    verdicts, with no failure or error among them. `inspect` reads the run's `--mllm-json`
    (at `json_path`) and returns per-run details, or raises PerfError; `verify`, called after
    each run, does the same for runs without one.
    """

    args: list[str] = field(default_factory=list)
    expected: dict[str, int] | int = 0
    json_path: Path | None = None
    inspect: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    verify: Callable[[], dict[str, Any]] | None = None

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        wall, cpu = run_once(self, cwd, env)
        if self.json_path is not None and self.inspect is not None:
            self.details.append(self.inspect(json.loads(self.json_path.read_text(encoding="utf-8"))))
        if self.verify is not None:
            self.details.append(self.verify())
        return wall, cpu


def make_workload(root: Path, samples: int) -> Workload:
    """Write the benchmark (spec, samples, one PNG), its recorded answers, the plain tests,
    and the cached-model benchmark (a spec over the same samples plus its conftest)."""
    (root / "images").mkdir()
    Image.new("RGB", (64, 64), (200, 40, 40)).save(root / "images" / "red.png")
    correct = 0
    with (root / "samples.jsonl").open("w", encoding="utf-8") as bench, \
            (root / "predictions.jsonl").open("w", encoding="utf-8") as predictions:
        for i in range(samples):
            pair = i // 2
            task = f"task{pair % TASKS}"
            answer, colour = ("yes", "red") if i % 2 == 0 else ("no", "blue")
            sample_id = SAMPLE_ID.format(i)
            bench.write(json.dumps({
                "id": sample_id, "task": task, "image": "images/red.png",
                "question": f"Image {pair}: is the square {colour}?", "answer": answer,
                "answer_type": "yes_no", "pair_group": f"p{pair}",
            }) + "\n")
            wrong = i % WRONG_EVERY == 0
            correct += not wrong
            response = ("No" if answer == "yes" else "Yes") if wrong else answer.capitalize()
            predictions.write(json.dumps({"id": f"{task}::{sample_id}", "response": response}) + "\n")
    spec_text = ("name: perf_bench\nloader: jsonl\ndata: {{root: {root}, file: samples.jsonl}}\nparser: mme\n"
                 "prompt: \"{{question}} Please answer yes or no.\"\nmetrics: [accuracy, accuracy_plus]\n")
    spec = root / "perf_bench.yaml"
    spec.write_text(spec_text.format(root="."), encoding="utf-8")
    plain = root / "test_plain.py"
    plain.write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize(\"i\", range({samples}))\n"
        "def test_x(i):\n    assert i >= 0\n",
        encoding="utf-8",
    )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # rootdir here, no ini from above
    cached = root / "cached"  # its own folder: the plain runs must not load its conftest
    cached.mkdir()
    (cached / "perf_bench.yaml").write_text(spec_text.format(root=".."), encoding="utf-8")
    (cached / "conftest.py").write_text(CACHED_CONFTEST.format(name=CACHED_MODEL, wrong_every=WRONG_EVERY,
                                                               marker=str(root / GENERATED_MARKER)), encoding="utf-8")
    return Workload(root, spec, root / "predictions.jsonl", plain, samples, correct, cached / "perf_bench.yaml")


CACHED_CONFTEST = '''"""A cacheable model that answers instantly: the recorded answers' pattern, every fifth wrong."""


class PerfModel:
    name = "{name}"
    needs_images = False
    identity = "{name}-v1"  # an identity: the plugin caches this model's answers

    def generate(self, requests):
        from pathlib import Path

        from pytest_mllm.sample import Response

        Path({marker!r}).touch()  # a run that asks the model was not fully cached
        answers = []
        for request in requests:
            right = request.sample.answer.capitalize()
            wrong = int(request.sample.id.rpartition("::")[2][1:]) % {wrong_every} == 0  # ids: task::s000123
            answers.append(Response(("No" if right == "Yes" else "Yes") if wrong else right))
        return answers


def pytest_mllm_make_model(spec, config):
    return PerfModel() if spec == "{name}" else None
'''


def child_env(cache_dir: Path) -> dict[str, str]:
    """This environment with bytecode caching on (written under `cache_dir`), offline Hugging Face,
    and no PYTEST_ADDOPTS or OpenAI endpoint settings."""
    drop = ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def outcome_counts(output: str) -> dict[str, int]:
    """Counts of pytest's final summary line, warnings left out: {"passed": 8000, ...} or {"collected": N}."""
    for line in reversed(output.splitlines()):
        line = line.strip("= ")
        collected = _COLLECTED.match(line)
        if collected:
            return {"collected": int(collected.group(1))}
        if _SUMMARY.match(line):
            counts = _COUNT.findall(line.split(" in ")[0])
            return {word: int(n) for n, word in counts if not word.startswith("warning")}
    raise PerfError("no pytest summary line in the output:\n" + output[-2000:])


def check_counts(label: str, counts: dict[str, int], expected: dict[str, int] | int) -> None:
    """PerfError unless the summary shows what `expected` asks (see `Case`)."""
    if isinstance(expected, dict):
        if {word: n for word, n in counts.items() if word != "deselected" or word in expected} != expected:
            raise PerfError(f"{label}: expected {expected}, pytest reported {counts}")
        return
    results = {word: n for word, n in counts.items() if word != "deselected"}
    if any(word in _BAD_OUTCOMES for word in results) or sum(results.values()) != expected:
        raise PerfError(f"{label}: expected {expected} results without errors, pytest reported {counts}")


def children_cpu_s() -> float:
    """User + system CPU seconds of all finished (waited-for) child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def pytest_command(args: Sequence[str]) -> list[str]:
    """`python -m pytest ARGS` with this interpreter."""
    return [sys.executable, "-m", "pytest", *args]


def run_once(case: Case, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `case` in a fresh interpreter; checks its summary line."""
    command = pytest_command(case.args)
    cpu_start = children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    cpu = children_cpu_s() - cpu_start
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise PerfError(f"{case.label}: exit status {proc.returncode} from {' '.join(command)}\n{output[-2000:]}")
    check_counts(case.label, outcome_counts(output), case.expected)
    return elapsed, cpu


def measure(groups: Iterable[Sequence[Timed]], repeat: int, cwd: Path, env: dict[str, str], log: Console) -> None:
    """Run each group of timed things `repeat` times, reversing their order every other time."""
    for group in groups:
        for rep in range(repeat):
            for case in group if rep % 2 == 0 else reversed(group):
                case.loads.append(load_average())
                wall, cpu = case.run(cwd, env)
                case.times.append(wall)
                case.cpu_times.append(cpu)
                log.print(f"  {case.label}: {wall:.2f} s wall, {cpu:.2f} s CPU")


def run_untimed(cases: Sequence[Case], cwd: Path, env: dict[str, str]) -> None:
    """Run several cases at once (warm-ups and set-up, never timed); PerfError if one fails."""
    procs = [(case, subprocess.Popen(pytest_command(case.args), cwd=cwd, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)) for case in cases]
    problems = []
    for case, proc in procs:
        output, _ = proc.communicate(timeout=SUBPROCESS_TIMEOUT_S)
        try:
            if proc.returncode != 0:
                raise PerfError(f"{case.label}: exit status {proc.returncode}\n{output[-2000:]}")
            check_counts(case.label, outcome_counts(output), case.expected)
        except PerfError as exc:
            problems.append(str(exc))
    if problems:
        raise PerfError("\n".join(problems))


# -- a. the raw generate loop ---------------------------------------------------------------

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
            self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_raw-loop", *model], cwd=cwd,
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
        model = HFModel(str(folder or ensure_tiny_llava()), name="raw")  # no num_threads: torch's default, as in the plugin
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
from perf import BATCH_SIZE, ShapesLoop  # noqa: E402

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
    tests.write_text(PLAIN_PYTEST_TESTS.format(scripts=str(Path(__file__).resolve().parent)), encoding="utf-8")
    return tests


# -- f. the fixed cost's floor --------------------------------------------------------------

class Floor(Stats):
    """A fresh interpreter importing torch and transformers and loading the tiny LLaVA, nothing else."""

    def __init__(self, label: str, folder: Path) -> None:
        super().__init__(label)
        self.command = [sys.executable, str(Path(__file__).resolve()), "_floor", str(folder)]

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
    import torch  # noqa: F401
    from transformers import AutoModelForImageTextToText, AutoProcessor

    imported = time.perf_counter()
    AutoProcessor.from_pretrained(str(folder))
    AutoModelForImageTextToText.from_pretrained(str(folder), dtype=torch.float32).eval()
    loaded = time.perf_counter()
    print(json.dumps({"import_s": imported - start, "load_s": loaded - imported}), flush=True)
    return 0


# -- d. a bigger random LLaVA ---------------------------------------------------------------

def build_llava_worker(folder: Path) -> int:
    """The `_build-llava` mode: the tiny LLaVA's recipe, bigger: a 4-layer, 512-wide text model and a
    4-layer vision tower at 64x64 (64 image tokens), with the tiny model's tokenizer."""
    import torch
    from transformers import PreTrainedTokenizerFast

    from pytest_mllm.models.tiny import ensure_tiny_llava, llava_config, llava_processor, untrained_llava

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


# -- e. servers -----------------------------------------------------------------------------

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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


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


# -- inspecting --mllm-json -----------------------------------------------------------------

def records_of(document: dict[str, Any], expected: int) -> list[dict[str, Any]]:
    """The records of a results document, in test order; PerfError unless there are `expected`."""
    records = sorted(document["records"], key=lambda r: r.get("order", 0))
    if len(records) != expected:
        raise PerfError(f"--mllm-json holds {len(records)} records, expected {expected}")
    return records


def generation_details(expected: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Sum of latency_s (generation) and of duration_s (tests' call phases) of a model run."""
    def inspect(document: dict[str, Any]) -> dict[str, Any]:
        records = records_of(document, expected)
        return {"records": len(records),
                "latency_sum_s": sum(r["latency_s"] or 0.0 for r in records),
                "duration_sum_s": sum(r.get("duration_s") or 0.0 for r in records),
                "_responses": [r["response"] for r in records]}
    return inspect


def all_cached(expected: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """PerfError unless every record of the run came from the response cache."""
    def inspect(document: dict[str, Any]) -> dict[str, Any]:
        records = records_of(document, expected)
        fresh = sum(1 for r in records if r.get("cached") is not True)
        if fresh:
            raise PerfError(f"cached re-run: {fresh} of {len(records)} records not answered from the cache")
        return {"records": len(records), "cached": len(records)}
    return inspect


def never_generated(marker: Path) -> Callable[[], dict[str, Any]]:
    """PerfError if the cached model was asked during the run (it touches `marker` when it is)."""
    def verify() -> dict[str, Any]:
        if marker.exists():
            raise PerfError("cached re-run: the model was asked for answers, so some were not cached")
        return {"cached": True}
    return verify


WINDOW_PLUGIN = '''"""Loaded into figure a's plugin runs with -p by scripts/perf.py: in the process, the time from
the end of the first batch's tests to the end of the last test, and the session finish's time (scores,
results JSON, terminal summary)."""

import json
import os
import time

import pytest

_state = {{"tests": 0}}


def pytest_runtest_logfinish(nodeid, location):
    _state["tests"] += 1
    _state["last"] = time.perf_counter()
    if _state["tests"] == {batch}:
        _state["start"] = _state["last"]


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    begin = time.perf_counter()
    result = yield
    if "start" in _state:
        window = {{"window_s": _state["last"] - _state["start"], "finish_s": time.perf_counter() - begin,
                  "tests": _state["tests"]}}
        with open(os.environ["{variable}"], "w", encoding="utf-8") as out:
            json.dump(window, out)
    return result
'''
WINDOW_MODULE = "perf_window"
WINDOW_VARIABLE = "PERF_WINDOW_FILE"


def install_window_plugin(root: Path, env: dict[str, str]) -> None:
    """Write figure a's window plugin under `root`, importable by the runs (it writes `root`/window.json)."""
    folder = root / "perf_plugins"
    folder.mkdir(exist_ok=True)
    (folder / f"{WINDOW_MODULE}.py").write_text(WINDOW_PLUGIN.format(batch=BATCH_SIZE, variable=WINDOW_VARIABLE),
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
        return {"window_s": window["window_s"], "finish_s": window["finish_s"]}
    return read


def windowed(inspect: Callable[[dict[str, Any]], dict[str, Any]], window_file: Path,
             tests: int) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """`inspect`'s details plus the run's in-process window (the file is consumed)."""
    window = window_of(window_file, tests)
    return lambda document: {**inspect(document), **window()}


# -- machine, report ------------------------------------------------------------------------

def machine() -> dict[str, Any]:
    """CPU, cores, OS, versions: what the figures depend on."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        cpuinfo = []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
               platform.processor() or "unknown")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info: dict[str, Any] = {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable,
                            "os": platform.platform(), "python": platform.python_version(), "load": {}}
    for dist in ("pytest", "pytest-xdist", "pytest-mllm", "torch", "transformers"):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = "not installed"
    return info


def load_average() -> float | None:
    """The 1-minute load average, where the OS has one."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def ratio(plugin: Stats, plain: Stats) -> dict[str, float]:
    """plugin/plain of the wall-time medians and mins, and of the CPU-time medians."""
    return {"median": plugin.median / plain.median, "min": plugin.best / plain.best,
            "cpu_median": plugin.cpu_median / plain.cpu_median}


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


def in_test_ratio(fast: Case, slow: Case) -> dict[str, float]:
    """fast/slow of the summed per-record duration_s (the tests' call phases)."""
    return {"median": fast.detail_median("duration_sum_s") / slow.detail_median("duration_sum_s"),
            "min": fast.detail_min("duration_sum_s") / slow.detail_min("duration_sum_s")}


def public(details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-run details without the bulky private entries (answers)."""
    return [{k: v for k, v in d.items() if not k.startswith("_")} for d in details]


def report(info: dict[str, Any], cases: dict[str, Stats], suites: set[str], samples: int, repeat: int,
           console: Console) -> dict[str, Any]:
    """Print the machine notes and the table of figures; return everything for --json."""
    ratios: dict[str, Any] = {}
    met: dict[str, bool] = {}
    goals: dict[str, Any] = {}
    overhead_us: dict[str, float] = {}
    if "core" in suites:
        ratios["run"] = ratio(cases["run_plugin"], cases["run_plain"])
        ratios["run_n2"] = ratio(cases["run_n2_plugin"], cases["run_n2_plain"])
        met.update(collect=cases["collect_plugin"].median < COLLECT_GOAL_S,
                   run=ratios["run"]["median"] <= RATIO_GOAL, run_n2=ratios["run_n2"]["median"] <= RATIO_GOAL)
        goals.update(collect_s=COLLECT_GOAL_S, ratio=RATIO_GOAL)
        for key in ("run", "run_n2"):
            overhead_us[key] = 1e6 * (cases[f"{key}_plugin"].median - cases[f"{key}_plain"].median) / samples
    if "hotpath" in suites:
        ratios["throughput"] = throughput_figures(cases["a_full"], cases["a_one"], cases["a_raw"],  # type: ignore[arg-type]
                                                 cases["a_pytest"])  # type: ignore[arg-type]
        ratios["cached"] = ratio(cases["cached_plugin"], cases["run_plain"])
        ratios["cached_json"] = ratio(cases["cached_json"], cases["run_plain"])
        ratios["fixed"] = ratio(cases["f_plugin8"], cases["f_floor"])
        overhead_us["cached"] = 1e6 * (cases["cached_plugin"].median - cases["run_plain"].median) / samples
        met.update(throughput=ratios["throughput"]["in_process"]["throughput_ratio"]["median"] >= THROUGHPUT_GOAL,
                   cached=ratios["cached"]["median"] <= CACHED_GOAL)
        goals.update(throughput_ratio=THROUGHPUT_GOAL, cached_ratio=CACHED_GOAL)
    if "throughput" in suites:
        ratios["throughput_bigger"] = in_process_figures(cases["a2_full"], cases["a2_raw"])  # type: ignore[arg-type]
        ratios["xdist"] = ratio(cases["d_n2"], cases["d_n1"])
        for server in ("serve", "sim"):
            ratios[f"openai_{server}"] = {**ratio(cases[f"e_{server}_c8"], cases[f"e_{server}_c1"]),
                                          "in_test": in_test_ratio(cases[f"e_{server}_c8"], cases[f"e_{server}_c1"])}
        met.update(xdist=ratios["xdist"]["median"] < 1)
        goals.update(xdist_ratio="< 1 (expected)")

    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['os']}",
                  soft_wrap=True)
    console.print(f"versions: Python {info['python']}, pytest {info['pytest']}, pytest-xdist {info['pytest-xdist']}, "
                  f"pytest-mllm {info['pytest-mllm']}, torch {info['torch']}, transformers {info['transformers']}",
                  soft_wrap=True)
    loads = "".join(f", {suite} suite {before} -> {after}" for suite, (before, after) in info["load"].items())
    console.print(f"1-min load average (before -> after): whole script {info['load_before']} -> {info['load_after']}"
                  f"{loads}", soft_wrap=True)

    figures = {"collect": ["collect_plugin", "collect_plain"], "run": ["run_plugin", "run_plain"],
               "run_n2": ["run_n2_plugin", "run_n2_plain"], "throughput": ["a_full", "a_one", "a_raw", "a_pytest"],
               "throughput_bigger": ["a2_full", "a2_raw"],
               "cached": ["cached_plugin", "cached_json", "run_plain"], "fixed": ["f_plugin8", "f_floor"], "xdist": ["d_n1", "d_n2"],
               "openai_serve": ["e_serve_c1", "e_serve_c8"], "openai_sim": ["e_sim_c1", "e_sim_c8"]}
    spreads = {name: max(cases[key].spread for key in keys) for name, keys in figures.items()
               if all(key in cases for key in keys)}
    noisy = {name: round(spread, 2) for name, spread in spreads.items() if spread > NOISY_SPREAD}

    def verdict(ok: bool, figure: str = "") -> str:
        text = "[green]met[/green]" if ok else "[bold red]missed[/bold red]"
        return text + (f" [yellow]noisy ({noisy[figure]:.1f}x)[/yellow]" if figure in noisy else "")

    def noise(figure: str, text: str) -> str:
        return text + (f" [yellow]noisy ({noisy[figure]:.1f}x)[/yellow]" if figure in noisy else "")

    runs = f"{repeat} run" + ("s" if repeat != 1 else "")
    table = Table(title=f"pytest-mllm speed: {runs} of each figure, medians and mins; c. and b. on {samples:,} samples",
                  title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("wall med", justify="right", no_wrap=True)
    table.add_column("wall min", justify="right", no_wrap=True)
    table.add_column("CPU med", justify="right", no_wrap=True)
    table.add_column("goal", no_wrap=True)

    def seconds(key: str, goal: str = "") -> None:
        case = cases[key]
        table.add_row(case.label, f"{case.median:.2f} s", f"{case.best:.2f} s", f"{case.cpu_median:.2f} s", goal)

    def times(label: str, r: dict[str, float], goal: str = "", unit: str = "x", cpu: bool = True) -> None:
        table.add_row(label, f"{r['median']:.2f}{unit}", f"{r['min']:.2f}{unit}",
                      f"{r['cpu_median']:.2f}{unit}" if cpu and "cpu_median" in r else "", goal)

    def ms(label: str, r: dict[str, float]) -> None:
        table.add_row(label, f"{1e3 * r['median']:.1f} ms", f"{1e3 * r['min']:.1f} ms",
                      f"{1e3 * r['cpu_median']:.1f} ms" if "cpu_median" in r else "", "")

    if "core" in suites:
        seconds("collect_plugin", f"< {COLLECT_GOAL_S:g} s: {verdict(met['collect'], 'collect')}")
        seconds("collect_plain", "(reference)")
        for key, title in (("run", "c2."), ("run_n2", "c3.")):
            table.add_section()
            seconds(f"{key}_plugin")
            seconds(f"{key}_plain")
            times(f"{title} plugin/plain", ratios[key], f"<= {RATIO_GOAL:g}x: {verdict(met[key], key)}")
            table.add_row(f"{title} (plugin-plain)/test", f"{overhead_us[key]:.0f} µs", "", "", "")
    if "hotpath" in suites:
        tp = ratios["throughput"]
        table.add_section()
        seconds("a_full", "(Σ latency_s: " f"{tp['plugin_generation_s']['median']:.2f} s)")
        seconds("a_one", "(one-off: start, load, warm-up)")
        seconds("a_raw", f"(its model load, {tp['raw_load_s']:.1f} s, not counted)")


        steady = tp["in_process"]
        after_first = SHAPES_SAMPLES - BATCH_SIZE
        ms(f"a. plugin per sample, in-process/{after_first}", steady["plugin_s_per_sample"])
        ms(f"a. raw per sample, after batch 1/{after_first}", steady["raw_s_per_sample"])
        times("a. throughput plugin/raw, in-process", steady["throughput_ratio"],
              f">= {THROUGHPUT_GOAL:g}x: {verdict(met['throughput'], 'throughput')}")
        ms(f"a. plain pytest per sample, in-process/{after_first}", steady["plain_pytest_s_per_sample"])
        times("a. throughput plain pytest/raw, in-process", steady["plain_pytest_ratio"],
              "(a pytest test per sample, as shipped)", cpu=False)
        times("a. throughput plugin/plain pytest, in-process", steady["plugin_vs_plain_pytest"], "(information)",
              cpu=False)
        ms("a. plugin per sample (full-one)/359", tp["plugin_s_per_sample"])
        ms("a. raw per sample (loop/360)", tp["raw_s_per_sample"])
        times("a. throughput plugin/raw, differencing", tp["throughput_ratio"], noise("throughput", "(information)"))
        times("a. generation only raw/Σ latency_s", tp["generation_ratio"], "(information)")
        if "run_plain" in cases:
            table.add_section()
            seconds("cached_plugin")
            if "core" not in suites:
                seconds("run_plain")
            times("b. cached plugin/plain", ratios["cached"], f"<= {CACHED_GOAL:g}x: {verdict(met['cached'], 'cached')}")
            table.add_row("b. (plugin-plain)/test", f"{overhead_us['cached']:.0f} µs", "", "", "")
            seconds("cached_json", "(+ results JSON: intervals)")
            times("b2. cached with --mllm-json/plain", ratios["cached_json"], noise("cached", "(information)"))
        table.add_section()
        seconds("f_plugin8")
        seconds("f_floor", "(import torch + transformers, load)")
        times("f. fixed cost plugin/floor", ratios["fixed"], noise("fixed", "(no goal)"))
        table.add_row("f. plugin-floor", f"{cases['f_plugin8'].median - cases['f_floor'].median:.2f} s",
                      f"{cases['f_plugin8'].best - cases['f_floor'].best:.2f} s", "", "")
    if "throughput" in suites:
        table.add_section()
        bigger = ratios["throughput_bigger"]
        seconds("a2_full", "(in-process: after the first batch)")
        seconds("a2_raw")
        ms(f"a2. plugin per sample, in-process/{SHAPES_SAMPLES - BATCH_SIZE}", bigger["plugin_s_per_sample"])
        ms(f"a2. raw per sample, after batch 1/{SHAPES_SAMPLES - BATCH_SIZE}", bigger["raw_s_per_sample"])
        times("a2. throughput plugin/raw, bigger LLaVA", bigger["throughput_ratio"], "(information)", cpu=False)
        table.add_section()
        seconds("d_n1")
        seconds("d_n2")
        times("d. -n 2 / -n 1", ratios["xdist"], f"expect < 1: {verdict(met['xdist'], 'xdist')}")
        for server, title in (("serve", "transformers serve"), ("sim", "SIMULATED 50 ms server")):
            table.add_section()
            seconds(f"e_{server}_c1")
            seconds(f"e_{server}_c8")
            times(f"e. c8/c1, {title}", ratios[f"openai_{server}"], noise(f"openai_{server}", "(no goal)"))
            times(f"e. c8/c1 in-test time, {title}", ratios[f"openai_{server}"]["in_test"], "(Σ duration_s)",
                  cpu=False)
    console.print(table)
    raw_note = " (a. raw: around its loop)" if "hotpath" in suites else ""
    notes = [f"wall: perf_counter around each subprocess{raw_note}; CPU: user + system time of the process tree; "
             "goals apply to wall medians"]
    if noisy:
        notes.append(f"noisy: the runs of a figure varied more than {NOISY_SPREAD:g}x (slowest/fastest): the machine's "
                     "speed changed during it (other load?); see the load averages, and rerun before trusting it")
    if "core" in suites or "hotpath" in suites:
        notes.append(f"plain: pytest on {samples:,} trivial parametrized tests, same flags")
    if "hotpath" in suites:
        tp = ratios["throughput"]
        notes.append(
            f"a. {SHAPES_SAMPLES} shapes samples, batch {BATCH_SIZE}, torch threads {tp['torch_threads']} in both; "
            f"in-process (the goal's figure): plugin = time inside the 360-sample run from the end of the first "
            f"batch's {BATCH_SIZE} tests to the end of the last test, per sample after the first batch (then the "
            f"session finish: scores, results JSON, terminal summary, {tp['in_process']['session_finish_s']['median']:.2f} s); "
            f"raw = its loop minus its first batch, per sample after it; differencing: plugin per "
            f"sample = (360-sample run - 1-sample run)/359 (shared: start, collection, model load, first "
            f"generate); raw = loop time/360 (images {tp['raw_images_s']['median']:.2f} s of it); plugin answers "
            f"differing from the raw loop's: {tp['answers_differing']}; median of the per-repetition ratios "
            f"(adjacent runs): {tp['throughput_ratio']['median_of_repetitions']:.2f}x; plain pytest = the same "
            f"window in plain pytest (-p no:mllm) on {SHAPES_SAMPLES} tests taking their answers from the raw "
            f"loop's batches")
        notes.append(f"b. every timed cached run answered {samples:,} samples without asking the model (b: the model "
                     "leaves no marker file; b2: all records cached: true in --mllm-json); b2 adds the results JSON, "
                     "whose intervals bootstrap every metric over the records")
        floor = cases["f_floor"]
        notes.append(f"f. 8 shapes samples, cache off; floor = import torch + transformers "
                     f"{floor.detail_median('import_s'):.2f} s + load the tiny LLaVA {floor.detail_median('load_s'):.2f} s "
                     "(medians, inside the floor's interpreter)")
    if "throughput" in suites:
        n1 = cases["d_n1"]
        batches = -(-160 // BATCH_SIZE)
        notes.append(f"d. bigger random LLaVA ({info.get('llava_parameters', 0) / 1e6:.1f} M parameters), 160 samples; "
                     f"one batch of {BATCH_SIZE} on 1 thread: {n1.detail_median('latency_sum_s') / batches:.2f} s "
                     "(Σ latency_s of the -n 1 run / batches)")
        sim = cases["e_sim_c1"]
        notes.append(f"e. 80 samples; SIMULATED server = this script's threaded stdlib server, {SIM_DELAY_S * 1e3:.0f} ms "
                     f"per request (ideal in-test time c1 {80 * SIM_DELAY_S:.1f} s, c8 {10 * SIM_DELAY_S:.1f} s; "
                     f"measured c1 {sim.detail_median('duration_sum_s'):.2f} s, "
                     f"c8 {cases['e_sim_c8'].detail_median('duration_sum_s'):.2f} s)")
    for note in notes:
        console.print(note, soft_wrap=True)
    return {
        "machine": info, "suites": sorted(suites), "samples": samples, "repeat": repeat,
        "goals": goals, "met": met,
        "timings_s": {key: {"label": c.label, "command": ["pytest", *c.args] if isinstance(c, Case) else ["raw loop"],
                            "median": c.median, "min": c.best, "runs": c.times, "cpu_median": c.cpu_median,
                            "cpu_runs": c.cpu_times, "loads": c.loads, "details": public(c.details)}
                      for key, c in cases.items()},
        "ratios": ratios, "overhead_us_per_sample": overhead_us, "noisy": noisy,
    }


# -- peers: pytest-mllm, lmms-eval and VLMEvalKit on one model and one data set -------------

PEER_TASKS = ("existence", "count", "position", "color", "posters", "celebrity", "scene", "landmark", "artwork",
              "OCR", "commonsense_reasoning", "numerical_calculation", "text_translation", "code_reasoning")
PEER_IMAGES = 56  # two questions each: 112 samples
PEER_COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (230, 210, 40)}
PEER_SHAPES = ("circle", "square", "triangle")
PEER_GOALS = {"cold": 0.4, "cached": 0.1}  # pytest-mllm / peer, wall medians, like against like
PEER_MODES = ("cold", "cached")
PEER_DATASET = "PeerMME"  # the TSV's name in $LMUData, a dataset VLMEvalKit builds from --data-config
PEER_TASK = "peer_mme"  # the lmms-eval task written into an --include_path folder
PEER_MODEL = "TinyLLaVA"  # the name the VLMEvalKit driver registers in VLMEvalKit's model table
PEER_ENV_VARS = {"lmms_eval_python": "PERF_LMMS_EVAL_PYTHON", "vlmeval_python": "PERF_VLMEVAL_PYTHON",
                 "vlmeval_src": "PERF_VLMEVAL_SRC"}
MLLM_PYTHON_VAR = "PERF_MLLM_PYTHON"  # pytest-mllm's own environment for the peers suite (default: this one)
PEER_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
PEER_OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1", "WANDB_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@dataclass(frozen=True)
class PeerSample:
    """One question, keyed as pytest-mllm's MME loader keys it: task::image::qN."""

    id: str
    task: str
    image: str
    question: str
    answer: str


@dataclass(frozen=True)
class PeerData:
    """The same samples three ways: an MME release folder, an lmms-eval parquet file, a VLMEvalKit TSV."""

    mme: Path
    parquet: Path
    tsv: Path
    samples: list[PeerSample]


def make_peer_data(root: Path, images: int) -> PeerData:
    """Write `images` PNGs with two yes/no questions each (Yes first) over MME's 14 subtasks, in
    MME's folder layout, as lmms-lab/MME's parquet columns and as VLMEvalKit's MME TSV columns (a
    pair's second row names the first row's index instead of repeating the image, as MME.tsv does).
    Rows are in pytest-mllm's collection order: a row's position is its sample's key for the peers.
    PNG, not JPEG: VLMEvalKit writes each decoded image back to a file named by `image_path`, which
    would re-encode a JPEG (lossy); with PNG all three tools see the same pixels."""
    import base64
    import csv
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import ImageDraw

    rng = random.Random(0)
    mme = root / "MME_Benchmark_release_version"
    by_task: dict[str, list[tuple[PeerSample, bytes]]] = {task: [] for task in PEER_TASKS}
    for i in range(images):
        task, name = PEER_TASKS[i % len(PEER_TASKS)], f"{i:04d}.png"
        size = (rng.randint(64, 128), rng.randint(48, 96))
        colour, other = rng.sample(sorted(PEER_COLOURS), 2)
        shape = rng.choice(PEER_SHAPES)
        image = Image.new("RGB", size, tuple(rng.randint(200, 250) for _ in range(3)))
        x, y, r = rng.randint(16, size[0] - 16), rng.randint(16, size[1] - 16), rng.randint(6, 14)
        draw, fill = ImageDraw.Draw(image), PEER_COLOURS[colour]
        if shape == "circle":
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif shape == "square":
            draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
        else:
            draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=fill)
        folder = mme / task
        folder.mkdir(parents=True, exist_ok=True)
        image.save(folder / name)
        pairs = [(colour, "Yes"), (other, "No")]
        (folder / f"{i:04d}.txt").write_text(
            "".join(f"Is there a {c} {shape} in the image? Please answer yes or no.\t{a}\n" for c, a in pairs),
            encoding="utf-8")
        blob = (folder / name).read_bytes()
        for number, (c, answer) in enumerate(pairs, start=1):
            question = f"Is there a {c} {shape} in the image? Please answer yes or no."
            by_task[task].append((PeerSample(f"{task}::{name}::q{number}", task, name, question, answer), blob))
    rows = [row for task in PEER_TASKS for row in by_task[task]]
    samples = [sample for sample, _ in rows]

    parquet = root / "MME" / "data" / "test-00000-of-00001.parquet"
    parquet.parent.mkdir(parents=True)
    string = {"dtype": "string", "_type": "Value"}
    features = {"question_id": string, "image": {"_type": "Image"}, "question": string, "answer": string,
                "category": string}
    table = pa.table({"question_id": [f"{s.task}/{s.image}" for s in samples],
                      "image": [{"bytes": blob, "path": s.image} for s, blob in rows],
                      "question": [s.question for s in samples], "answer": [s.answer for s in samples],
                      "category": [s.task for s in samples]})
    pq.write_table(table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})}),
                   parquet)

    tsv = root / "LMUData" / f"{PEER_DATASET}.tsv"
    tsv.parent.mkdir()
    with tsv.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(["index", "image", "question", "answer", "category", "image_path"])
        for index, (s, blob) in enumerate(rows):
            image = base64.b64encode(blob).decode("ascii") if s.id.endswith("q1") else str(index - 1)
            writer.writerow([index, image, s.question, s.answer, s.task, f"{s.task}/{s.image}"])
    return PeerData(mme, parquet, tsv, samples)


PEER_LMMS_TASK = """\
task: {task}
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {parquet}
test_split: test
output_type: generate_until
doc_to_visual: !function {module}.mme_doc_to_visual
doc_to_text: !function {module}.mme_doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 16
  temperature: 0
  top_p: 1.0
  num_beams: 1
  do_sample: false
process_results: !function {module}.mme_process_results
metric_list:
  - metric: mme_perception_score
    aggregation: !function {module}.mme_aggregate_results
    higher_is_better: true
  - metric: mme_cognition_score
    aggregation: !function {module}.mme_aggregate_results
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: ""
metadata:
  - version: 0.0
"""
# lmms-eval's own MME functions, imported by the task above: the prompt is the question as written
# (empty pre and post prompts), as pytest-mllm's bundled mme spec renders it.
PEER_LMMS_MODULE = """\
from lmms_eval.tasks.mme.utils import (mme_aggregate_results, mme_doc_to_text, mme_doc_to_visual,
                                       mme_process_results)
"""

PEER_VLMEVAL_LOADING = "peer driver: loading the model"  # printed by the driver's model class
PEER_VLMEVAL_DRIVER = '''\
"""Run VLMEvalKit's run.py with a transformers LLaVA class added to its model table.

argv: MODEL_FOLDER RUN_PY MODEL_NAME [run.py arguments...]. VLMEvalKit's HF LLaVA wrappers load
LLaVA-NeXT, or move the model to CUDA in float16; this class loads LlavaForConditionalGeneration
on the CPU in float32 and answers one message at a time, as VLMEvalKit calls it.

VLMEvalKit imports its whole model and data set zoo at start, and some of those modules import
torchvision (or timm) at their top; neither is installed (torchvision would pull another torch).
Placeholder modules stand in for them: importing works, using one raises. transformers decides
first, for real, that torchvision is absent, so its processors take their PIL code paths.
"""
import importlib.abc
import importlib.machinery
import runpy
import sys
import types
from functools import partial

import torch
import transformers.utils.import_utils as availability
from PIL import Image

ABSENT = {"torchvision", "timm"}
for name in ABSENT:
    check = getattr(availability, f"is_{name}_available", None)
    if check is not None and check():  # cached by transformers from here on
        ABSENT.discard(name)


class Placeholder:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return Placeholder(f"{self._name}.{attribute}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}: not installed in this environment")

    def __mro_entries__(self, bases):
        return (object,)


class AbsentModule(types.ModuleType):
    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return Placeholder(f"{self.__name__}.{attribute}")


class AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ABSENT:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return AbsentModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


sys.meta_path.append(AbsentFinder())  # last: consulted only for what is not installed

from vlmeval.config import supported_VLM  # noqa: E402
from vlmeval.vlm.base import BaseModel  # noqa: E402


class LocalLlava(BaseModel):
    INSTALL_REQ = False
    INTERLEAVE = False

    def __init__(self, model_path, max_new_tokens=16, **kwargs):
        from transformers import AutoProcessor, LlavaForConditionalGeneration

        print("{loading}", flush=True)
        self.processor = AutoProcessor.from_pretrained(model_path)
        self.model = LlavaForConditionalGeneration.from_pretrained(model_path, dtype=torch.float32).eval()
        self.max_new_tokens = max_new_tokens

    def generate_inner(self, message, dataset=None):
        content, images = [], []
        for part in message:
            if part["type"] == "image":
                content.append({"type": "image"})
                images.append(Image.open(part["value"]).convert("RGB"))
            else:
                content.append({"type": "text", "text": part["value"]})
        prompt = self.processor.apply_chat_template([{"role": "user", "content": content}],
                                                    add_generation_prompt=True, tokenize=False)
        inputs = self.processor(text=prompt, images=images or None, return_tensors="pt")
        with torch.inference_mode():
            output = self.model.generate(**inputs, do_sample=False, max_new_tokens=self.max_new_tokens)
        return self.processor.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True).strip()


folder, run_py, name = sys.argv[1:4]
supported_VLM[name] = partial(LocalLlava, model_path=folder)
sys.argv = [run_py, *sys.argv[4:]]
sys.path.insert(0, str(__import__("pathlib").Path(run_py).parent))
runpy.run_path(run_py, run_name="__main__")
'''


@dataclass(frozen=True)
class PeerPaths:
    """Where the peers live: each virtual environment's interpreter, and VLMEvalKit's source tree."""

    lmms_eval_python: Path | None
    vlmeval_python: Path | None
    vlmeval_src: Path | None

    @classmethod
    def find(cls, args: argparse.Namespace) -> tuple["PeerPaths", list[str]]:
        """The paths from the options, else the environment; and why a peer cannot run, if it cannot."""
        found: dict[str, Path | None] = {}
        for key, variable in PEER_ENV_VARS.items():
            raw = getattr(args, key) or os.environ.get(variable)
            found[key] = Path(raw).expanduser() if raw else None
        paths, missing = cls(**found), []
        if paths.lmms_eval_python is None or not paths.lmms_eval_python.is_file():
            missing.append(f"lmms-eval: no interpreter at --lmms-eval-python or ${PEER_ENV_VARS['lmms_eval_python']} "
                           f"({paths.lmms_eval_python or 'not set'})")
        if paths.vlmeval_python is None or not paths.vlmeval_python.is_file():
            missing.append(f"VLMEvalKit: no interpreter at --vlmeval-python or ${PEER_ENV_VARS['vlmeval_python']} "
                           f"({paths.vlmeval_python or 'not set'})")
        elif paths.vlmeval_src is None or not (paths.vlmeval_src / "run.py").is_file():
            missing.append(f"VLMEvalKit: no run.py in --vlmeval-src or ${PEER_ENV_VARS['vlmeval_src']} "
                           f"({paths.vlmeval_src or 'not set'})")
        return paths, missing


class PeerTool(ABC):
    """One evaluation tool: its command line for a run, and the answers that run wrote."""

    name = ""

    def __init__(self, root: Path, data: PeerData, model: Path) -> None:
        self.root, self.data, self.model = root, data, model

    @abstractmethod
    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The command and the extra environment of one run; `run_dir` is new and empty. Modes:
        "cold" (nothing kept), "fill" (the untimed run that fills the state of "cached" runs), "cached"."""

    @abstractmethod
    def answers(self, run_dir: Path) -> dict[str, str]:
        """Each sample's answer (by pytest-mllm's sample id) as the run in `run_dir` wrote it."""

    @abstractmethod
    def check(self, output: str, mode: str, run_dir: Path) -> None:
        """PerfError unless the run's output shows a complete run, and a cached run reused its state."""


class OursTool(PeerTool):
    """pytest-mllm: the bundled mme spec on the MME folder, `hf:` loading the model folder."""

    name = "pytest-mllm"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path) -> None:
        super().__init__(root, data, model)
        self.python = python

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cache = self.root / "state" / "ours-cache" if mode != "cold" else run_dir / "cache"
        return [str(self.python), "-m", "pytest", f"--mllm=hf:{self.model}", "--mllm-bench=mme",
                f"--mllm-data={self.data.mme}", f"--mllm-cache-dir={cache}", f"--mllm-json={run_dir / 'results.json'}",
                *RUN_FLAGS], {}

    def answers(self, run_dir: Path) -> dict[str, str]:
        document = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        return {r["id"]: r["response"] for r in records_of(document, len(self.data.samples))}

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_counts(self.name, outcome_counts(output), len(self.data.samples))
        if mode == "cached":
            all_cached(len(self.data.samples))(json.loads((run_dir / "results.json").read_text(encoding="utf-8")))


def check_no_failure(tool: str, output: str, marker: str) -> None:
    """PerfError when a peer logged `marker`: both peers log a failed evaluation and still exit 0."""
    if marker in output:
        at = output.index(marker)
        raise PerfError(f"{tool} reported a failure (exit status 0):\n{output[max(0, at - 500):at + 2500]}")


class LmmsEvalTool(PeerTool):
    """lmms-eval: its `llava_hf` model on a parquet task in an --include_path folder; cached runs add
    --use_cache (its response cache) and keep the datasets cache of the parquet file."""

    name = "lmms-eval"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path) -> None:
        super().__init__(root, data, model)
        self.python = python
        self.tasks = root / "lmms-tasks"
        self.tasks.mkdir()
        module = f"{PEER_TASK}_utils"
        (self.tasks / f"{PEER_TASK}.yaml").write_text(
            PEER_LMMS_TASK.format(task=PEER_TASK, parquet=data.parquet, module=module), encoding="utf-8")
        (self.tasks / f"{module}.py").write_text(PEER_LMMS_MODULE, encoding="utf-8")

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cached = mode != "cold"
        command = [str(self.python), "-m", "lmms_eval", "--model", "llava_hf",
                   "--model_args", f"pretrained={self.model},dtype=float32,device_map=cpu", "--tasks", PEER_TASK,
                   "--include_path", str(self.tasks), "--batch_size", "1", "--device", "cpu",
                   "--output_path", str(run_dir / "out"), "--log_samples"]
        if cached:
            command += ["--use_cache", str(self.root / "state" / "lmms-cache")]
        hf_home = self.root / "state" / "lmms-hf" if cached else run_dir / "hf"
        return command, {"HF_HOME": str(hf_home)}

    def answers(self, run_dir: Path) -> dict[str, str]:
        files = sorted((run_dir / "out").rglob(f"*samples_{PEER_TASK}*.jsonl"))
        if not files:
            raise PerfError(f"{self.name}: no samples file under {run_dir / 'out'}")
        answers = {}
        for line in files[-1].read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            response = row["filtered_resps"]  # a string, or a list of them in other lmms-eval versions
            while isinstance(response, list):
                response = response[0]
            answers[self.data.samples[int(row["doc_id"])].id] = response
        return answers

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_no_failure(self.name, output, "Error during evaluation")
        hits = re.search(r"ResponseCache stats: (\d+) hits", output)
        if mode == "cached" and (hits is None or int(hits.group(1)) != len(self.data.samples)):
            raise PerfError(f"{self.name}, cached: its response cache answered "
                            f"{hits.group(1) if hits else 'no'} of {len(self.data.samples)} requests")


class VLMEvalTool(PeerTool):
    """VLMEvalKit: run.py on the TSV in $LMUData (built as an ImageYORNDataset by --data-config),
    with a transformers LLaVA class registered by a driver; cached runs add --reuse (it reuses the
    prediction file of the last run in its work folder) and keep the images it decoded."""

    name = "VLMEvalKit"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path, src: Path) -> None:
        super().__init__(root, data, model)
        self.python, self.run_py = python, src / "run.py"
        self.driver = root / "vlmeval_driver.py"
        self.driver.write_text(PEER_VLMEVAL_DRIVER.replace("{loading}", PEER_VLMEVAL_LOADING), encoding="utf-8")

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cached = mode != "cold"
        state = self.root / "state"
        lmudata = state / "vlmeval-lmudata" if cached else run_dir / "lmudata"
        if not (lmudata / self.data.tsv.name).is_file():
            lmudata.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.data.tsv, lmudata / self.data.tsv.name)
        work = state / "vlmeval-work" if cached else run_dir / "work"
        command = [str(self.python), str(self.driver), str(self.model), str(self.run_py), PEER_MODEL,
                   "--data", PEER_DATASET, "--model", PEER_MODEL, "--work-dir", str(work),
                   "--data-config", json.dumps({PEER_DATASET: {"class": "ImageYORNDataset", "dataset": PEER_DATASET}}),
                   "--judge", "exact_matching"]
        return command + (["--reuse"] if cached else []), {"LMUData": str(lmudata)}

    def answers(self, run_dir: Path) -> dict[str, str]:
        from openpyxl import load_workbook
        from openpyxl.utils.escape import unescape  # xlsx stores control characters as _xHHHH_

        work = run_dir / "work" if (run_dir / "work").is_dir() else self.root / "state" / "vlmeval-work"
        files = sorted(work.rglob(f"{PEER_MODEL}_{PEER_DATASET}.xlsx"), key=lambda p: p.stat().st_mtime)
        if not files:
            raise PerfError(f"{self.name}: no prediction file under {work}")
        sheet = load_workbook(files[-1], read_only=True).active
        rows = sheet.iter_rows(values_only=True)
        header = list(next(rows))
        index, prediction = header.index("index"), header.index("prediction")
        return {self.data.samples[int(row[index])].id: "" if row[prediction] is None else unescape(str(row[prediction]))
                for row in rows}

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_no_failure(self.name, output, "combination failed")
        if mode == "cached" and PEER_VLMEVAL_LOADING in output:
            raise PerfError(f"{self.name}, cached: it loaded the model (inference was not skipped by --reuse)")


@dataclass
class PeerRun(Stats):
    """One tool in one mode, timed as a whole process; every run's answers are kept."""

    tool: PeerTool | None = None
    mode: str = "cold"
    answer_runs: list[dict[str, str]] = field(default_factory=list)

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        assert self.tool is not None
        run_dir = self.tool.root / "runs" / f"{re.sub(r'[^A-Za-z0-9]+', '-', self.label)}-{len(self.answer_runs)}"
        run_dir.mkdir(parents=True)
        command, extra = self.tool.command(self.mode, run_dir)
        cpu_start = children_cpu_s()
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=cwd, env={**env, **extra}, capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_S)
        elapsed, cpu = time.perf_counter() - start, children_cpu_s() - cpu_start
        output = proc.stdout + proc.stderr
        (run_dir / "output.log").write_text(output, encoding="utf-8")
        if proc.returncode != 0:
            raise PerfError(f"{self.label}: exit status {proc.returncode} from {' '.join(command)}\n{output[-3000:]}")
        self.tool.check(output, self.mode, run_dir)
        answers = self.tool.answers(run_dir)
        if len(answers) != len(self.tool.data.samples):
            raise PerfError(f"{self.label}: {len(answers)} answers, expected {len(self.tool.data.samples)}")
        self.answer_runs.append(answers)
        return elapsed, cpu


def peer_agreement(runs: dict[str, PeerRun], samples: list[PeerSample]) -> dict[str, Any]:
    """Answers compared sample by sample (after stripping white space): each pair of tools, all
    of them, and whether each tool answered alike in all its runs, cold and cached."""
    first = {run.tool.name: {k: v.strip() for k, v in run.answer_runs[0].items()}
             for run in runs.values() if run.mode == "cold" and run.tool is not None}
    tools = list(first)
    pairs: dict[str, Any] = {}
    for i, a in enumerate(tools):
        for b in tools[i + 1:]:
            differ = [s.id for s in samples if first[a].get(s.id) != first[b].get(s.id)]
            pairs[f"{a} = {b}"] = {"equal": len(samples) - len(differ), "differ": differ[:5],
                                   "examples": [{"id": d, a: first[a].get(d), b: first[b].get(d)} for d in differ[:3]]}
    all_equal = sum(1 for s in samples if len({first[t].get(s.id) for t in tools}) == 1)
    stable = {}
    for name in tools:
        mine = [{k: v.strip() for k, v in answers.items()} for run in runs.values() if run.tool is not None
                and run.tool.name == name for answers in run.answer_runs]
        stable[name] = all(answers == mine[0] for answers in mine)
    return {"samples": len(samples), "pairs": pairs, "all_equal": all_equal, "stable_across_runs": stable}


def run_peers(args: argparse.Namespace, paths: PeerPaths, tmp: Path, info: dict[str, Any],
              log: Console) -> tuple[dict[str, PeerRun], PeerData]:
    """Build the model folder and the data once, warm every tool up (untimed: bytecode, OS file cache,
    the cached runs' state), then time the cold runs and the cached runs, interleaved."""
    from pytest_mllm.models.tiny import ensure_tiny_llava

    model = ensure_tiny_llava(tmp / "tiny-llava")  # save_pretrained output: every tool loads this folder
    data = make_peer_data(tmp, args.peer_images)
    (tmp / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp / "state").mkdir()
    env = {**child_env(tmp / "pycache"), **PEER_THREADS, **PEER_OFFLINE, "HF_HOME": str(tmp / "hf")}
    ours = Path(args.mllm_python or os.environ.get(MLLM_PYTHON_VAR) or sys.executable).expanduser()
    if not ours.is_file():
        raise PerfError(f"pytest-mllm: no interpreter at --mllm-python or ${MLLM_PYTHON_VAR} ({ours})")
    info["mllm_python"] = str(ours)
    tools: list[PeerTool] = [OursTool(tmp, data, model, ours)]
    if paths.lmms_eval_python is not None:
        tools.append(LmmsEvalTool(tmp, data, model, paths.lmms_eval_python))
    if paths.vlmeval_python is not None and paths.vlmeval_src is not None:
        tools.append(VLMEvalTool(tmp, data, model, paths.vlmeval_python, paths.vlmeval_src))
    runs = {f"{tool.name} {mode}": PeerRun(f"{tool.name}, {mode}", tool=tool, mode=mode)
            for mode in PEER_MODES for tool in tools}
    log.print(f"set-up, not recorded: one cached-mode run of each tool, one after another ({len(data.samples)} samples)")
    for tool in tools:
        warm = PeerRun(f"{tool.name} warm-up", tool=tool, mode="fill")
        wall, _ = warm.run(tmp, env)
        log.print(f"  {warm.label}: {wall:.1f} s")
    info["load"]["peers"] = [load_average(), None]
    measure([[runs[f"{tool.name} {mode}"] for tool in tools] for mode in PEER_MODES], args.repeat, tmp, env, log)
    info["load"]["peers"][1] = load_average()
    info["peer_samples"] = len(data.samples)
    info["peer_versions"] = peer_versions(paths)
    return runs, data


def peer_versions(paths: PeerPaths) -> dict[str, str]:
    """lmms-eval's, VLMEvalKit's, torch's and transformers' versions in each peer environment."""
    probe = "import importlib.metadata as m, json, sys; print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))"
    found = {}
    for label, python, dist in (("lmms-eval", paths.lmms_eval_python, "lmms-eval"),
                                ("VLMEvalKit", paths.vlmeval_python, "vlmeval")):
        if python is None:
            continue
        proc = subprocess.run([str(python), "-c", probe, dist, "torch", "transformers"], capture_output=True,
                              text=True, timeout=60)
        found[label] = ", ".join(f"{dist} {v}" for dist, v in json.loads(proc.stdout).items()) \
            if proc.returncode == 0 else f"unknown ({proc.stderr.strip()[-200:]})"
    return found


def peer_report(info: dict[str, Any], runs: dict[str, PeerRun], data: PeerData, repeat: int,
                console: Console) -> dict[str, Any]:
    """Print the peers' table and the answers' agreement; return everything for --json."""
    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['os']}",
                  soft_wrap=True)
    console.print(f"versions: Python {info['python']}, pytest-mllm {info['pytest-mllm']}, torch {info['torch']}, "
                  f"transformers {info['transformers']}; " + "; ".join(
                      f"{peer}: {found}" for peer, found in info["peer_versions"].items()), soft_wrap=True)
    console.print(f"pytest-mllm ran from {info['mllm_python']}", soft_wrap=True)
    before, after = info["load"]["peers"]
    console.print(f"1-min load average (before -> after): whole script {info['load_before']} -> "
                  f"{info['load_after']}, timed runs {before} -> {after}", soft_wrap=True)
    tools = [run.tool.name for run in runs.values() if run.mode == "cold" and run.tool is not None]
    ratios: dict[str, dict[str, float]] = {}
    met: dict[str, bool] = {}
    table = Table(title=f"pytest-mllm and its peers: {len(data.samples)} MME-layout samples, greedy, 16 new tokens, "
                        f"1 thread each; {repeat} runs of each, medians and mins", title_justify="left")
    for column in ("figure", "wall med", "wall min", "CPU med", "goal"):
        table.add_column(column, justify="left" if column in ("figure", "goal") else "right", no_wrap=True)
    for mode in PEER_MODES:
        table.add_section()
        ours = runs[f"pytest-mllm {mode}"]
        for name in tools:
            run = runs[f"{name} {mode}"]
            spread = f" [yellow]noisy ({run.spread:.1f}x)[/yellow]" if run.spread > NOISY_SPREAD else ""
            table.add_row(run.label, f"{run.median:.2f} s", f"{run.best:.2f} s", f"{run.cpu_median:.2f} s", spread)
        for name in tools[1:]:
            key = f"{mode}_vs_{name}"
            ratios[key] = ratio(ours, runs[f"{name} {mode}"])
            met[key] = ratios[key]["median"] <= PEER_GOALS[mode]
            verdict = "[green]met[/green]" if met[key] else "[bold red]missed[/bold red]"
            r = ratios[key]
            table.add_row(f"pytest-mllm / {name}, {mode}", f"{r['median']:.2f}x", f"{r['min']:.2f}x",
                          f"{r['cpu_median']:.2f}x", f"<= {PEER_GOALS[mode]:g}x: {verdict}")
    agreement = peer_agreement(runs, data.samples)
    console.print(table)
    n = agreement["samples"]
    parts = [f"{pair}: {result['equal']}/{n}" for pair, result in agreement["pairs"].items()]
    console.print(f"answers equal, sample by sample (first cold run of each, stripped): {', '.join(parts)}; "
                  f"all {len(tools)} alike: {agreement['all_equal']}/{n}", soft_wrap=True)
    for pair, result in agreement["pairs"].items():
        for example in result["examples"]:
            console.print(f"  differs ({pair}): {example}", soft_wrap=True)
    console.print("each tool answered alike in all its runs: " + ", ".join(
        f"{name} {'yes' if same else 'NO'}" for name, same in agreement["stable_across_runs"].items()), soft_wrap=True)
    console.print("cold: nothing reused (pytest-mllm: an empty response cache folder; lmms-eval: no --use_cache, an "
                  "empty HF_HOME, so the parquet file is converted again; VLMEvalKit: a new work folder and $LMUData, so "
                  "it decodes the images again); cached: pytest-mllm's response cache, lmms-eval's --use_cache and its "
                  "datasets cache, VLMEvalKit's --reuse of its prediction file and its decoded images, all filled by an "
                  "untimed run. wall: each tool's whole process (start, imports, model load, data, answers, scores)",
                  soft_wrap=True)
    return {
        "machine": info, "suites": ["peers"], "samples": len(data.samples), "repeat": repeat, "goals": PEER_GOALS,
        "met": met, "ratios": ratios, "answers": agreement,
        "timings_s": {key: {"label": run.label, "median": run.median, "min": run.best, "runs": run.times,
                            "cpu_median": run.cpu_median, "cpu_runs": run.cpu_times, "loads": run.loads}
                      for key, run in runs.items()},
    }


def peers_main(args: argparse.Namespace, console: Console, log: Console) -> int:
    """The peers suite: skipped (exit 0, with the reason) when no peer environment is found."""
    paths, missing = PeerPaths.find(args)
    if len(missing) == 2:
        console.print("peers suite skipped: " + "; ".join(missing) + " (setup: docs/peers.md)", soft_wrap=True)
        return 0
    for reason in missing:  # one peer is missing: the other still runs
        log.print(f"not measured: {reason}", soft_wrap=True)
        if reason.startswith("lmms-eval"):
            paths = PeerPaths(None, paths.vlmeval_python, paths.vlmeval_src)
        else:
            paths = PeerPaths(paths.lmms_eval_python, None, None)
    info = machine()
    info["load_before"] = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-peers-") as tmp:
        try:
            runs, data = run_peers(args, paths, Path(tmp), info, log)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(Text("error: ", style="bold red") + Text(str(exc)))
            return 2
    info["total_s"] = round(time.perf_counter() - started, 1)
    info["load_after"] = load_average()
    document = peer_report(info, runs, data, args.repeat, console)
    console.print(f"total time of this script: {info['total_s']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0


# -- main -----------------------------------------------------------------------------------

def core_cases(work: Workload) -> dict[str, Case]:
    """Figures c, c2, c3: collection, and runs against plain pytest, without and with -n 2."""
    bench = [work.spec.name, f"--mllm=replay:{work.predictions.name}"]
    plain = [work.plain_tests.name]
    n = work.samples
    return {
        "collect_plugin": Case("c. collect, plugin", args=[*bench, "--collect-only", "-q"], expected={"collected": n}),
        "collect_plain": Case("c. collect, plain", args=[*plain, "--collect-only", "-q"], expected={"collected": n}),
        "run_plugin": Case("c2. run, plugin", args=[*bench, *RUN_FLAGS], expected=work.plugin_outcomes),
        "run_plain": Case("c2. run, plain", args=[*plain, *RUN_FLAGS], expected={"passed": n}),
        "run_n2_plugin": Case("c3. run -n 2, plugin", args=[*bench, *RUN_FLAGS, "-n", "2"], expected=work.plugin_outcomes),
        "run_n2_plain": Case("c3. run -n 2, plain", args=[*plain, *RUN_FLAGS, "-n", "2"], expected={"passed": n}),
    }


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


def run_suites(args: argparse.Namespace, tmp: Path, info: dict[str, Any], log: Console) -> dict[str, Stats]:
    """Set up and warm up (untimed, several things at once), then time every figure of the chosen suites."""
    suites = SUITE_PARTS[args.suite]
    work = make_workload(tmp, args.samples)
    env = child_env(tmp / "pycache")
    install_window_plugin(work.root, env)
    cases: dict[str, Stats] = {}
    core = core_cases(work)
    if "core" in suites:
        cases.update(core)
    else:
        cases["run_plain"] = core["run_plain"]  # b.'s reference
    raw: RawLoop | None = None
    raw_bigger: RawLoop | None = None
    serve: TransformersServe | None = None
    clock = time.perf_counter()
    elapsed = info["elapsed_s"] = {}

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        elapsed[name] = round(now - clock, 1)
        clock = now

    try:
        # Stage 1: fills the bytecode caches (torch and transformers included) and the response cache.
        stage: list[Case] = []
        if "core" in suites:
            bench = [work.spec.name, f"--mllm=replay:{work.predictions.name}"]
            stage += [Case("core warm-up", args=[*bench, *RUN_FLAGS, "-n", "2", "-k", SAMPLE_ID.format(1)],
                           expected={"passed": 1}),  # sample 1 has the right answer; xdist workers deselect quietly
                      core["collect_plain"]]
        if "throughput" in suites:
            cases.update(throughput_cases(tmp / "llava-bigger"))
        if "hotpath" in suites:
            cases.update(hotpath_cases(work))
            stage += [Case("throughput warm-up", expected=1, args=["--mllm=tiny-llava", "--mllm-bench=shapes",
                                                                     "--mllm-cache=off", *RUN_FLAGS, "-k", ONE_SAMPLE,
                                                                     "-n", "2"]),
                      Case("cache fill", expected=work.plugin_outcomes, args=cases["cached_plugin"].args)]  # type: ignore[attr-defined]
        log.print("set-up, not recorded: " + ", ".join(c.label for c in stage) + " (at once)")
        run_untimed(stage, work.root, env)
        (work.root / GENERATED_MARKER).unlink(missing_ok=True)  # the fill asked the model; timed runs must not
        if "hotpath" in suites:
            # Stage 2: the raw loop loads the tiny LLaVA, the bigger LLaVA is built, transformers serve starts.
            log.print("set-up, not recorded: raw loop's model load" + (", bigger LLaVA build, transformers serve "
                                                                       "start (at once)" if "throughput" in suites else ""))
            from pytest_mllm.models.tiny import ensure_tiny_llava

            tiny = ensure_tiny_llava()  # built by the warm-up run
            raw = RawLoop("a. raw generate loop, 360", work.root, env, tmp / "raw-loop.log")
            cases["a_raw"] = raw
            cases["f_floor"] = Floor("f. floor: imports + model load", tiny)
        if "throughput" in suites:
            build = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "_build-llava",
                                      str(tmp / "llava-bigger")], cwd=tmp, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            serve = TransformersServe(tiny, tmp, env)
            output, _ = build.communicate(timeout=SUBPROCESS_TIMEOUT_S)
            if build.returncode != 0:
                raise PerfError(f"building the bigger LLaVA failed:\n{output[-2000:]}")
            info["llava_parameters"] = json.loads(output.strip().splitlines()[-1])["parameters"]
            raw_bigger = RawLoop("a2. raw generate loop, 360, bigger LLaVA", work.root, env, tmp / "raw-loop-bigger.log",
                                 folder=tmp / "llava-bigger")
            cases["a2_raw"] = raw_bigger
            serve.wait_healthy()
            raw_bigger.wait_ready()
        if raw is not None:
            raw.wait_ready()
        lap("set-up")

        if "core" in suites:
            info["load"]["core"] = [load_average(), None]
            run_group: list[Timed] = [cases["run_plugin"], cases["run_plain"]]
            if "hotpath" in suites:
                run_group += [cases["cached_plugin"], cases["cached_json"]]  # b. shares c2.'s plain runs
            measure([[cases["collect_plugin"], cases["collect_plain"]], run_group,
                     [cases["run_n2_plugin"], cases["run_n2_plain"]]], args.repeat, work.root, env, log)
            info["load"]["core"][1] = load_average()
            lap("core")
        if "hotpath" in suites:
            assert raw is not None
            info["load"]["hotpath"] = [load_average(), None]
            groups: list[Sequence[Timed]] = [[cases["a_full"], cases["a_one"], raw, cases["a_pytest"]]]
            if "core" not in suites:
                groups.append([cases["cached_plugin"], cases["cached_json"], cases["run_plain"]])
            groups.append([cases["f_plugin8"], cases["f_floor"]])
            measure(groups, args.repeat, work.root, env, log)
            raw.close()
            info["load"]["hotpath"][1] = load_average()
            lap("hotpath")
        if "throughput" in suites:
            assert serve is not None
            info["load"]["throughput"] = [load_average(), None]
            assert raw_bigger is not None
            measure([[cases["a2_full"], raw_bigger], [cases["d_n1"], cases["d_n2"]]], args.repeat, work.root, env, log)
            raw_bigger.close()
            sim = SimServer()
            try:
                sim_cases = openai_cases(tmp, "sim", "sim", sim.base_url, "SIMULATED server",
                                         {"passed": 40, "incorrect": 40})
                cases.update(sim_cases)
                warm = Case("warm-up", expected=1, args=[*sim_cases["e_sim_c8"].args[:-1], "-k", ONE_SAMPLE])  # type: ignore[attr-defined]
                run_untimed([warm], work.root, env)
                measure([list(sim_cases.values())], args.repeat, work.root, env, log)
            finally:
                sim.stop()
            serve_cases = openai_cases(tmp, "serve", str(tiny), serve.base_url, "transformers serve", 80)
            cases.update(serve_cases)
            warm = Case("warm-up", expected=1, args=[*serve_cases["e_serve_c8"].args[:-1], "-k", ONE_SAMPLE])  # type: ignore[attr-defined]
            run_untimed([warm], work.root, env)  # the server loads its model on the first request
            measure([list(serve_cases.values())], args.repeat, work.root, env, log)
            info["load"]["throughput"][1] = load_average()
            lap("throughput")
    finally:
        for loop in (raw, raw_bigger):
            if loop is not None:
                loop.close()
        if serve is not None:
            serve.stop()
    return cases


def main(argv: list[str] | None = None) -> int:
    """Generate the workloads, time every figure, print the table; 2 on a failed or miscounted run."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_raw-loop"] and len(argv) <= 2:
        return raw_loop_worker(Path(argv[1]) if len(argv) == 2 else None)
    if argv[:1] == ["_build-llava"] and len(argv) == 2:
        return build_llava_worker(Path(argv[1]))
    if argv[:1] == ["_floor"] and len(argv) == 2:
        return floor_worker(Path(argv[1]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=SUITES, default="all",
                        help="core: collection and runs vs plain pytest; hotpath: a, b, f; throughput: a to f; "
                             "all (default)")
    parser.add_argument("--samples", type=int, default=10_000, help="size of the synthetic benchmark (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON here")
    peers = parser.add_argument_group("peers suite (docs/peers.md)")
    peers.add_argument("--mllm-python", metavar="PATH",
                       help=f"python of a virtual environment with pytest-mllm[hf] alone, as each peer has only its own "
                            f"(else ${MLLM_PYTHON_VAR}, else this interpreter)")
    peers.add_argument("--lmms-eval-python", metavar="PATH",
                       help=f"python of lmms-eval's virtual environment (else ${PEER_ENV_VARS['lmms_eval_python']})")
    peers.add_argument("--vlmeval-python", metavar="PATH",
                       help=f"python of VLMEvalKit's virtual environment (else ${PEER_ENV_VARS['vlmeval_python']})")
    peers.add_argument("--vlmeval-src", metavar="DIR",
                       help=f"VLMEvalKit's source tree, holding run.py (else ${PEER_ENV_VARS['vlmeval_src']})")
    peers.add_argument("--peer-images", type=int, default=PEER_IMAGES,
                       help=f"images of the MME-layout data, two questions each (default {PEER_IMAGES})")
    args = parser.parse_args(argv)
    if args.samples < 2 or args.repeat < 1:
        parser.error("--samples must be at least 2 and --repeat at least 1")
    if args.peer_images < len(PEER_TASKS):  # VLMEvalKit's MME scores need every subtask
        parser.error(f"--peer-images must be at least {len(PEER_TASKS)}, one per MME subtask")

    console, log = Console(), Console(stderr=True)
    if console.width < TABLE_WIDTH:  # not a terminal (80 columns) or a narrow one: the table needs more
        console = Console(width=TABLE_WIDTH)
    if args.suite == "peers":
        return peers_main(args, console, log)
    info = machine()
    info["load_before"] = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-perf-") as tmp:
        try:
            cases = run_suites(args, Path(tmp), info, log)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(Text("error: ", style="bold red") + Text(str(exc)))
            return 2
        finally:
            shutil.rmtree(Path(tmp) / "pycache", ignore_errors=True)
    info["total_s"] = round(time.perf_counter() - started, 1)
    info["load_after"] = load_average()
    suites = SUITE_PARTS[args.suite]
    document = report(info, cases, suites, args.samples, args.repeat, console)
    parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in info["elapsed_s"].items())
    console.print(f"total time of this script: {info['total_s']:.0f} s ({parts})")
    if args.json:
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
