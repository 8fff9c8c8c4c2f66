"""Speed of pytest-mllm on a large benchmark, against plain pytest on as many trivial tests.

    python scripts/perf.py [--samples 10000] [--repeat 3] [--json out.json]

Builds a synthetic yes/no benchmark in a temporary folder (JSONL samples in ten tasks, in
pairs scored by accuracy+, every image path pointing at one small real PNG; recorded
answers for `--mllm=replay:`, a fifth of them wrong) and times, each in a fresh
`python -m pytest` subprocess:

  a. collecting it (`--collect-only -q`); goal: under 3 s;
  b. running it (`-q -p no:cacheprovider`) against plain pytest running as many trivial
     parametrized tests with the same flags; goal: plugin/plain at most 1.5x;
  c. the same two runs with `-n 2` (pytest-xdist).

Plugin and plain runs alternate (ABBA order) so that drift in the machine's speed hits both
alike; each figure is the median (and min) of --repeat runs, in wall time, with the CPU
time (user + system) of the whole process tree, xdist workers included, beside it: on a
shared machine CPU time varies less than wall time. The subprocesses write Python and
assertion-rewrite bytecode caches (into the temporary folder, even where
PYTHONDONTWRITEBYTECODE is set, as on a developer's machine), filled by unrecorded warm-up
runs first (a plugin run of one selected sample with -n 2, a plain collection). Every
run's final summary line is checked: a wrong number of results is an error (exit status 2).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Iterable

from PIL import Image
from rich.console import Console
from rich.table import Table
from rich.text import Text

TASKS = 10
SAMPLE_ID = "s{:06d}"
WRONG_EVERY = 5  # every fifth recorded answer is the wrong one
COLLECT_GOAL_S = 3.0
RATIO_GOAL = 1.5
RUN_FLAGS = ["-q", "-p", "no:cacheprovider"]
SUBPROCESS_TIMEOUT_S = 600
_COLLECTED = re.compile(r"^(\d+) tests? collected in \d")
_SUMMARY = re.compile(r"^\d+ \w+(?:, \d+ \w+)* in \d")
_COUNT = re.compile(r"(\d+) (\w+)")


class PerfError(Exception):
    """A pytest run failed or did not produce the results it should have."""


@dataclass(frozen=True)
class Workload:
    """The generated files, and what a run of the benchmark must report."""

    root: Path
    spec: Path
    predictions: Path
    plain_tests: Path
    samples: int
    correct: int

    @property
    def plugin_outcomes(self) -> dict[str, int]:
        """Summary counts of a plugin run: right answers pass, wrong ones are "incorrect"."""
        return {"passed": self.correct, "incorrect": self.samples - self.correct}


@dataclass
class Case:
    """One pytest command line to time, and the summary counts each of its runs must show."""

    label: str
    args: list[str]
    expected: dict[str, int]
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)

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


def make_workload(root: Path, samples: int) -> Workload:
    """Write the benchmark (spec, samples, one PNG), its recorded answers and the plain tests."""
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
    spec = root / "perf_bench.yaml"
    spec.write_text(
        "name: perf_bench\nloader: jsonl\ndata: {root: ., file: samples.jsonl}\nparser: mme\n"
        "prompt: \"{question} Please answer yes or no.\"\nmetrics: [accuracy, accuracy_plus]\n",
        encoding="utf-8",
    )
    plain = root / "test_plain.py"
    plain.write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize(\"i\", range({samples}))\n"
        "def test_x(i):\n    assert i >= 0\n",
        encoding="utf-8",
    )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # rootdir here, no ini from above
    return Workload(root, spec, root / "predictions.jsonl", plain, samples, correct)


def child_env(cache_dir: Path) -> dict[str, str]:
    """This environment with bytecode caching on (written under `cache_dir`) and no PYTEST_ADDOPTS."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS")}
    env["PYTHONPYCACHEPREFIX"] = str(cache_dir)
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


