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
   --mllm-cache=off`, all 360 samples and then `-k` one sample; plugin s/sample = (wall of all
   - wall of one) / 359 (both runs share start-up, imports, collection, model load, warm-up).
   Figure: raw s/sample / plugin s/sample (goal >= 0.95). Also the all-sample run under
   `-n auto` (one xdist worker per GPU) against the run without xdist.

Runs alternate (raw, plugin, plugin-one) within each repetition; medians and mins reported.
Without a GPU, `--model tiny --device cpu --dtype fp32` exercises the same code on CPU.
"""

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
        begin = time.perf_counter()
        answers = []
        for at in range(0, len(chosen), batch_size):
            batch = chosen[at:at + batch_size]
            images = [[load_image(ref) for ref in s.images] for s in batch]
            inputs = processor(text=[prompt(s) for s in batch], images=images, return_tensors="pt", padding=True)
            inputs = inputs.to(model.device)
            if "pixel_values" in inputs:
                inputs["pixel_values"] = inputs["pixel_values"].to(model.dtype)
            with torch.inference_mode():
                output = network.generate(**inputs, do_sample=False, max_new_tokens=spec.max_new_tokens,
                                          pad_token_id=tokenizer.pad_token_id)
            answers += [a.strip() for a in processor.batch_decode(output[:, inputs["input_ids"].shape[1]:],
                                                                  skip_special_tokens=True)]
        if cuda:
            torch.cuda.synchronize()
        return {"total_s": time.perf_counter() - begin, "answers": answers,
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


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


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
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        folder = work / args.model
        if not (folder / "config.json").is_file():
            began = time.perf_counter()
            subprocess.run([sys.executable, __file__, "_build", str(folder), args.model, args.device, args.dtype],
                           env=env, check=True)
            print(f"built {args.model} in {time.perf_counter() - began:.0f} s", flush=True)
        raw = RawLoop(folder, args.device, args.dtype, env)
        print(f"raw loop ready: {raw.ready}", flush=True)
        figures: dict[str, Any] = {"model": args.model, "device": raw.ready["device"], "dtype": raw.ready["dtype"],
                                   "repeat": args.repeat, "batch_sizes": {}}
        try:
            for size in sizes:
                raw_s, full_s, one_s, xdist_s, peaks, equal = [], [], [], [], [], []
                for _ in range(args.repeat):
                    result = raw.run(size)
                    raw_s.append(result["total_s"])
                    peaks.append(result["peak_gib"])
                    wall, document = plugin_run(folder, size, args.dtype, args.device, env, work)
                    full_s.append(wall)
                    plugin_answers = [r["response"] for r in document["records"]]
                    equal.append(sum(a == b for a, b in zip(plugin_answers, result["answers"])))
                    one_s.append(plugin_run(folder, size, args.dtype, args.device, env, work, "-k", ONE_SAMPLE)[0])
                    if not args.no_xdist:
                        xdist_s.append(plugin_run(folder, size, args.dtype, args.device, env, work, "-n", "auto")[0])
                per_raw = statistics.median(raw_s) / SHAPES_SAMPLES
                per_plugin = (statistics.median(full_s) - statistics.median(one_s)) / (SHAPES_SAMPLES - 1)
                row = {"raw_pass_s": summary(raw_s), "plugin_all_s": summary(full_s), "plugin_one_s": summary(one_s),
                       "raw_s_per_sample": per_raw, "plugin_s_per_sample": per_plugin,
                       "plugin_over_raw_throughput": per_raw / per_plugin,
                       "answers_equal": f"{min(equal)}/{SHAPES_SAMPLES}",
                       "peak_gib": max(peaks) if peaks[0] is not None else None}
                if xdist_s:
                    row["xdist_auto_all_s"] = summary(xdist_s)
                figures["batch_sizes"][size] = row
                print(f"batch {size}: raw {per_raw * 1000:.1f} ms/sample, plugin {per_plugin * 1000:.1f} ms/sample,"
                      f" plugin/raw throughput {per_raw / per_plugin:.3f}; answers equal {row['answers_equal']};"
                      f" peak {row['peak_gib']} GiB" + (f"; -n auto {row['xdist_auto_all_s']['median']:.1f} s vs"
                                                        f" {row['plugin_all_s']['median']:.1f} s" if xdist_s else ""),
                      flush=True)
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
