"""Running the judges: one `pytest --mllm=MODEL --mllm-bench=BENCH --mllm-json=…` per model.

Each run is an ordinary pytest session in a subprocess, so the response cache (`.mllm_cache/`
under the current folder, or `--mllm-cache-dir` in the pytest arguments) answers a repeated
run without asking the model again. Exit status 1 (wrong answers or sample errors) is a normal
outcome; any other failure stops curation with the tail of the run's output.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

OK_EXIT = (0, 1)  # 1: some answers were wrong or errored; the JSON is complete
_TAIL = 3000


class RunFailed(RuntimeError):
    """A judge's pytest run failed as a session (usage error, internal error, no JSON)."""


@dataclass(frozen=True)
class PlannedRun:
    """One pytest run to make: which model, in which role, writing where."""

    model: str
    role: str  # "panel" or "text-only"
    json_path: Path
    withhold_images: bool = False

    @property
    def label(self) -> str:
        return f"{self.model} (images withheld)" if self.withhold_images else self.model


def slug(model: str, hashed: bool = False) -> str:
    """A file-name-safe, readable name for a model spec (with a hash of the spec when long or asked)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"
    if hashed or len(readable) > 60:
        readable = f"{readable[:50]}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"
    return readable


def plan_runs(out: Path, panel: Sequence[str], text_only: Sequence[str], withhold: Sequence[str]) -> list[PlannedRun]:
    """Panel runs, then text-only runs (text-only models, then panel models with images withheld)."""
    runs: list[PlannedRun] = []
    for role, folder, models, withheld in (("panel", "panel", panel, False), ("text-only", "text-only", text_only, False),
                                           ("text-only", "no-image", withhold, True)):
        names = [slug(m) for m in models]
        for model, name in zip(models, names):
            if names.count(name) > 1:  # two specs that read alike once made file-safe
                name = slug(model, hashed=True)
            runs.append(PlannedRun(model, role, out / "runs" / folder / f"{name}.json", withheld))
    return runs


def command(run: PlannedRun, bench: str, data: Sequence[str], extra: Sequence[str]) -> list[str]:
    """The pytest command line of one run."""
    line = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm={run.model}",
            f"--mllm-bench={bench}", f"--mllm-json={run.json_path}"]
    line += [f"--mllm-data={d}" for d in data]
    if run.withhold_images:
        line.append("--mllm-no-image")
    return line + list(extra)


def execute(run: PlannedRun, bench: str, data: Sequence[str], extra: Sequence[str], cwd: Path,
            timeout_s: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run one judge; RunFailed (with the output's tail) unless it exits 0 or 1 and wrote its JSON."""
    run.json_path.parent.mkdir(parents=True, exist_ok=True)
    if run.json_path.exists():
        run.json_path.unlink()  # never read a stale file from an earlier curation
    line = command(run, bench, data, extra)
    try:
        done = subprocess.run(line, cwd=cwd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"the run of {run.label} took longer than {timeout_s:g} s") from None
    if done.returncode not in OK_EXIT or not run.json_path.is_file():
        output = (done.stdout[-_TAIL:] + "\n" + done.stderr[-_TAIL:]).strip()
        why = {2: "interrupted", 3: "an internal error", 4: "a usage error", 5: "no tests collected"}.get(
            done.returncode, f"exit status {done.returncode}")
        if done.returncode in OK_EXIT:
            why = "no results file was written"
        raise RunFailed(f"the run of {run.label} failed ({why}):\n  {' '.join(line)}\n{output}")
    return done


def summary_line(done: subprocess.CompletedProcess[str]) -> str:
    """pytest's last summary line ("160 passed, 200 incorrect in 2.29s"), for progress output."""
    lines = [line.strip("= ") for line in done.stdout.splitlines() if line.strip()]
    return lines[-1] if lines else ""
