"""LIME-M curation of the bundled `shapes` benchmark with the `shapes-llava` training ladder as the panel.

The five stages of one training run (`shapes-llava@stage1` … `@stage4`, then `shapes-llava`) are
judges of rising ability, so the difficulty classes mean something: a sample every stage
answers is easy, one only the late stages answer is middle, one none answers is hard. The
script runs `pytest-mllm-curate` with that panel (answer leakage checked by asking the panel
again with the images withheld) and prints its report.

    python scripts/curation_demo.py [--out DIR] [--target 60] [--seed 0]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from pytest_mllm.models.shapes_llava import NAME, STAGES

PANEL = [f"{NAME}@{stage}" for stage in STAGES[:-1]] + [NAME]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("curation-demo"))
    parser.add_argument("--target", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    command = [sys.executable, "-m", "pytest_mllm.curation.cli", "shapes", "--out", str(args.out),
               "--target", str(args.target), "--seed", str(args.seed), "--withhold-images"]
    for model in PANEL:
        command += ["--panel", model]
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
