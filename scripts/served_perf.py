"""A served model's run against raw clients of the same SDK: throughput, CPU per sample, same requests.

    python scripts/served_perf.py [--samples 2000 10000] [--concurrency 8 32 128] [--repeat 2]
                                  [--images 100] [--plugin-args="-n 2"] [--source DIR] [--json out.json]
                                  [--profile DIR]

Everything runs on loopback against `perf/loopback.py`'s server, a process of its own answering
any chat completion at once ("Yes" or "No" by its request body's digest), checked alone first: a
load generator (`_blast`, raw asyncio streams, 32 keep-alive connections for --blast-seconds) gives
its rate, and its CPU per request is reported for every run.

The workload: --samples yes/no questions in a JSONL benchmark (ten tasks), each sample pointing
at one of --images distinct 64x64 PNGs (drawn, seeded), prompt "{question} Please answer yes or
no.", 16 new tokens. For each sample count and each concurrency, three clients send it, each in a
fresh process, in interleaved order (A B C, then C B A, ...) for --repeat repetitions:

  plugin   `pytest <spec> --mllm=openai:perf-served --mllm-base-url=URL --mllm-concurrency=C
           --mllm-cache=off -q -p no:cacheprovider --mllm-json=...` (plus --plugin-args);
  async    `AsyncOpenAI`, C coroutines (`perf/raw_clients.py`);
  threads  the sync `OpenAI` client on C threads;
  floor    pytest's own floor: plain pytest (`-p no:mllm`) running as many trivial parametrized tests, the
           same flags; no request (its "throughput" is tests per second of its wall time).

Each run is checked: the server received exactly --samples requests whose digests equal those of
every other run of that sample count (the same request bytes), every answer each client reports
equals the other clients' (the plugin's from its --mllm-json), and pytest's summary shows no
failure or error. Figures per run:

  throughput  requests / the server's window (first request in to last answer out): how fast the
              server is fed, the same yardstick for every client (end-to-end: samples / process wall,
              start-up included, is shown beside it);
  CPU         user + system seconds of the client's process tree, per sample (start-up included);
  load        the 1-minute load average as the run starts, and the cores the REST of the machine kept
              busy during the run (/proc/stat's busy time less the client's and the server's CPU):
              on a shared machine, a run with others busy is slower for it.

Ratios are plugin / raw of the medians: throughput against each raw client and the faster one (goal
>= 0.9), CPU per sample against each (goal <= 1.2, against the lower), and the CPU per sample of the
plugin, the lower raw client and the floor side by side: what the plugin adds to the raw client's
work, against what pytest alone costs per test. Every process has OMP_NUM_THREADS=1.
`--source DIR` runs the plugin of another checkout (put first on PYTHONPATH; the run checks that it
imported it): the figures before a change. `--profile DIR` then runs the plugin once more per
configuration in process under yappi (if installed; CPU time of every thread), writes its stats
there (pstats format) and prints where the time goes: the share under a few functions (the
refill, the HTTP request, pytest's per-test protocol ...) and the functions of most own time. A
deterministic profiler slows small Python calls most: read the shares, not the seconds.
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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from perf.loopback import MODEL, LoopbackServer, blast_worker, server_worker
from perf.raw_clients import RAW_KINDS, raw_worker
from perf.timing import PerfError, check_counts, child_env, children_cpu_s, load_average, machine, outcome_counts

ENTRY = Path(__file__).resolve()
ROOT = ENTRY.parents[1]
PROMPT = "{question} Please answer yes or no."
MAX_TOKENS = 16
TASKS = 10
CLIENTS = ("plugin", *RAW_KINDS, "floor")
# --source: pytest started with the editable install's import hook left out, so the checkout first on PYTHONPATH
# is the package imported (an editable install's finder would otherwise win over PYTHONPATH)
FROM_SOURCE = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith("
               "'__editable__')]; import pytest; sys.exit(pytest.main(sys.argv[1:]))")
THROUGHPUT_GOAL = 0.9
CPU_GOAL = 1.2
RUN_TIMEOUT_S = 900
WARM_SAMPLES = 40
BLAST_CONNECTIONS = 32
PROFILED = ("pytest_mllm/harness/batching.py:refill", "pytest_mllm/engine/pipeline.py:refill",  # the refill, before and now
            "pytest_mllm/engine/pipeline.py:room", "pytest_mllm/harness/batching.py:_upcoming",
            "pytest_mllm/harness/batching.py:_send_ahead", "pytest_mllm/engine/evaluator.py:evaluate",
            "pytest_mllm/engine/chat.py:chat", "pytest_mllm/engine/images.py:load_image",
            "pytest_mllm/engine/chat.py:image_content", "_pytest/runner.py:runtestprotocol")


@dataclass
class Workload:
    folder: Path
    spec: Path
    description: Path  # what the raw clients read
    samples: int


def make_workload(folder: Path, samples: int, images: int) -> Workload:
    """The JSONL benchmark, its images and the raw clients' description of it."""
    from PIL import Image, ImageDraw

    (folder / "images").mkdir(parents=True)
    rng = random.Random(0)
    for n in range(images):
        image = Image.new("RGB", (64, 64), tuple(rng.randrange(256) for _ in range(3)))
        draw = ImageDraw.Draw(image)
        x, y = rng.randrange(40), rng.randrange(40)
        draw.rectangle((x, y, x + 20, y + 20), fill=tuple(rng.randrange(256) for _ in range(3)))
        image.save(folder / "images" / f"i{n:04d}.png")
    with (folder / "samples.jsonl").open("w", encoding="utf-8") as handle:
        for n in range(samples):
            handle.write(json.dumps({"id": f"s{n:06d}", "task": f"task{n % TASKS}",
                                     "image": f"images/i{n % images:04d}.png",
                                     "question": f"Question {n}: is there a square?",
                                     "answer": "yes" if n % 2 == 0 else "no", "answer_type": "yes_no"}) + "\n")
    spec = folder / "served_bench.yaml"
    spec.write_text(f"name: served_bench\nloader: jsonl\ndata: {{root: ., file: samples.jsonl}}\nparser: mme\n"
                    f"prompt: \"{PROMPT}\"\nmax_new_tokens: {MAX_TOKENS}\nmetrics: [accuracy]\n", encoding="utf-8")
    (folder / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (folder / "test_floor.py").write_text(f"import pytest\n\n\n@pytest.mark.parametrize('n', range({samples}))\n"
                                          "def test_floor(n):\n    assert n >= 0\n", encoding="utf-8")
    description = folder / "workload.json"
    description.write_text(json.dumps({"root": str(folder), "samples": "samples.jsonl", "prompt": PROMPT,
                                       "model": MODEL, "max_tokens": MAX_TOKENS}), encoding="utf-8")
    return Workload(folder, spec, description, samples)


def machine_busy_s() -> float:
    """CPU seconds every core of the machine has been busy since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text(encoding="utf-8").splitlines()[0].split()[1:]
    ticks = [int(f) for f in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


@dataclass
class Runs:
    """The runs of one client on one configuration."""

    client: str
    samples: int
    concurrency: int
    walls: list[float] = field(default_factory=list)
    windows: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    server_cpus: list[float] = field(default_factory=list)
    loads: list[float | None] = field(default_factory=list)
    others: list[float] = field(default_factory=list)  # cores the rest of the machine kept busy

    @property
    def throughput(self) -> float:
        """Requests per second of the server's window (median run)."""
        return self.samples / statistics.median(self.windows)

    @property
    def end_to_end(self) -> float:
        return self.samples / statistics.median(self.walls)

    @property
    def cpu_ms(self) -> float:
        """CPU milliseconds per sample (median run)."""
        return 1000 * statistics.median(self.cpus) / self.samples

    @property
    def server_cpu_us(self) -> float:
        return 1e6 * statistics.median(self.server_cpus) / self.samples

    def as_dict(self) -> dict[str, Any]:
        return {"client": self.client, "samples": self.samples, "concurrency": self.concurrency,
                "throughput_rps": self.throughput, "end_to_end_rps": self.end_to_end, "cpu_ms_per_sample": self.cpu_ms,
                "server_cpu_us_per_request": self.server_cpu_us, "walls_s": self.walls, "windows_s": self.windows,
                "cpus_s": self.cpus, "load_1min": self.loads, "others_cores": self.others}


class Bench:
    """The server, the environment, and one run of any client with its checks."""

    def __init__(self, tmp: Path, args: argparse.Namespace, log: Console) -> None:
        self.tmp = tmp
        self.args = args
        self.log = log
        self.env = child_env(tmp / "pycache")
        self.plugin_env = dict(self.env)
        if args.source:
            bundled = args.source / "pytest_mllm" / "benchmarks"  # an install maps the package's benchmarks/ there
            if not bundled.exists() and (args.source / "benchmarks").is_dir():
                bundled.symlink_to(Path("..") / "benchmarks")
            self.plugin_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(args.source),
                                                                          self.env.get("PYTHONPATH")]))
            check = FROM_SOURCE.replace("import pytest; sys.exit(pytest.main(sys.argv[1:]))",
                                        "import pytest_mllm; print(pytest_mllm.__file__)")
            imported = subprocess.run([sys.executable, "-c", check], cwd=tmp, env=self.plugin_env, capture_output=True,
                                      text=True).stdout.strip()
            if not imported.startswith(str(args.source.resolve())):
                raise RuntimeError(f"--source: the plugin is imported from {imported!r}, not from {args.source}")
        self.server = LoopbackServer(ENTRY, tmp, self.env)
        self.digests: dict[int, str] = {}
        self.answers: dict[int, dict[str, str]] = {}

    def command(self, client: str, work: Workload, concurrency: int, out: Path) -> tuple[list[str], dict[str, str]]:
        if client == "plugin":
            start = [sys.executable, "-c", FROM_SOURCE] if self.args.source else [sys.executable, "-m", "pytest"]
            return ([*start, work.spec.name, f"--mllm=openai:{MODEL}",
                     f"--mllm-base-url={self.server.base_url}", f"--mllm-concurrency={concurrency}", "--mllm-cache=off",
                     "-q", "-p", "no:cacheprovider", f"--mllm-json={out}", *self.args.plugin_args.split()],
                    self.plugin_env)
        if client == "floor":
            return [sys.executable, "-m", "pytest", "test_floor.py", "-q", "-p", "no:cacheprovider", "-p", "no:mllm"], self.env
        return ([sys.executable, str(ENTRY), "_raw", client, str(work.description), self.server.base_url,
                 str(concurrency), str(out)], self.env)

    def run(self, client: str, work: Workload, concurrency: int, runs: Runs | None) -> None:
        """One run, checked; its figures appended to `runs` (None: untimed)."""
        out = self.tmp / f"{client}-{work.samples}-{concurrency}.json"
        out.unlink(missing_ok=True)
        command, env = self.command(client, work, concurrency, out)
        self.server.reset()
        load = load_average()
        cpu_before, busy_before = children_cpu_s(), machine_busy_s()
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=work.folder, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        wall = time.perf_counter() - start
        cpu, busy = children_cpu_s() - cpu_before, machine_busy_s() - busy_before
        stats = self.server.stats()
        output = proc.stdout + proc.stderr
        label = f"{client}, {work.samples} samples, concurrency {concurrency}"
        if proc.returncode != 0:
            raise PerfError(f"{label}: exit status {proc.returncode}\n{output[-3000:]}")
        if client == "floor":  # no request: its "window" is its wall time
            check_counts(label, outcome_counts(output), {"passed": work.samples})
            stats = {**stats, "window_s": wall}
        elif client == "plugin":
            check_counts(label, outcome_counts(output), work.samples)
            document = json.loads(out.read_text(encoding="utf-8"))
            self._check(label, work, stats, {r["id"]: r["response"] for r in document["records"]})
        else:
            self._check(label, work, stats, json.loads(out.read_text(encoding="utf-8")))
        if runs is None:
            return
        runs.walls.append(wall)
        runs.windows.append(stats["window_s"])
        runs.cpus.append(cpu)
        runs.server_cpus.append(stats["cpu_s"])
        runs.loads.append(load)
        runs.others.append(max(0.0, (busy - cpu - stats["cpu_s"]) / wall))
        self.log.print(f"  {label}: {work.samples / stats['window_s']:.0f} requests/s (window {stats['window_s']:.2f} s, "
                       f"wall {wall:.2f} s), CPU {1000 * cpu / work.samples:.2f} ms/sample, server "
                       f"{1e6 * stats['cpu_s'] / work.samples:.0f} µs/request; load {load}, others "
                       f"{runs.others[-1]:.2f} cores")

    def _check(self, label: str, work: Workload, stats: dict[str, Any], answers: dict[str, str]) -> None:
        if stats["requests"] != work.samples:
            raise PerfError(f"{label}: the server received {stats['requests']} requests, expected {work.samples}")
        if len(answers) != work.samples:
            raise PerfError(f"{label}: {len(answers)} answers, expected {work.samples}")
        known = self.digests.setdefault(work.samples, stats["requests_digest"])
        if known != stats["requests_digest"]:
            raise PerfError(f"{label}: the requests differ from the first run's (digest {stats['requests_digest']} "
                            f"against {known})")
        first = self.answers.setdefault(work.samples, answers)
        if first != answers:
            differing = sorted(k for k in first.keys() | answers.keys() if first.get(k) != answers.get(k))
            raise PerfError(f"{label}: {len(differing)} answers differ from the first run's, e.g. {differing[:3]}")

    def server_alone(self, work: Workload) -> dict[str, Any]:
        """The server's rate under the load generator, with one of the workload's request bodies."""
        body = self.tmp / "blast-body.json"
        body.write_text(json.dumps(_body(work)), encoding="utf-8")
        self.server.reset()
        proc = subprocess.run([sys.executable, str(ENTRY), "_blast", str(self.server.port), str(body),
                               str(BLAST_CONNECTIONS), str(self.args.blast_seconds)], env=self.env,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            raise PerfError(f"the load generator failed:\n{proc.stderr[-2000:]}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        stats = self.server.stats()
        return {"requests_per_s": result["answers"] / result["seconds"], "connections": BLAST_CONNECTIONS,
                "seconds": result["seconds"], "server_cpu_us_per_request": 1e6 * stats["cpu_s"] / max(1, stats["requests"]),
                "load_1min": load_average()}

    def profile(self, work: Workload, concurrency: int, folder: Path) -> dict[str, Any]:
        """One plugin run under yappi (CPU time of every thread, in process): its stats file, the share of the
        CPU time under each of PROFILED, and the functions of most own time."""
        try:
            import yappi  # noqa: F401
        except ImportError:
            raise PerfError("--profile needs yappi (pip install yappi)") from None
        out = self.tmp / "profiled.json"
        command, env = self.command("plugin", work, concurrency, out)
        stats = folder / f"plugin-{work.samples}-c{concurrency}.pstat"
        runner = ("import sys, yappi, pytest; yappi.set_clock_type('cpu'); yappi.start(); code = pytest.main(sys.argv[2:]); "
                  "yappi.stop(); yappi.get_func_stats().save(sys.argv[1], type='pstat'); sys.exit(code)")
        if self.args.source:
            runner = FROM_SOURCE.split("import pytest;")[0] + runner
        self.server.reset()
        proc = subprocess.run([sys.executable, "-c", runner, str(stats), *command[3:]], cwd=work.folder, env=env,
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if proc.returncode != 0:
            raise PerfError(f"the profiled run failed:\n{(proc.stdout + proc.stderr)[-2000:]}")
        return summarize_profile(stats)


def summarize_profile(path: Path, top: int = 12) -> dict[str, Any]:
    """Shares of the profiled CPU time: under each of PROFILED (cumulative), and the `top` functions' own."""
    import pstats

    entries = pstats.Stats(str(path)).stats  # type: ignore[attr-defined]
    total = sum(own for _, _, own, _, _ in entries.values())
    under = {}
    for name in PROFILED:
        where, _, function = name.rpartition(":")
        under[name] = sum(cumulative for (file, _, func), (_, _, _, cumulative, _) in entries.items()
                          if file.endswith(where) and (func == function or func.endswith("." + function))) / total
    ranked = sorted(entries.items(), key=lambda kv: -kv[1][2])[:top]
    return {"cpu_s": total, "under": under,
            "self": [(f"{_short(file)}:{func}", own / total) for (file, _, func), (_, _, own, _, _) in ranked]}


def _short(path: str) -> str:
    for marker in ("site-packages/", "lib/python3.11/", str(ROOT) + "/"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def _body(work: Workload) -> dict[str, Any]:
    """A chat-completion request body like the workload's first one (for the load generator)."""
    import base64

    folder = work.folder
    first = json.loads((folder / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    image = base64.b64encode((folder / first["image"]).read_bytes()).decode("ascii")
    return {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{image}"}},
        {"type": "text", "text": PROMPT.format(question=first["question"])}]}],
        "model": MODEL, "max_tokens": MAX_TOKENS, "temperature": 0.0}


def ratios(groups: dict[tuple[int, int], dict[str, Runs]]) -> list[dict[str, Any]]:
    rows = []
    for (samples, concurrency), runs in groups.items():
        plugin = runs["plugin"]
        raws = [runs[k] for k in RAW_KINDS if k in runs]
        if not raws:
            continue
        faster = max(raws, key=lambda r: r.throughput)
        row: dict[str, Any] = {"samples": samples, "concurrency": concurrency, "faster_raw": faster.client}
        for raw in raws:
            row[f"throughput_vs_{raw.client}"] = plugin.throughput / raw.throughput
            row[f"end_to_end_vs_{raw.client}"] = plugin.end_to_end / raw.end_to_end
            row[f"cpu_vs_{raw.client}"] = plugin.cpu_ms / raw.cpu_ms
        row["throughput_vs_faster"] = plugin.throughput / faster.throughput
        row["cpu_vs_faster"] = plugin.cpu_ms / faster.cpu_ms
        row["cpu_vs_lowest"] = plugin.cpu_ms / min(r.cpu_ms for r in raws)
        row["met"] = row["throughput_vs_faster"] >= THROUGHPUT_GOAL and row["cpu_vs_lowest"] <= CPU_GOAL
        row["cpu_ms"] = {r.client: r.cpu_ms for r in runs.values()}  # the floor's too, where it ran
        rows.append(row)
    return rows


def print_tables(console: Console, groups: dict[tuple[int, int], dict[str, Runs]], rows: list[dict[str, Any]]) -> None:
    table = Table(title="runs (medians)")
    for column in ("samples", "conc.", "client", "req/s (server window; floor: tests/s)", "req/s end to end", "CPU ms/sample",
                   "server µs/req", "load 1-min", "others' cores (max)"):
        table.add_column(column, justify="right")
    for (samples, concurrency), runs in groups.items():
        for client, r in runs.items():
            loads = [x for x in r.loads if x is not None]
            table.add_row(str(samples), str(concurrency), client, f"{r.throughput:.0f}", f"{r.end_to_end:.0f}",
                          f"{r.cpu_ms:.2f}", f"{r.server_cpu_us:.0f}",
                          f"{min(loads):.2f}-{max(loads):.2f}" if loads else "-", f"{max(r.others):.2f}")
    console.print(table)
    table = Table(title=f"plugin / raw (goals: throughput >= {THROUGHPUT_GOAL} x the faster, CPU <= {CPU_GOAL} x)")
    for column in ("samples", "conc.", "thr. vs async", "thr. vs threads", "thr. vs faster", "e2e vs faster",
                   "CPU vs async", "CPU vs threads", "CPU ms: plugin, lowest raw, pytest floor", "met"):
        table.add_column(column, justify="right")
    for row in rows:
        faster, cpu = row["faster_raw"], row["cpu_ms"]
        table.add_row(str(row["samples"]), str(row["concurrency"]),
                      *(f"{row.get(k, float('nan')):.2f}" for k in ("throughput_vs_async", "throughput_vs_threads",
                                                                    "throughput_vs_faster")),
                      f"{row[f'end_to_end_vs_{faster}']:.2f}",
                      *(f"{row.get(k, float('nan')):.2f}" for k in ("cpu_vs_async", "cpu_vs_threads")),
                      f"{cpu['plugin']:.2f}, {min(v for k, v in cpu.items() if k in RAW_KINDS):.2f}, "
                      f"{cpu.get('floor', float('nan')):.2f}", "yes" if row["met"] else "NO")
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_server"]:
        return server_worker(Path(argv[1]))
    if argv[:1] == ["_blast"]:
        return blast_worker(int(argv[1]), Path(argv[2]), int(argv[3]), float(argv[4]))
    if argv[:1] == ["_raw"]:
        return raw_worker(argv[1], Path(argv[2]), argv[3], int(argv[4]), Path(argv[5]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[2000, 10_000])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--repeat", type=int, default=2, help="runs of each client per configuration (default 2)")
    parser.add_argument("--clients", nargs="+", choices=CLIENTS, default=list(CLIENTS))
    parser.add_argument("--images", type=int, default=100, help="distinct images of the workload (default 100)")
    parser.add_argument("--plugin-args", default="", help="more arguments of the plugin's runs (e.g. \"-n 2\")")
    parser.add_argument("--source", type=Path, help="run the plugin of this checkout (the figures before a change): a copy "
                        "of a commit (git archive COMMIT | tar -x -C DIR); its bundled benchmarks are linked into its package")
    parser.add_argument("--blast-seconds", type=float, default=3.0, help="the server's check alone (default 3 s)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="then profile one plugin run per configuration")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if "plugin" not in args.clients:
        parser.error("--clients must include plugin")
    console, log = Console(width=140), Console(stderr=True, width=200)
    info = machine()
    info["load_before"] = load_average()
    started = time.perf_counter()
    groups: dict[tuple[int, int], dict[str, Runs]] = {}
    profiles: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-served-") as name:
        tmp = Path(name)
        try:
            bench = Bench(tmp, args, log)
        except RuntimeError as exc:
            log.print(f"error: {exc}")
            return 2
        try:
            warm = make_workload(tmp / "warm", WARM_SAMPLES, min(args.images, WARM_SAMPLES))
            for client in args.clients:  # bytecode caches filled, untimed
                bench.run(client, warm, 8, None)
            info["server_alone"] = bench.server_alone(warm)
            log.print(f"server alone: {info['server_alone']['requests_per_s']:.0f} requests/s "
                      f"({BLAST_CONNECTIONS} connections), {info['server_alone']['server_cpu_us_per_request']:.0f} µs "
                      "CPU per request")
            for samples in args.samples:
                work = make_workload(tmp / f"w{samples}", samples, args.images)
                for concurrency in args.concurrency:
                    runs = groups[(samples, concurrency)] = {c: Runs(c, samples, concurrency) for c in args.clients}
                    order = list(args.clients)
                    for rep in range(args.repeat):
                        for client in order if rep % 2 == 0 else reversed(order):
                            bench.run(client, work, concurrency, runs[client])
                    if args.profile:
                        args.profile.mkdir(parents=True, exist_ok=True)
                        profiles[f"{samples}/{concurrency}"] = bench.profile(work, concurrency, args.profile)
            info["server_alone_after"] = bench.server_alone(warm)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(f"error: {exc}")
            return 2
        finally:
            bench.server.stop()
            shutil.rmtree(tmp / "pycache", ignore_errors=True)
    info["load_after"] = load_average()
    info["total_s"] = round(time.perf_counter() - started, 1)
    rows = ratios(groups)
    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable); Python "
                  f"{info['python']}, pytest {info['pytest']}, pytest-xdist {info['pytest-xdist']}", soft_wrap=True)
    alone, after = info["server_alone"], info["server_alone_after"]
    console.print(f"server alone: {alone['requests_per_s']:.0f} requests/s before the runs, "
                  f"{after['requests_per_s']:.0f} after ({BLAST_CONNECTIONS} connections, load {alone['load_1min']} / "
                  f"{after['load_1min']}); 1-min load: {info['load_before']} -> {info['load_after']}; "
                  f"{args.repeat} runs per client and configuration, interleaved; plugin args: "
                  f"{args.plugin_args or '(none)'}{'; plugin from ' + str(args.source) if args.source else ''}",
                  soft_wrap=True)
    print_tables(console, groups, rows)
    for key, summary in profiles.items():
        console.print(f"profile, plugin, {key} (samples/concurrency): {summary['cpu_s']:.1f} s CPU under yappi, all threads")
        console.print("  under: " + ", ".join(f"{name.split(':')[-1]} {share:.1%}"
                                              for name, share in summary["under"].items()))
        for name, share in summary["self"]:
            console.print(f"  {share:6.1%}  {name}")
    console.print(f"total time of this script: {info['total_s']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "runs": [r.as_dict() for g in groups.values()
                                                                   for r in g.values()],
                                         "ratios": rows, "profiles": profiles}, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
