#!/usr/bin/env python
"""The GPU path, measured: plugin throughput against a raw batched `generate` loop, per batch size.

    python scripts/gpu_perf.py [--model llava-1.5-7b|tiny] [--batch-sizes 1,8,32] [--repeat 3]
                               [--device cuda] [--dtype bf16] [--work DIR] [--json out.json]

1. Builds the model into --work with no download: `llava-1.5-7b` is that architecture from its
   published sizes (CLIP ViT-L/14 at 336 px, a 32-layer Llama of hidden size 4096, the 2-layer
   GELU projector) with random weights in --dtype, initialised on --device; `tiny` is the
   plugin's tiny LLaVA. Both get the tiny LLaVA's tokenizer (random weights answer nonsense of
   the full --max-new-tokens length either way, which is what a throughput test wants).
2. Raw loop: a persistent subprocess loads the folder once (transformers, --device, --dtype)
   and, per batch size, times one pass over the bundled `shapes` samples (360): image
   decoding, prompt and chat template, processor, `generate(do_sample=False)`, decode; the
   peak GPU memory of each pass is recorded.
3. Plugin: `pytest --mllm=hf:<folder> --mllm-bench=shapes --mllm-batch-size=B --mllm-dtype=…
   --mllm-cache=off`, all 360 samples and then `-k` one sample. Plugin s/sample, three ways:
   - in-process (the one the goal is judged on): a plugin loaded with `-p` (scripts/perf's window
     plugin) times, inside the 360-sample run, from the end of the first batch's B tests to the end
     of the last test, per sample after the first batch; the raw loop's figure is its pass minus
     its first batch, per sample after it. Neither start-up, the model load, the first batch's
     warm-up (a new batch shape) nor the session's finish reaches it. Wall, and CPU time beside it.
   - end to end, load subtracted: ((wall of all - its model load) - (wall of one - its model
     load)) / 359, each run's load time from its results' `settings.model_loads`: what the other
     359 samples cost end to end (generation, tests, scores, reports), without the load's variation
     between runs (seconds on a 7B model: it swamps the difference).
   - end to end, differencing alone: (wall of all - wall of one) / 359, as before, for comparison.
   Figure: raw s/sample / plugin s/sample (goal >= 0.95), medians, the spread (min..max) and the
   ratio of each repetition (its runs are adjacent in time). Beside them, generation alone after
   the first batch (the plugin's per-record `latency_s`, what HFModel.generate times: chat
   template, processor, generate, decode; the raw loop's same steps) and what each spends beyond
   it per sample (in-process wall minus generation: images, tests, scoring). Also the all-sample run under
   `-n auto` (one xdist worker per GPU) against the run without xdist.

Runs alternate within each repetition (raw, plugin, plugin-one; the next repetition in reverse order).
Without a GPU, `--model tiny --device cpu --dtype fp32` exercises the same code on CPU.
"""

# ruff: noqa: B023  (each repetition's steps are closures called within the iteration that defines them)
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from perf.hotpath import WINDOW_BATCH_VARIABLE, WINDOW_MODULE, install_window_plugin, window_of  # noqa: E402

SHAPES_SAMPLES = 360
ONE_SAMPLE = "existence and img_000 and q1"  # -k expression selecting one shapes sample
# llava-1.5-7b's published sizes (CLIP ViT-L/14-336 + Vicuna-7B, a 2-layer GELU projector)
LLAVA_7B = {
    "vision": {"hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 24, "num_attention_heads": 16,
               "image_size": 336, "patch_size": 14, "projection_dim": 768},
    "text": {"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
             "num_key_value_heads": 32, "vocab_size": 32064, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5},
    "vision_feature_layer": -2,
}