def children_cpu_s() -> float:
    """User + system CPU seconds of all finished (waited-for) child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(case: Case, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `case` in a fresh interpreter; checks its summary line."""
    command = [sys.executable, "-m", "pytest", *case.args]
    cpu_start = children_cpu_s()
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)
    elapsed = time.perf_counter() - start
    cpu = children_cpu_s() - cpu_start
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise PerfError(f"{case.label}: exit status {proc.returncode} from {' '.join(command)}\n{output[-2000:]}")
    counts = outcome_counts(output)
    if counts != case.expected:
        raise PerfError(f"{case.label}: expected {case.expected}, pytest reported {counts}")
    return elapsed, cpu


def measure(pairs: Iterable[tuple[Case, Case]], repeat: int, cwd: Path, env: dict[str, str],
            log: Console) -> None:
    """Run each (plugin, plain) pair `repeat` times, alternating which goes first."""
    for pair in pairs:
        for rep in range(repeat):
            for case in pair if rep % 2 == 0 else reversed(pair):
                wall, cpu = run_once(case, cwd, env)
                case.times.append(wall)
                case.cpu_times.append(cpu)
                log.print(f"  {case.label}: {wall:.2f} s wall, {cpu:.2f} s CPU")


def machine() -> dict[str, Any]:
    """CPU, cores, OS, versions and the load average: what the figures depend on."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        cpuinfo = []
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")),
               platform.processor() or "unknown")
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    info: dict[str, Any] = {"cpu": cpu, "cores": os.cpu_count(), "usable_cores": usable,
                            "os": platform.platform(), "python": platform.python_version()}
    for dist in ("pytest", "pytest-xdist", "pytest-mllm"):
        try:
            info[dist] = version(dist)
        except PackageNotFoundError:
            info[dist] = "not installed"
    return info


def load_average() -> float | None:
    """The 1-minute load average, where the OS has one."""
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def ratio(plugin: Case, plain: Case) -> dict[str, float]:
    """plugin/plain of the wall-time medians and mins, and of the CPU-time medians."""
    return {"median": plugin.median / plain.median, "min": plugin.best / plain.best,
            "cpu_median": plugin.cpu_median / plain.cpu_median}


def report(info: dict[str, Any], cases: dict[str, Case], samples: int, repeat: int, console: Console) -> dict[str, Any]:
    """Print the machine notes and the table of figures; return everything for --json."""
    ratios = {"run": ratio(cases["run_plugin"], cases["run_plain"]),
              "run_n2": ratio(cases["run_n2_plugin"], cases["run_n2_plain"])}
    met = {"collect": cases["collect_plugin"].median < COLLECT_GOAL_S,
           "run": ratios["run"]["median"] <= RATIO_GOAL, "run_n2": ratios["run_n2"]["median"] <= RATIO_GOAL}
    overhead_us = {key: 1e6 * (cases[f"{key}_plugin"].median - cases[f"{key}_plain"].median) / samples
                   for key in ("run", "run_n2")}

    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['os']}",
                  soft_wrap=True)
    console.print(f"versions: Python {info['python']}, pytest {info['pytest']}, "
                  f"pytest-xdist {info['pytest-xdist']}, pytest-mllm {info['pytest-mllm']}", soft_wrap=True)
    console.print(f"1-min load average: {info['load_before']} before, {info['load_after']} after", soft_wrap=True)

    def verdict(ok: bool) -> str:
        return "[green]met[/green]" if ok else "[bold red]missed[/bold red]"

    runs = f"{repeat} run" + ("s" if repeat != 1 else "")
    table = Table(title=f"pytest-mllm speed: {samples:,} samples, {runs} each", title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("wall med", justify="right", no_wrap=True)
    table.add_column("wall min", justify="right", no_wrap=True)
    table.add_column("CPU med", justify="right", no_wrap=True)
    table.add_column("goal", no_wrap=True)

    def seconds(key: str, goal: str = "") -> None:
        case = cases[key]
        table.add_row(case.label, f"{case.median:.2f} s", f"{case.best:.2f} s", f"{case.cpu_median:.2f} s", goal)

    seconds("collect_plugin", f"< {COLLECT_GOAL_S:g} s: {verdict(met['collect'])}")
    seconds("collect_plain", "(reference)")
    for key, title in (("run", "b."), ("run_n2", "c.")):
        table.add_section()
        seconds(f"{key}_plugin")
        seconds(f"{key}_plain")
        table.add_row(f"{title} plugin/plain", f"{ratios[key]['median']:.2f}x", f"{ratios[key]['min']:.2f}x",
                      f"{ratios[key]['cpu_median']:.2f}x", f"<= {RATIO_GOAL:g}x: {verdict(met[key])}")
        table.add_row(f"{title} (plugin-plain)/test", f"{overhead_us[key]:.0f} µs", "", "", "")
    console.print(table)
    console.print(f"wall: perf_counter around each pytest subprocess; CPU: user + system time of its process tree; "
                  f"plain: pytest on {samples:,} trivial parametrized tests, same flags; goals apply to wall medians",
                  soft_wrap=True)
    return {
        "machine": info, "samples": samples, "repeat": repeat,
        "goals": {"collect_s": COLLECT_GOAL_S, "ratio": RATIO_GOAL}, "met": met,
        "timings_s": {key: {"label": c.label, "command": ["pytest", *c.args], "median": c.median, "min": c.best,
                            "runs": c.times, "cpu_median": c.cpu_median, "cpu_runs": c.cpu_times}
                      for key, c in cases.items()},
        "ratios": ratios, "overhead_us_per_sample": overhead_us,
    }


def main(argv: list[str] | None = None) -> int:
    """Generate the workload, time every case, print the table; 2 on a failed or miscounted run."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=10_000, help="benchmark size (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON here")
    args = parser.parse_args(argv)
    if args.samples < 2 or args.repeat < 1:
        parser.error("--samples must be at least 2 and --repeat at least 1")

    console, log = Console(), Console(stderr=True)
    info = machine()
    info["load_before"] = load_average()
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-perf-") as tmp:
        work = make_workload(Path(tmp), args.samples)
        env = child_env(Path(tmp) / "pycache")
        bench = [work.spec.name, f"--mllm=replay:{work.predictions.name}"]
        plain = [work.plain_tests.name]
        n = args.samples
        cases = {
            "collect_plugin": Case("a. collect, plugin", [*bench, "--collect-only", "-q"], {"collected": n}),
            "collect_plain": Case("a. collect, plain", [*plain, "--collect-only", "-q"], {"collected": n}),
            "run_plugin": Case("b. run, plugin", [*bench, *RUN_FLAGS], work.plugin_outcomes),
            "run_plain": Case("b. run, plain", [*plain, *RUN_FLAGS], {"passed": n}),
            "run_n2_plugin": Case("c. run -n 2, plugin", [*bench, *RUN_FLAGS, "-n", "2"], work.plugin_outcomes),
            "run_n2_plain": Case("c. run -n 2, plain", [*plain, *RUN_FLAGS, "-n", "2"], {"passed": n}),
        }
        pairs = [(cases[f"{key}_plugin"], cases[f"{key}_plain"]) for key in ("collect", "run", "run_n2")]
        try:
            log.print("warm-up (not recorded): a plugin run of one sample with -n 2, a plain collection")
            one = Case("warm-up", [*bench, *RUN_FLAGS, "-n", "2", "-k", SAMPLE_ID.format(1)],
                       {"passed": 1})  # sample 1 has the right answer; xdist workers deselect quietly
            for case in (one, cases["collect_plain"]):
                run_once(case, work.root, env)
            measure(pairs, args.repeat, work.root, env, log)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(Text("error: ", style="bold red") + Text(str(exc)))
            return 2
    info["load_after"] = load_average()
    document = report(info, cases, args.samples, args.repeat, console)
    if args.json:
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
