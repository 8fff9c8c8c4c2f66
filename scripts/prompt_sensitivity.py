#!/usr/bin/env python
"""How much a paraphrase of the prompt moves a model's score on the bundled `shapes` suite.

    python scripts/prompt_sensitivity.py [--model shapes-llava]

Writes one spec file per paraphrase (the bundled shapes.yaml with its prompt templates
replaced) into a temporary folder, runs each through pytest with `--mllm-json`, and prints
accuracy per task under each paraphrase. The first row is the bundled prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from pytest_mllm.engine.spec import find_spec

TASKS = ("existence", "count", "color", "position", "choice")
CHOICE = "{question}\n{options}\nAnswer with the option's letter from the given choices directly."
# (name, yes/no template, multiple-choice template)
PARAPHRASES = (
    ("bundled", "{question}", CHOICE),
    ("question-prefix", "Question: {question}", "Question: {question}\nOptions:\n{options}\nAnswer with the option's letter."),
    ("look-first", "Look at the image carefully. {question}",
     "Look at the image carefully. {question}\n{options}\nReply with the letter of the correct option."),
    ("answer-suffix", "{question}\nAnswer:", "{question}\n{options}\nAnswer:"),
    ("one-word", "{question} Reply with one word.", "{question}\n{options}\nReply with one letter only."),
)


def spec_text(name: str, yes_no: str, choice: str) -> str:
    spec = yaml.safe_load(find_spec("shapes").read_text(encoding="utf-8"))
    spec["name"] = f"shapes_{name.replace('-', '_')}"
    spec["prompt"] = yes_no
    spec["tasks"]["choice"]["prompt"] = choice
    return yaml.safe_dump(spec, sort_keys=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="shapes-llava")
    args = parser.parse_args(argv)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, yes_no, choice in PARAPHRASES:
            spec = Path(tmp) / f"shapes_{name.replace('-', '_')}.yaml"
            spec.write_text(spec_text(name, yes_no, choice))
            out = Path(tmp) / f"{name}.json"
            run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                                  f"--mllm={args.model}", f"--mllm-bench={spec}", "--mllm-cache=off",
                                  f"--mllm-json={out}"], cwd=tmp, env=env, capture_output=True, text=True)
            if not out.is_file():
                print(f"the run under the {name!r} prompt wrote no results (exit status {run.returncode}):\n"
                      f"{(run.stdout + run.stderr)[-2000:]}", file=sys.stderr)
                return 2
            metrics = json.loads(out.read_text())["benchmarks"][spec.stem]["metrics"]
            rows.append((name, [metrics[f"{task}.accuracy"] for task in TASKS], metrics["accuracy"]))
    print(f"{args.model} on shapes, accuracy by prompt paraphrase\n")
    print("| prompt | " + " | ".join(TASKS) + " | overall |")
    print("|---|" + "---|" * (len(TASKS) + 1))
    for name, values, overall in rows:
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in values) + f" | {overall:.3f} |")
    spread = max(r[2] for r in rows) - min(r[2] for r in rows)
    print(f"\nspread of the overall accuracy: {spread:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