def build(folder: Path, model: str, device: str, dtype: str) -> None:
    """Write the model folder (the `_build` mode)."""
    import torch
    from transformers import AutoTokenizer, LlavaForConditionalGeneration

    from pytest_mllm.models.hf import resolve_dtype
    from pytest_mllm.models.tiny import ensure_tiny_llava, llava_config, llava_processor

    tiny = ensure_tiny_llava()
    if model == "tiny":
        import shutil

        shutil.copytree(tiny, folder, dirs_exist_ok=True)
        return
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    vision = dict(LLAVA_7B["vision"])
    size, patch = vision.pop("image_size"), vision.pop("patch_size")
    processor = llava_processor(tokenizer, image_size=size, patch_size=patch)
    config = llava_config(tokenizer, image_size=size, patch_size=patch, vision=vision, text=LLAVA_7B["text"],
                          vision_feature_layer=LLAVA_7B["vision_feature_layer"])
    torch.manual_seed(0)
    where = torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                         ("cpu" if device == "auto" else device))
    with where:
        network = LlavaForConditionalGeneration._from_config(config, torch_dtype=resolve_dtype(dtype, where))
    network.generation_config.pad_token_id = tokenizer.pad_token_id
    network.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)


def raw_worker(folder: Path, device: str, dtype: str) -> int:
    """The `_raw` mode: load once, then answer "run B" lines with one timed pass at batch size B."""
    import torch

    from pytest_mllm.engine.evaluator import render_prompt
    from pytest_mllm.engine.images import load_image
    from pytest_mllm.engine.spec import find_spec, load_spec
    from pytest_mllm.loaders.shapes import build_samples
    from pytest_mllm.models.hf import HFModel

    started = time.perf_counter()
    model = HFModel(str(folder), name="raw", device=device, dtype=dtype)
    processor, tokenizer, network = model.processor, model.tokenizer, model.model
    cuda = model.device.type == "cuda"
    spec = load_spec(find_spec("shapes"))
    samples = build_samples(spec.name, **spec.loader_options)

    def prompt(sample: Any) -> str:
        text = render_prompt(spec.task_settings(sample.task).prompt, sample)
        content = [{"type": "image"} for _ in sample.images] + [{"type": "text", "text": text}]
        return processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                             tokenize=False)

    def one_pass(chosen: list[Any], batch_size: int) -> dict[str, Any]:
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        begin, begin_cpu = time.perf_counter(), time.process_time()
        answers: list[str] = []
        first_batch_s = first_batch_cpu_s = generation_s = 0.0  # generation: after the first batch, as HFModel times it
        for at in range(0, len(chosen), batch_size):
            if at == batch_size:
                if cuda:
                    torch.cuda.synchronize()
                first_batch_s, first_batch_cpu_s = time.perf_counter() - begin, time.process_time() - begin_cpu
            batch = chosen[at:at + batch_size]
            images = [[load_image(ref) for ref in s.images] for s in batch]
            generating = time.perf_counter()
            inputs = processor(text=[prompt(s) for s in batch], images=images, return_tensors="pt", padding=True)
            inputs = inputs.to(model.device)
            if "pixel_values" in inputs:
                inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
            with torch.inference_mode():
                output = network.generate(**inputs, do_sample=False, max_new_tokens=spec.max_new_tokens,
                                          pad_token_id=tokenizer.pad_token_id)
            answers += [a.strip() for a in processor.batch_decode(output[:, inputs["input_ids"].shape[1]:],
                                                                  skip_special_tokens=True)]
            if at >= batch_size:
                generation_s += time.perf_counter() - generating
        if cuda:
            torch.cuda.synchronize()
        total_s, cpu_s = time.perf_counter() - begin, time.process_time() - begin_cpu
        return {"total_s": total_s, "after_first_s": total_s - first_batch_s, "cpu_s": cpu_s,
                "after_first_cpu_s": cpu_s - first_batch_cpu_s, "generation_s": generation_s, "answers": answers,
                "peak_gib": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}

    one_pass(samples[:1], 1)  # warm-up, as the plugin's one-sample run absorbs it
    print(json.dumps({"load_s": time.perf_counter() - started, "device": str(model.device),
                      "dtype": str(model.dtype)}), flush=True)
    for line in sys.stdin:
        word, _, size = line.partition(" ")
        if word != "run":
            break
        print(json.dumps(one_pass(samples, int(size))), flush=True)
    return 0


