"""LIME-M curation of the bundled `shapes` benchmark with a simulated panel, end to end.

No trained vision-language model runs offline here, so three of the five judges are replay files
of simulated models (strong, medium, weak) answering against a seeded per-sample difficulty: a
model of skill s answers a sample of difficulty d right when s > d. The other two are real:
the tiny LLaVA (random weights) and a seeded random baseline. The script writes the replays,
runs `pytest-mllm-curate`, and prints the report's figures.

    python scripts/curation_demo.py [--out DIR] [--target 120] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

from pytest_mllm.loaders import load_samples
from pytest_mllm.engine.spec import find_spec, load_spec

SKILLS = {"strong": 0.85, "medium": 0.6, "weak": 0.4}
WRONG = {"Yes": "No", "No": "Yes", "A": "B", "B": "C", "C": "D", "D": "A"}


def write_replays(folder: Path) -> list[Path]:
    """One JSONL replay per simulated model over every shapes sample."""
    spec = load_spec(find_spec("shapes"))
    samples = list(load_samples(spec, None))
    difficulty = {s.id: random.Random(f"difficulty:{s.pair_group or s.id}").random() for s in samples}
    paths = []
    for name, skill in SKILLS.items():
        path = folder / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for sample in samples:
                noise = random.Random(f"{name}:{sample.id}").gauss(0, 0.1)
                right = skill + noise > difficulty[sample.id]
                answer = sample.answer if right else WRONG.get(sample.answer, "No")
                out.write(json.dumps({"id": sample.id, "response": answer}) + "\n")
        paths.append(path)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("curation-demo"))
    parser.add_argument("--target", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    panel = [f"replay:{p}" for p in write_replays(args.out)] + ["tiny-llava", "baseline:random:1"]
    command = [sys.executable, "-m", "pytest_mllm.curation.cli", "shapes", "--out", str(args.out / "curated"),
               "--target", str(args.target), "--seed", str(args.seed)]
    for model in panel:
        command += ["--panel", model]
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
