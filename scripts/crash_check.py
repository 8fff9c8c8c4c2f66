"""Crash safety, measured: killed runs lose no finished answer, and a crashed worker loses one sample.

    python scripts/crash_check.py [--kills 6] [--seed 0] [--sleep 0.03] [--keep DIR]

(a) Whole runs SIGKILLed. A conftest model answers `shapes` (360 samples) deterministically from a
hash of each sample's id and sleeps `--sleep` seconds per batch, so kills land mid-run; it logs every
answer it generated. An uninterrupted run with a fresh cache gives the reference JSON. Then, per kill
(seeded points, some with `-n 2`): a fresh cache, a run killed (its whole process group, SIGKILL) once
the model has generated a random number of answers; the cache's keys read just before the kill and
after it (finished answers lost = keys before, missing after: must be 0), `PRAGMA integrity_check`;
the same command re-run to completion, which must generate only what the cache lacked (redone: must
be 0) and write metrics and per-sample verdicts equal to the reference's.

(b) A worker crash under `-n 2`: the model `os._exit`s its worker on one chosen sample; the JSON must
hold all 360 samples, the chosen one as an error, the others as in the reference.

Prints one table; exit status 1 when a check fails. Takes well under a minute on two CPU cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

SAMPLES = 360  # the bundled shapes benchmark
CRASH_ON = "count::img_005.png::q1"

CONFTEST = textwrap.dedent('''
    import hashlib, os, time
    from pytest_mllm.sample import Response

    class HashModel:
        """Deterministic answers from a hash of the sample id; sleeps per batch; logs what it generated;
        exits its process (a crash) on the sample named by $CRASH_ON, once."""
        name = "hash-model"
        identity = "hash-model:v1"  # what the response cache keys answers by (a model without one is not cached)
        needs_images = False

        def generate(self, requests):
            time.sleep(float(os.environ.get("CRASH_SLEEP", "0")))
            out = []
            for r in requests:
                s = r.sample
                if s.id == os.environ.get("CRASH_ON") and not os.path.exists("crashed.flag"):
                    open("crashed.flag", "w").close()
                    os._exit(1)
                h = int(hashlib.sha256(s.id.encode()).hexdigest(), 16)
                out.append(Response(s.choices[h % len(s.choices)][0] if s.choices else ("Yes" if h % 3 else "No")))
            with open(os.environ["CRASH_LOG"], "a") as log:  # after the answers exist, before they are cached
                log.write("".join(r.sample.id + "\\n" for r in requests))
                log.flush()
            return out

    def pytest_mllm_make_model(spec, config):
        return HashModel() if spec == "hash-model" else None
''')


def _command(cache: Path, out: Path, workers: int) -> list[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--mllm=hash-model",
               "--mllm-bench=shapes", f"--mllm-json={out}", f"--mllm-cache-dir={cache}"]
    return command + (["-n", str(workers)] if workers else [])


def _env(log: Path, sleep: float, crash_on: str = "") -> dict[str, str]:
    return {**os.environ, "CRASH_LOG": str(log), "CRASH_SLEEP": str(sleep), "CRASH_ON": crash_on,
            "HF_HUB_OFFLINE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _lines(path: Path) -> int:
    try:
        return path.read_text().count("\n")
    except FileNotFoundError:
        return 0


def _keys(cache: Path) -> set[str]:
    """The cache's keys, read as another process would (read-only; WAL readers never block the writer)."""
    path = cache / "responses.sqlite3"
    if not path.exists():
        return set()
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        return {row[0] for row in db.execute("SELECT key FROM responses")}
    except sqlite3.OperationalError:  # the table is not created yet
        return set()
    finally:
        db.close()


def _integrity(cache: Path) -> str:
    db = sqlite3.connect(cache / "responses.sqlite3", timeout=30)
    try:
        return db.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        db.close()


def _run(cwd: Path, cache: Path, out: Path, log: Path, workers: int, sleep: float, crash_on: str = "") -> int:
    return subprocess.run(_command(cache, out, workers), cwd=cwd, env=_env(log, sleep, crash_on),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300).returncode


def _verdicts(document: dict) -> tuple[dict, dict]:
    """What must not change: every benchmark's metrics, and each sample's status and response."""
    metrics = {name: bench["metrics"] for name, bench in document["benchmarks"].items()}
    records = {(r["benchmark"], r["id"]): (r["status"], r.get("response")) for r in document["records"]}
    return metrics, records