class RawLoop:
    """The `_raw` subprocess, driven line by line."""

    def __init__(self, folder: Path, device: str, dtype: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "_raw", str(folder), device, dtype], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = self._reply()

    def _reply(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"the raw loop exited with status {self.proc.wait()}")

    def run(self, batch_size: int) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {batch_size}\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def plugin_run(folder: Path, batch_size: int, dtype: str, device: str, env: dict[str, str], cwd: Path,
               *extra: str) -> tuple[float, dict[str, Any]]:
    """Wall time of one plugin run and its results JSON."""
    out = cwd / "out.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm=hf:{folder}",
               "--mllm-bench=shapes", f"--mllm-batch-size={batch_size}", f"--mllm-dtype={dtype}",
               f"--mllm-device={device}", "--mllm-cache=off", f"--mllm-json={out}", *extra]
    began = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if result.returncode != 0 or not out.is_file():
        raise RuntimeError(f"{' '.join(command)}: status {result.returncode}\n{result.stdout[-3000:]}{result.stderr[-2000:]}")
    return wall, json.loads(out.read_text())


def load_s(document: dict[str, Any]) -> float:
    """The model's load time in a run, as its results JSON records it."""
    return sum(load["seconds"] for load in document["settings"]["model_loads"])


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def figure(raw: list[float], plugin: list[float]) -> dict[str, Any]:
    """Per-sample times of both and raw/plugin throughput: of the medians, and per repetition."""
    paired = [r / p for r, p in zip(raw, plugin)]
    return {"raw_s_per_sample": summary(raw), "plugin_s_per_sample": summary(plugin),
            "throughput_ratio": statistics.median(raw) / statistics.median(plugin),
            "ratio_per_repetition": paired, "ratio_spread": [min(paired), max(paired)]}


