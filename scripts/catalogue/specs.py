#!/usr/bin/env python
"""Write benchmarks/catalogue/specs/ from the catalogue: one spec per VLMEvalKit dataset whose scoring a type
template reproduces (pytest_mllm/engine/catalogue.py), except the names a hand-written spec holds.

    python scripts/catalogue/specs.py           # (re)write the folder: stale specs removed
    python scripts/catalogue/specs.py --check   # exit 1 when the folder is not what the templates give
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from pytest_mllm.engine.catalogue import runnable, spec_text, specs_folder, vlmevalkit  # noqa: E402
from pytest_mllm.engine.spec import ALIASES, bundled_specs  # noqa: E402


def expected() -> dict[str, str]:
    """{file name: text} of every catalogue spec."""
    held = {**ALIASES, **{name: name for name in bundled_specs()}}
    return {f"{entry.name}.yaml": spec_text(entry) for entry in vlmevalkit().entries.values() if runnable(entry, held)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args(argv)
    folder = specs_folder()
    want = expected()
    have = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*.yaml")} if folder.is_dir() else {}
    stale = sorted(n for n in want.keys() | have.keys() if want.get(n) != have.get(n))
    if args.check:
        for name in stale:
            print(f"{folder / name}: {'missing' if name not in have else 'not written by the templates'}")
        return 1 if stale else 0
    folder.mkdir(parents=True, exist_ok=True)
    for name in stale:
        if name in want:
            (folder / name).write_text(want[name], encoding="utf-8")
        else:
            (folder / name).unlink()
    print(f"{len(want)} specs in {folder} ({len(stale)} written or removed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