def kill_trial(root: Path, n: int, target: int, delay: float, workers: int, sleep: float,
               reference: tuple[dict, dict]) -> dict:
    """One run killed `delay` seconds after `target` generated answers, then re-run to completion."""
    cache, out, log = root / f"cache{n}", root / f"out{n}.json", root / f"gen{n}.log"
    process = subprocess.Popen(_command(cache, out, workers), cwd=root, env=_env(log, sleep),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while _lines(log) < target and process.poll() is None:
        time.sleep(0.005)
    time.sleep(delay)  # anywhere in the next batch: generating, storing, or between batches
    before = _keys(cache)
    killed_at = _lines(log)
    os.killpg(process.pid, signal.SIGKILL)  # the whole run: pytest and any xdist workers
    process.wait()
    after = _keys(cache)
    integrity = _integrity(cache)
    generated = _lines(log)  # answers the model produced before it died
    rc = _run(root, cache, out, root / f"regen{n}.log", workers, sleep)
    redone = _lines(root / f"regen{n}.log") - (SAMPLES - len(after))
    final = json.loads(out.read_text())
    metrics_equal = _verdicts(final)[0] == reference[0]
    records_equal = _verdicts(final)[1] == reference[1]
    return {"trial": f"kill {n}", "workers": workers or 1, "generated at kill": killed_at, "kill delay s": f"{delay:.3f}",
            "cached at kill": len(after), "generated, uncached": generated - len(after),
            "finished lost": len(before - after), "integrity": integrity, "redone": redone,
            "final n": len(final["records"]), "rc": rc, "metrics equal": metrics_equal,
            "verdicts equal": records_equal,
            "ok": (not before - after and integrity == "ok" and redone == 0 and metrics_equal and records_equal
                   and len(final["records"]) == SAMPLES)}


def worker_crash_trial(root: Path, batch: int, reference: tuple[dict, dict]) -> dict:
    """-n 2 with one worker exiting on CRASH_ON: all samples reported, that one as an error."""
    case = root / f"crash-b{batch}"
    case.mkdir()
    (case / "conftest.py").write_text(CONFTEST)
    out = case / "out.json"
    command = _command(case / "cache", out, 2) + [f"--mllm-batch-size={batch}"]
    rc = subprocess.run(command, cwd=case, env=_env(case / "gen.log", 0.0, CRASH_ON), stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL, timeout=300).returncode
    records = json.loads(out.read_text())["records"]
    errors = [r["id"] for r in records if r["status"] == "error"]
    crashed = next((r["status"] for r in records if r["id"] == CRASH_ON), "missing")
    others = {(r["benchmark"], r["id"]): (r["status"], r.get("response")) for r in records if r["status"] != "error"}
    same = all(reference[1].get(key) == value for key, value in others.items())
    # With batches of one, the sample the worker died on is the test xdist saw running: it is the error.
    # With look-ahead batches, xdist blames the test it was running (the batch's first); the rest of the
    # batch, the crashing sample included, is re-run by the replacement worker.
    expected = errors == [CRASH_ON] if batch == 1 else len(errors) == 1
    return {"trial": f"worker crash (batch {batch})", "workers": 2, "final n": len(records), "rc": rc,
            "errors": len(errors), "error on": ", ".join(errors) or "–", f"{CRASH_ON}": crashed,
            "verdicts equal": same,
            "ok": len(records) == SAMPLES and expected and crashed != "missing" and same and rc == 1}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=6, help="killed runs (every third one with -n 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sleep", type=float, default=0.03, help="the model's sleep per batch, seconds")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crash_check-") as temp:
        root = args.keep or Path(temp)
        root.mkdir(parents=True, exist_ok=True)
        (root / "conftest.py").write_text(CONFTEST)
        _run(root, root / "cache-ref", root / "ref.json", root / "ref.log", 0, args.sleep)
        reference = _verdicts(json.loads((root / "ref.json").read_text()))
        rng = random.Random(args.seed)
        rows = []
        for n in range(1, args.kills + 1):
            target, delay = rng.randrange(8, SAMPLES - 24), rng.uniform(0, 1.5 * args.sleep)
            rows.append(kill_trial(root, n, target, delay, 2 if n % 3 == 0 else 0, args.sleep, reference))
        for batch in (1, 8):
            rows.append(worker_crash_trial(root, batch, reference))
    _print([row for row in rows if row["trial"].startswith("kill")])
    print()
    _print([row for row in rows if not row["trial"].startswith("kill")])
    print(f"{len(rows)} trials in {time.monotonic() - started:.0f} s (seed {args.seed}, sleep {args.sleep} s/batch); "
          f"reference: {SAMPLES} samples, uninterrupted, fresh cache")
    failed = [row["trial"] for row in rows if not row["ok"]]
    print("all checks pass" if not failed else f"FAILED: {', '.join(failed)}")
    return 1 if failed else 0


def _print(rows: list[dict]) -> None:
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(" | ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("-+-".join("-" * w for w in widths))
    for row in cells:
        print(" | ".join(v.ljust(w) for v, w in zip(row, widths)))


def _cell(value: object) -> str:
    return "yes" if value is True else "NO" if value is False else str(value)


if __name__ == "__main__":
    sys.exit(main())
