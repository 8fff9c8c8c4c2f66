"""Run the family sweep and print one line per family and a total.

    python scripts/family_sweep.py                       # every family of the mapping, this Python
    python scripts/family_sweep.py -k "qwen or gemma"    # a selection
    python scripts/family_sweep.py --write               # and record the results in docs/family_sweep.json,
                                                         # regenerating the reference's family table from them
    python scripts/family_sweep.py --table               # only regenerate the reference's table from the recorded results

Each family's tiny model (pytest_mllm/models/tiny_families.py) runs through the plugin at batch 8 and
at batch 1 and is compared with its documented transformers usage (tests/plugin/family_reference.py);
a refused family is checked to stop with its reason (tests/plugin/test_family_sweep.py). The sweep runs
on one thread (OMP_NUM_THREADS=1, no xdist). Families whose tiny model needs a package this Python lacks
(torchvision, timm) are skipped and, with --write, keep their recorded results: run it from an
environment with torchvision (docs/reference.md: "Families that need torchvision") to cover them all.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "family_sweep.json"
REFERENCE = REPO / "docs" / "reference.md"
VERSIONED = ("transformers", "torch", "torchvision", "timm")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", default=None, help="pytest -k expression selecting families (model_type)")
    parser.add_argument("--write", action="store_true", help=f"record the results in {RESULTS.relative_to(REPO)} "
                                                             "and regenerate the reference's family table")
    parser.add_argument("--table", action="store_true", help="only regenerate the reference's family table from "
                                                             f"{RESULTS.relative_to(REPO)}")
    args = parser.parse_args()
    if args.table:
        write({})
        return 0
    with tempfile.TemporaryDirectory(prefix="family-sweep-") as folder:
        start = time.perf_counter()
        command = [sys.executable, "-m", "pytest", "tests/plugin/test_family_sweep.py", "--family-sweep",
                   "-p", "no:cacheprovider", "-n", "0", "-q", "-rfE", *(["-k", args.k] if args.k else [])]
        run = subprocess.run(command, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1",
                                                     "PYTEST_MLLM_FAMILY_RESULTS": folder})
        seconds = time.perf_counter() - start
        outcomes = {p.stem: json.loads(p.read_text()) for p in sorted(Path(folder).glob("*.json"))}
    for name, outcome in sorted(outcomes.items()):
        detail = outcome["detail"] if outcome["status"] != "exact" else (
            f"{outcome['answered']} samples" + (f", {outcome['not_taken']} refused alone" if outcome["not_taken"] else ""))
        print(f"{name:24s} {outcome['status']:8s} {outcome['seconds']:6.1f}s  {detail[:160]}")
    counts = {status: sum(o["status"] == status for o in outcomes.values())
              for status in ("exact", "refused", "fails", "differs", "unchecked", "skipped")}
    print(f"total: {len(outcomes)} families in {seconds:.0f} s: "
          + ", ".join(f"{n} {status}" for status, n in counts.items() if n) + f" (pytest exit status {run.returncode})")
    if args.write:
        write(outcomes)
    return run.returncode


def write(outcomes: dict[str, dict]) -> None:
    """Record this run's outcomes (a skipped family keeps its recorded one) and regenerate the reference's table."""
    sys.path.insert(0, str(REPO))
    from pytest_mllm.models.family_table import family_table, replace_table

    recorded = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"environment": {}, "families": {}}
    families = dict(recorded["families"])
    for name, outcome in outcomes.items():
        if outcome["status"] != "skipped" or name not in families:
            families[name] = {k: v for k, v in outcome.items() if k != "seconds"}
    ran_all = bool(outcomes) and not any(o["status"] == "skipped" for o in outcomes.values())
    environment = ({name: _version(name) for name in VERSIONED if _version(name)} if ran_all or not recorded["environment"]
                   else recorded["environment"])
    results = {"environment": environment, "families": dict(sorted(families.items()))}
    RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    REFERENCE.write_text(replace_table(REFERENCE.read_text(), family_table(results)))
    print(f"wrote {RESULTS.relative_to(REPO)} and docs/reference.md's family table")


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
