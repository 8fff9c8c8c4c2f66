"""The shared timing helpers of every suite: a timed pytest command line (`Case`), medians and mins
(`Stats`), the ABBA repetitions (`measure`), summary-line checks, the children's CPU time, the
pinned threads, the machine's description and the load average."""

from __future__ import annotations

import json
import os
import platform
import re
import resource
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, Sequence

from rich.console import Console

ENTRY = Path(__file__).resolve().parents[1] / "perf.py"  # the command line; its worker modes run subprocesses
RUN_FLAGS = ["-q", "-p", "no:cacheprovider"]
THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}  # every timed process: runs comparable on a shared machine
SUBPROCESS_TIMEOUT_S = 600
NOISY_SPREAD = 1.3  # a figure whose runs vary more than this (slowest/fastest) is marked noisy
_COLLECTED = re.compile(r"^(\d+) tests? collected in \d")
_SUMMARY = re.compile(r"^\d+ \w+(?:, \d+ \w+)* in \d")
_COUNT = re.compile(r"(\d+) (\w+)")
_BAD_OUTCOMES = ("failed", "error", "errors")


class PerfError(Exception):
    """A run failed or did not produce the results it should have."""


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


def child_env(cache_dir: Path) -> dict[str, str]:
    """This environment with bytecode caching on (written under `cache_dir`), offline Hugging Face,
    one thread (`THREADS`: torch's intra-op threads follow OMP_NUM_THREADS), and no PYTEST_ADDOPTS
    or OpenAI endpoint settings."""
    drop = ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "OPENAI_BASE_URL", "OPENAI_API_KEY")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
    env["HF_HUB_OFFLINE"] = "1"
    env.update(THREADS)
    return env


def pin_threads(torch: Any) -> None:
    """One intra-op thread in this process, as `THREADS` gives the timed subprocesses."""
    torch.set_num_threads(1)


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


def public(details: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-run details without the bulky private entries (answers)."""
    return [{k: v for k, v in d.items() if not k.startswith("_")} for d in details]