def shown(name: str, f: dict[str, Any]) -> str:
    return (f"{name}: raw {f['raw_s_per_sample']['median'] * 1000:.2f} ms/sample, plugin "
            f"{f['plugin_s_per_sample']['median'] * 1000:.2f} ms/sample, ratio {f['throughput_ratio']:.3f} "
            f"(per repetition {', '.join(f'{r:.3f}' for r in f['ratio_per_repetition'])})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("llava-1.5-7b", "tiny"), default="llava-1.5-7b")
    parser.add_argument("--batch-sizes", default="1,8,32")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--work", type=Path, help="where the model folder is built (default: a temporary folder)")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--no-xdist", action="store_true", help="skip the -n auto comparison")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.batch_sizes.split(",")]
    path = os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(REPO)]))  # an installed package first
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": path}
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        folder = work / args.model
        if not (folder / "config.json").is_file():
            began = time.perf_counter()
            subprocess.run([sys.executable, __file__, "_build", str(folder), args.model, args.device, args.dtype],
                           env=env, check=True)
            print(f"built {args.model} in {time.perf_counter() - began:.0f} s", flush=True)
        runs = work / "runs"  # the window plugin and its file
        runs.mkdir(exist_ok=True)
        install_window_plugin(runs, env)
        raw = RawLoop(folder, args.device, args.dtype, env)
        print(f"raw loop ready: {raw.ready}", flush=True)
        figures: dict[str, Any] = {"model": args.model, "device": raw.ready["device"], "dtype": raw.ready["dtype"],
                                   "repeat": args.repeat, "batch_sizes": {}}
        try:
            for size in sizes:
                env[WINDOW_BATCH_VARIABLE] = str(size)
                window = window_of(runs / "window.json", SHAPES_SAMPLES)
                after_first = SHAPES_SAMPLES - size
                raw_s, raw_in, raw_in_cpu, plugin_in, plugin_in_cpu, full_s, one_s, full_load, one_load = (
                    [] for _ in range(9))
                raw_gen, plugin_gen = [], []  # generation alone, per sample after the first batch
                xdist_s, peaks, equal = [], [], []
                for repetition in range(args.repeat):
                    def raw_pass() -> None:
                        result = raw.run(size)
                        raw_s.append(result["total_s"])
                        raw_in.append(result["after_first_s"] / after_first)
                        raw_in_cpu.append(result["after_first_cpu_s"] / after_first)
                        raw_gen.append(result["generation_s"] / after_first)
                        peaks.append(result["peak_gib"])
                        raw_answers.append(result["answers"])

                    def plugin_all() -> None:
                        wall, document = plugin_run(folder, size, args.dtype, args.device, env, work, "-p", WINDOW_MODULE)
                        inside = window()
                        full_s.append(wall)
                        full_load.append(load_s(document))
                        plugin_in.append(inside["window_s"] / after_first)
                        plugin_in_cpu.append(inside["window_cpu_s"] / after_first)
                        plugin_gen.append(sum(r["latency_s"] for r in document["records"] if r["order"] >= size)
                                          / after_first)
                        plugin_answers.append([r["response"] for r in document["records"]])

                    def plugin_one() -> None:
                        wall, document = plugin_run(folder, size, args.dtype, args.device, env, work, "-k", ONE_SAMPLE)
                        one_s.append(wall)
                        one_load.append(load_s(document))

                    raw_answers: list[list[str]] = []
                    plugin_answers: list[list[str]] = []
                    steps = [raw_pass, plugin_all, plugin_one]
                    for step in steps if repetition % 2 == 0 else reversed(steps):
                        step()
                    equal.append(sum(a == b for a, b in zip(plugin_answers[0], raw_answers[0])))
                    if not args.no_xdist:
                        xdist_s.append(plugin_run(folder, size, args.dtype, args.device, env, work, "-n", "auto")[0])
                n = SHAPES_SAMPLES
                row = {
                    "in_process": figure(raw_in, plugin_in),
                    "in_process_cpu": figure(raw_in_cpu, plugin_in_cpu),
                    "generation": figure(raw_gen, plugin_gen),
                    "beyond_generation_s_per_sample": {  # in-process wall minus generation: tests, images, scoring
                        "raw": summary([t - g for t, g in zip(raw_in, raw_gen)]),
                        "plugin": summary([t - g for t, g in zip(plugin_in, plugin_gen)])},
                    "end_to_end_load_subtracted": figure(
                        [r / n for r in raw_s],
                        [((f - fl) - (o - ol)) / (n - 1) for f, fl, o, ol in zip(full_s, full_load, one_s, one_load)]),
                    "end_to_end_differencing": figure([r / n for r in raw_s],
                                                      [(f - o) / (n - 1) for f, o in zip(full_s, one_s)]),
                    "raw_pass_s": summary(raw_s), "plugin_all_s": summary(full_s), "plugin_one_s": summary(one_s),
                    "plugin_all_load_s": summary(full_load), "plugin_one_load_s": summary(one_load),
                    "answers_equal": f"{min(equal)}/{SHAPES_SAMPLES}",
                    "peak_gib": max(peaks) if peaks[0] is not None else None,
                }
                if xdist_s:
                    row["xdist_auto_all_s"] = summary(xdist_s)
                figures["batch_sizes"][size] = row
                print(f"batch {size}: answers equal {row['answers_equal']}; peak {row['peak_gib']} GiB; model load"
                      f" {row['plugin_all_load_s']['median']:.1f} s (all) / {row['plugin_one_load_s']['median']:.1f} s"
                      f" (one)" + (f"; -n auto {row['xdist_auto_all_s']['median']:.1f} s vs"
                                  f" {row['plugin_all_s']['median']:.1f} s" if xdist_s else ""), flush=True)
                for name in ("in_process", "in_process_cpu", "generation", "end_to_end_load_subtracted",
                             "end_to_end_differencing"):
                    print(f"  {shown(name, row[name])}", flush=True)
                beyond = row["beyond_generation_s_per_sample"]
                print(f"  beyond generation (in-process wall minus generation): raw"
                      f" {beyond['raw']['median'] * 1000:.2f} ms/sample, plugin {beyond['plugin']['median'] * 1000:.2f}"
                      " ms/sample", flush=True)
        finally:
            raw.close()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_build":
        sys.exit(build(Path(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]) or 0)
    if len(sys.argv) > 1 and sys.argv[1] == "_raw":
        sys.exit(raw_worker(Path(sys.argv[2]), sys.argv[3], sys.argv[4]))
    sys.exit(main())
