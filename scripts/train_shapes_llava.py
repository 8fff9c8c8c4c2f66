#!/usr/bin/env python
"""Train the `shapes-llava` demo models: a tiny LLaVA that really answers the bundled suites.

    python scripts/train_shapes_llava.py              # draw the data, train, write the 5 stages
    python scripts/train_shapes_llava.py --evaluate   # ... then score each stage on shapes and
                                                      # vrp_shapes through pytest and fill the cards
    python scripts/train_shapes_llava.py --evaluate-only   # re-score the shipped stages
    python scripts/train_shapes_llava.py --out DIR --seed 1 --save-every 250
                                                      # a longer ladder: another seed, a checkpoint
                                                      # every 250 steps beside the stages (DIR/stepN)

What it does, all on one CPU thread, deterministically (fixed seeds):

1. Draws training scenes with the bundled benchmarks' own generators
   (`pytest_mllm.loaders.shapes`, `pytest_mllm.loaders.vrp_shapes` + `pytest_mllm.vrp.expand`) under
   seeds the bundled specs do not use (the specs use seed 0), and drops any training image
   whose pixels hash equal to an image of the bundled benchmarks (there are none; the count
   is written to the model card).
2. Renders every question with the bundled spec's prompt template and the model's chat
   template, exactly as the plugin does, so the model learns the answer format the parsers
   read ("Yes"/"No", an option letter).
3. Trains a byte-level BPE tokenizer on those prompts, builds a LLaVA (CLIP vision tower,
   Llama text model) and trains it with the loss on the answer tokens only.
4. Saves a ladder of checkpoints (stage1..stage5) as `save_pretrained` folders: safetensors
   weights (float16), JSON tokenizer/processor files, a chat template, and a model card.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from pytest_mllm.engine.evaluator import render_prompt  # noqa: E402
from pytest_mllm.engine.images import load_image  # noqa: E402
from pytest_mllm.engine.spec import find_spec, load_spec  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402
from pytest_mllm.loaders.shapes import COLORS as SHAPE_COLORS  # noqa: E402
from pytest_mllm.loaders.shapes import TASKS as SHAPES_TASKS  # noqa: E402
from pytest_mllm.loaders.shapes import _image_samples  # noqa: E402
from pytest_mllm.loaders.vrp_shapes import _source as vrp_source  # noqa: E402
from pytest_mllm.models.shapes_llava import NAME, STAGES, WEIGHTS_DIR  # noqa: E402
from pytest_mllm.models.tiny import CHAT_TEMPLATE, bpe_tokenizer, llava_config, llava_processor, untrained_llava  # noqa: E402
from pytest_mllm.sample import Sample  # noqa: E402
from pytest_mllm.vrp.expand import expand, with_variants  # noqa: E402
from pytest_mllm.vrp.render import RGB as POINTER_RGB  # noqa: E402
from pytest_mllm.vrp.variants import Variant, default_grid  # noqa: E402

RECIPE_VERSION = "1"
LETTERS = "ABCD"

# -- data: the project's generators under seeds the bundled specs do not use (they use 0) ------
SHAPES_SEED = 1001  # training scenes of `shapes`
VRP_SEED = 2001  # training scenes of `vrp_shapes`
VAL_SHAPES_SEED = 1002  # held-out scenes for the progress printout (never trained on)
VAL_VRP_SEED = 2002
IMAGES_PER_TASK = {"existence": 1500, "count": 1800, "color": 900, "position": 2400, "choice": 2000}
VRP_SOURCES = 1000
VRP_PARTIAL_PER_SOURCE = 2  # of the grid's 4 partial variants, drawn per source
VRP_FULL_PER_SOURCE = 2  # of the grid's 8 full variants
VAL_IMAGES_PER_TASK = 60
VAL_VRP_SOURCES = 48

# -- model: tiny.py's architecture, a little larger ---------------------------------------------
IMAGE_SIZE = 64
PATCH_SIZE = 8
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2  # CLS dropped ("default" strategy)
VOCAB_SIZE = 512
VISION = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3, "num_attention_heads": 2}
TEXT = {"hidden_size": 96, "intermediate_size": 256, "num_hidden_layers": 3,
        "num_attention_heads": 4, "num_key_value_heads": 2}

# -- training -----------------------------------------------------------------------------------
SEED = 0
ALIGN_STEPS = 2000  # stage A: vision tower + projector aligned with word embeddings
ALIGN_LEARNING_RATE = 1e-3
BATCH_SIZE = 32
STEPS = 6000
LEARNING_RATE = 1e-3
WARMUP_STEPS = 150
WEIGHT_DECAY = 0.01
# stage B: which tasks are trained from which step on (None: all). Trained all at once from the
# start, the model settles on the answer priors; one or two tasks first, it learns to look things
# up in the image, and the other tasks then follow
CURRICULUM = (
    (0, ("shapes/existence", "shapes/color")),
    (500, ("shapes/existence", "shapes/color", "shapes/count", "shapes/choice", "vrp_shapes/color/none",
           "vrp_shapes/color/partial")),
    (1000, None),
)
STAGE_STEPS = {"stage1": 300, "stage2": 750, "stage3": 1500, "stage4": 3000, "stage5": STEPS}


@dataclass
class Example:
    """One training question: its image (an index into the image table), prompt and answer."""

    image: int
    task: str  # "shapes/<task>" or "vrp_shapes/<task>/<intervention>"
    prompt: str
    answer: str


# ---------------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------------


def image_hash(image) -> str:
    """SHA-256 of an image's size, mode and pixels."""
    rgb = image.convert("RGB")
    digest = hashlib.sha256(f"{rgb.size}:{rgb.mode}:".encode())
    digest.update(rgb.tobytes())
    return digest.hexdigest()


def bundled_samples(name: str) -> list[Sample]:
    """Every sample a plain `--mllm-bench=<name>` run asks (variants included)."""
    spec = load_spec(find_spec(name))
    samples = [s for s in load_samples(spec, None) if isinstance(s, Sample)]
    if spec.variants != "none":
        samples = [s for s in with_variants(samples, spec.variants) if isinstance(s, Sample)]
    return samples


def bundled_hashes() -> set[str]:
    """Pixel hashes of every image the bundled shapes and vrp_shapes suites show a model."""
    return {image_hash(load_image(s.images[0])) for name in ("shapes", "vrp_shapes") for s in bundled_samples(name)}


def contrast(sample: Sample, rng: random.Random) -> Sample | None:
    """A second question about the same image whose answer differs (None where there is none).

    The bundled yes/no tasks of `shapes` already come in such pairs. A multiple-choice question
    gets its options reordered so that another letter is right; a vrp_shapes colour question
    asks the other way round (the target's colour if it asked another object's, else another
    object's). Asked side by side in one batch, the two differ only where the image must be
    read, which is what lets a model this small learn to read it.
    """
    if sample.answer_type == "choice":
        options = [text for _, text in sample.choices]
        right = LETTERS.index(sample.answer)
        others = [o for k, o in enumerate(options) if k != right]
        rng.shuffle(others)
        slot = rng.choice([k for k in range(len(options)) if k != right])
        others.insert(slot, options[right])
        return dataclasses.replace(sample, id=sample.id + "::contrast", choices=tuple(zip(LETTERS, others)),
                                   answer=LETTERS[slot])
    if sample.benchmark == "vrp_shapes" and sample.task == "color":
        shapes, target = sample.metadata["shapes"], sample.metadata["target"]
        asked = sample.metadata["asked"]
        if sample.answer == "Yes":
            new, answer = rng.choice([s["color"] for k, s in enumerate(shapes) if k != target]), "No"
        else:
            new, answer = shapes[target]["color"], "Yes"
        return dataclasses.replace(
            sample, id=sample.id + "::contrast", answer=answer,
            question=sample.question.replace(f" {asked}?", f" {new}?"),
            metadata={**sample.metadata, "asked": new,
                      "marked_question": sample.metadata["marked_question"].replace(f" {asked}?", f" {new}?")})
    return None


def shapes_training_samples(seed: int, images_per_task: dict[str, int], contrasts: bool) -> list[list[Sample]]:
    """Samples of the `shapes` generator under `seed`, grouped by image (a yes/no pair, or a choice
    question and its reordered twin)."""
    groups = []
    for task in SHAPES_TASKS:
        for index in range(images_per_task[task]):
            samples = _image_samples("shapes", task, index, seed)
            rng = random.Random(f"shapes-llava:{seed}:{task}:{index}:contrast")
            if contrasts and task == "choice":
                samples.append(contrast(samples[0], rng))
            groups.append(samples)
    return groups


def vrp_training_samples(seed: int, sources: int, partial: int | None, full: int | None,
                         contrasts: bool) -> list[list[Sample]]:
    """VRP variants of `vrp_shapes` scenes under `seed`, grouped by variant image.

    Each source gets its un-intervened sample, plus `partial` and `full` variants drawn
    (seeded) from VRPTEST's default grid (None: all of them). With `contrasts`, each variant
    image also carries the contrasting question, except a "full" colour variant (its question
    is drawn on the image, so the contrast would be another image).
    """
    grid = default_grid()
    partials = [v for v in grid if v.intervention == "partial"]
    fulls = [v for v in grid if v.intervention == "full"]
    rng = random.Random(f"shapes-llava:{seed}:variants")
    groups = []
    for index in range(sources):
        source = vrp_source("vrp_shapes", index, seed)
        twin = contrast(source, random.Random(f"shapes-llava:{seed}:vrp:{index}:contrast")) if contrasts else None
        chosen = [Variant("none")]
        chosen += partials if partial is None else rng.sample(partials, partial)
        chosen += fulls if full is None else rng.sample(fulls, full)
        for variant in chosen:
            group = [expand(source, variant)]
            if twin is not None and not (variant.intervention == "full" and source.task == "color"):
                group.append(expand(twin, variant))
            groups.append(group)
    return groups


# Words an image patch is aligned with in stage A: the kind and colour of the shape covering it,
# which half of the image it lies in (with the benchmark's words for the vertical halves too),
# whether a VRP pointer passes through it, and "empty" where nothing does.
ALIGN_WORDS = ("circle", "square", "triangle", "cross", *SHAPE_COLORS, "left", "right", "upper", "lower", "marked",
               "above", "below", "empty")


def patch_words(image, sample: Sample, grid: int) -> list[set[str]] | None:
    """For each of the grid×grid patches (row by row), the words naming what it shows.

    A shape covering at least 8 % of a patch adds its kind and colour, and the patch's place:
    "left"/"right" for the left or right half of the image, "upper"/"lower" (and "above"/
    "below", the position questions' words) for the top or bottom half. A VRP pointer (its
    exact RGB) covering at least 2 % adds "marked" (the questions say "the object marked by the
    red box"; the pointer's colour is left out so that colour words always mean a shape's
    colour). A patch with none of these is "empty": a zero target would leave the language
    model's first RMSNorm to blow the regression's leftover noise up to full-size tokens that
    drown the few patches showing something (with it, position questions leave chance). None
    for images whose geometry is not the scene's (VRP "full" variants, whose canvas may be
    extended for the text).
    """
    import numpy as np

    vrp = sample.metadata.get("vrp")
    if vrp is not None and vrp["intervention"] == "full":
        return None
    pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    height, width, _ = pixels.shape
    if height != width or width % grid:
        return None
    block = width // grid

    def coverage(mask):
        return mask.reshape(grid, block, grid, block).mean(axis=(1, 3)).reshape(-1)

    def place(k: int) -> set[str]:
        row, column = k // grid, k % grid
        vertical = {"upper", "above"} if row < grid // 2 else {"lower", "below"}
        return {"left" if column < grid // 2 else "right"} | vertical

    words: list[set[str]] = [set() for _ in range(grid * grid)]
    ink = (pixels != 255).any(axis=2)
    pointer = np.zeros_like(ink)
    if vrp is not None and vrp["intervention"] == "partial":
        pointer = (pixels == np.array(POINTER_RGB[vrp["color"]])).all(axis=2)
        for k in np.flatnonzero(coverage(pointer) >= 0.02):
            words[k].add("marked")
    ys, xs = np.mgrid[0:height, 0:width]
    for shape in sample.metadata["shapes"]:
        x0, y0, x1, y1 = shape["box"]
        mask = ink & ~pointer & (xs >= x0) & (xs < x1) & (ys >= y0) & (ys < y1)
        for k in np.flatnonzero(coverage(mask) >= 0.08):
            words[k] |= {shape["shape"], shape["color"]} | place(k)
    return [patch or {"empty"} for patch in words]


class DataSet:
    """Images (uint8, already resized and cropped as the processor does) and their questions."""

    def __init__(self, processor, groups: list[list[Sample]], specs: dict[str, object], exclude: set[str]) -> None:
        self.examples: list[Example] = []
        self.groups: list[list[int]] = []  # the examples asked about each image
        self.dropped = 0
        self.hashes: set[str] = set()
        self.align: list[torch.Tensor | None] = []  # per image: patches × ALIGN_WORDS multi-hot, or None
        pixels = []
        batch: list = []

        def flush() -> None:
            if batch:
                out = processor.image_processor(images=batch, do_rescale=False, do_normalize=False,
                                                return_tensors="pt")["pixel_values"]
                pixels.append(out.round().to(torch.uint8))
                batch.clear()

        for group in groups:
            image = load_image(group[0].images[0])
            digest = image_hash(image)
            if digest in exclude:
                self.dropped += 1
                continue
            self.hashes.add(digest)
            index = sum(len(p) for p in pixels) + len(batch)
            batch.append(image)
            words = patch_words(image, group[0], IMAGE_SIZE // PATCH_SIZE)
            self.align.append(None if words is None else torch.tensor(
                [[w in patch for w in ALIGN_WORDS] for patch in words], dtype=torch.bool))
            self.groups.append(list(range(len(self.examples), len(self.examples) + len(group))))
            for sample in group:
                spec = specs[sample.benchmark]
                prompt = render_prompt(spec.task_settings(sample.task).prompt, sample)  # type: ignore[attr-defined]
                task = f"{sample.benchmark}/{sample.task}"
                if "vrp" in sample.metadata:
                    task += "/" + sample.metadata["vrp"]["intervention"]
                self.examples.append(Example(index, task, prompt, sample.answer))
            if len(batch) >= 256:
                flush()
        flush()
        self.pixels = torch.cat(pixels)


def normalized(pixels: torch.Tensor, processor) -> torch.Tensor:
    """uint8 images → the processor's pixel_values (rescale, then normalise with CLIP's mean/std)."""
    ip = processor.image_processor
    mean = torch.tensor(ip.image_mean).view(1, 3, 1, 1)
    std = torch.tensor(ip.image_std).view(1, 3, 1, 1)
    return (pixels.float() * ip.rescale_factor - mean) / std


# ---------------------------------------------------------------------------------------------
# Tokenizer, processor, model
# ---------------------------------------------------------------------------------------------


def chat_messages(prompt: str) -> list[dict]:
    """The conversation HFModel sends: one user turn, the image, then the text."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}]


def chat_text(prompt: str) -> str:
    """The prompt rendered with the chat template (checked against the processor's rendering)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(CHAT_TEMPLATE)
    return template.render(messages=chat_messages(prompt), add_generation_prompt=True)


def build_processor(corpus: list[str]):
    """A byte-level BPE tokenizer trained on `corpus`, wrapped in a LlavaProcessor (tiny.py's recipe)."""
    return llava_processor(bpe_tokenizer(corpus, VOCAB_SIZE), image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)


def build_model(tokenizer):
    """tiny.py's architecture at this script's sizes, seeded with SEED."""
    config = llava_config(tokenizer, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, vision=VISION,
                          text={"max_position_embeddings": 512, **TEXT}, vision_feature_layer=-1)
    torch.manual_seed(SEED)
    return untrained_llava(config, tokenizer)


def encode(tokenizer, example: Example) -> tuple[list[int], int]:
    """Token ids of prompt + answer + </s>, and where the answer starts."""
    text = chat_text(example.prompt).replace("<image>", "<image>" * IMAGE_TOKENS)
    prompt = tokenizer(text)["input_ids"]
    answer = tokenizer(" " + example.answer)["input_ids"] + [tokenizer.eos_token_id]
    return prompt + answer, len(prompt)


def collate(rows: list[tuple[list[int], int]], pad: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask and labels (-100 except on the answer tokens)."""
    width = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), width), pad)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    labels = torch.full((len(rows), width), -100)
    for i, (row, start) in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
        labels[i, start: len(row)] = torch.tensor(row[start:])
    return ids, mask, labels


def answer_loss(model, ids, mask, labels, pixel_values) -> torch.Tensor:
    """Cross-entropy on the answer tokens (and the closing </s>) only."""
    logits = model(input_ids=ids, attention_mask=mask, pixel_values=pixel_values).logits
    return torch.nn.functional.cross_entropy(logits[:, :-1].flatten(0, 1), labels[:, 1:].flatten(), ignore_index=-100)


def frozen_in_stage_b(name: str) -> bool:
    """Stage B keeps the vision side and the word embeddings as stage A left them (aligned)."""
    return "vision_tower" in name or "multi_modal_projector" in name or "embed_tokens" in name


def align_vision(model, tokenizer, data: DataSet, processor) -> float:
    """Stage A: train the vision tower and projector so that every image token is the sum of the
    (initial, fixed) embeddings of the words naming what its patch shows (`patch_words`).

    A stand-in for what real LLaVAs start from: a vision encoder whose features already line up
    with words (CLIP). Without it a model this small, trained from scratch, does not find in a
    few thousand steps how a question's words relate to the image (it stays at chance).
    """
    ids = []
    for word in ALIGN_WORDS:
        tokens = tokenizer(" " + word)["input_ids"]
        assert len(tokens) == 1, f"{word!r} is not one token"
        ids.append(tokens[0])
    table = model.get_input_embeddings().weight.detach()[torch.tensor(ids)].clone()
    scale = float(table.std())
    images = [k for k, words in enumerate(data.align) if words is not None]
    params = list(model.model.vision_tower.parameters()) + list(model.model.multi_modal_projector.parameters())
    optimizer = torch.optim.AdamW(params, lr=ALIGN_LEARNING_RATE, weight_decay=0.0)
    rng = torch.Generator().manual_seed(SEED + 1)
    running = 0.0
    model.train()
    for step in range(ALIGN_STEPS):
        batch = [images[k] for k in torch.randint(0, len(images), (BATCH_SIZE,), generator=rng).tolist()]
        target = torch.stack([data.align[k] for k in batch]).float() @ table
        features = image_tokens(model, normalized(data.pixels[batch], processor))
        loss = ((features - target) ** 2).mean() / scale ** 2
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        running = 0.95 * running + 0.05 * loss.item() if step else loss.item()
        if (step + 1) % 100 == 0:
            print(f"  alignment step {step + 1}/{ALIGN_STEPS}: loss {running:.3f}", flush=True)
    return running


def image_tokens(model, pixel_values: torch.Tensor) -> torch.Tensor:
    """What the language model receives for each image: (images, patches, hidden)."""
    features = model.model.get_image_features(pixel_values=pixel_values)
    features = getattr(features, "pooler_output", features)
    if isinstance(features, (list, tuple)):
        features = torch.stack(list(features))
    return features


@torch.no_grad()
def first_token_accuracy(model, data: DataSet, encoded, processor) -> dict[str, float]:
    """Per task: how often the most likely first answer token is the right one (a quick proxy)."""
    model.eval()
    hits: dict[str, list[int]] = defaultdict(list)
    pad = processor.tokenizer.pad_token_id
    for at in range(0, len(data.examples), 64):
        chunk = list(range(at, min(at + 64, len(data.examples))))
        ids, mask, _ = collate([encoded[i] for i in chunk], pad)
        pixel_values = normalized(data.pixels[[data.examples[i].image for i in chunk]], processor)
        logits = model(input_ids=ids, attention_mask=mask, pixel_values=pixel_values).logits
        for row, i in enumerate(chunk):
            tokens, start = encoded[i]
            hits[data.examples[i].task].append(int(logits[row, start - 1].argmax()) == tokens[start])
    model.train()
    return {task: sum(h) / len(h) for task, h in sorted(hits.items())}


# ---------------------------------------------------------------------------------------------
# Saving, scoring, cards
# ---------------------------------------------------------------------------------------------


def save_stage(model, processor, folder: Path, card: dict) -> None:
    """A save_pretrained folder with float16 safetensors weights, the processor and the card."""
    import copy

    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    half = copy.deepcopy(model).to(torch.float16).eval()
    half.save_pretrained(folder, safe_serialization=True)
    processor.save_pretrained(folder)
    for path in folder.iterdir():
        path.chmod(0o644)  # safetensors writes its file private; these are shipped files
    card["model"]["weights_bytes"], card["model"]["folder_bytes"] = folder_bytes(folder)
    write_card(folder, card)


def write_card(folder: Path, card: dict) -> None:
    (folder / "card.json").write_text(json.dumps(card, indent=2) + "\n")
    (folder / "README.md").write_text(card_markdown(card))


def card_markdown(card: dict) -> str:
    name, training, data, model = card["name"], card["training"], card["data"], card["model"]
    seconds, cpu = training["seconds"], training["cpu_seconds"]
    variants = data["vrp_shapes"]["variants_per_source"]
    lines = [
        f"# {name}",
        "",
        "A tiny LLaVA (CLIP-style vision tower + Llama text model) trained offline on one CPU thread on procedurally",
        "drawn shapes scenes by `scripts/train_shapes_llava.py` of pytest-mllm. A demo model: it exists so that every",
        "feature of the plugin shows a real, non-random result without downloading anything. It knows nothing else.",
        "",
        f"- stage {card['stage']} of {len(STAGES)} of one training run (`{NAME}` is the last stage):"
        f" {training['steps']} of {training['total_steps']} language-model steps",
        f"- {model['parameters']:,} parameters; weights float16 safetensors, {model['weights_bytes']:,} bytes"
        f" (whole folder {model['folder_bytes']:,} bytes); images {model['image_size']}×{model['image_size']},"
        f" patch {model['patch_size']}; vision {model['vision']}; text {model['text']}",
        f"- data: the bundled generators under seeds the bundled specs (seed {data['bundled_benchmark_seed']}) do not"
        f" use — shapes seed {data['shapes']['seed']}, images per task {data['shapes']['images_per_task']};"
        f" vrp_shapes seed {data['vrp_shapes']['seed']}, {data['vrp_shapes']['sources']} scenes, each with its"
        f" un-intervened question, {variants['partial']} partial and {variants['full']} full VRP variants;"
        f" {data['images']:,} images, {data['questions']:,} questions, in the bundled specs' prompt templates;"
        f" {data['hash_collisions_dropped']} images dropped for equal pixels with a benchmark image",
        "- extra questions: a multiple-choice question is also asked with its options reordered, a vrp_shapes colour"
        " question also the other way round, so that every image is asked a yes/no pair or a pair with different"
        " letters, side by side in one batch (the shapes yes/no tasks come in such pairs already)",
        f"- stage A ({training['stage_a']['steps']} steps): {training['stage_a']['what']}",
        f"- stage B: {training['stage_b']['what']}; curriculum {training['stage_b']['curriculum']}",
        f"- time on the build machine (2 shared cores, 1 thread): drawing the data {seconds['data']:.0f} s, stage A"
        f" {seconds['stage_a']:.0f} s, stage B to this stage {seconds['stage_b_to_here']:.0f} s"
        + (f"; whole run {seconds['run']:.0f} s ({cpu['run']:.0f} s of CPU time)" if "run" in seconds else ""),
        "",
    ]
    scores = card.get("scores")
    if scores:
        lines += ["## Accuracy on the bundled suites", "",
                  f"`pytest --mllm={name} --mllm-bench=BENCH --mllm-json=out.json` (per task from out.json; for vrp_shapes"
                  " also per VRP level — none: the location in words, partial: a pointer, full: the question drawn"
                  " on the image):", "",
                  "| suite | accuracy by task |", "|---|---|"]
        for bench, values in scores.items():
            lines.append(f"| {bench} | " + ", ".join(f"{key} {value:.3f}" for key, value in values.items()) + " |")
        lines.append("")
    return "\n".join(lines)


def folder_bytes(folder: Path) -> tuple[int, int]:
    weights = sum(p.stat().st_size for p in folder.glob("*.safetensors"))
    return weights, sum(p.stat().st_size for p in folder.iterdir() if p.is_file())


def score_stage(model: str, bench: str, workdir: Path) -> dict[str, float]:
    """Accuracy of one stage on one bundled suite, run through pytest itself.

    Overall and per task from the plugin's metrics; for vrp_shapes also per intervention
    level and per task at each level, from the records in the JSON.
    """
    out = workdir / f"{model.replace('@', '_').replace('/', '_').replace(':', '_')}-{bench}.json"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm={model}",
           f"--mllm-bench={bench}", f"--mllm-json={out}", "--mllm-cache=off"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True)
    if not out.is_file():
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    data = json.loads(out.read_text())
    metrics = data["benchmarks"][bench]["metrics"]
    scores = {"overall": metrics["accuracy"]}
    scores.update({key.removesuffix(".accuracy"): value for key, value in metrics.items()
                   if key.endswith(".accuracy") and key.count(".") == 1})
    if bench == "vrp_shapes":
        by: dict[str, list[bool]] = defaultdict(list)
        for record in data["records"]:
            level = (record.get("variant") or {}).get("intervention", "none")
            right = record["status"] == "correct"
            by[level].append(right)
            by[f"{record['task']}/{level}"].append(right)
        scores.update({key: sum(v) / len(v) for key, v in sorted(by.items())})
    return {key: round(value, 4) for key, value in scores.items()}


def evaluate_stages(out_dir: Path) -> dict[str, dict]:
    import tempfile

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for stage in STAGES:
            folder = out_dir / stage
            card = json.loads((folder / "card.json").read_text())
            started = time.perf_counter()
            model = card["name"] if out_dir.resolve() == WEIGHTS_DIR else f"hf:{folder.resolve()}"
            card["scores"] = {bench: score_stage(model, bench, Path(tmp)) for bench in ("shapes", "vrp_shapes")}
            print(f"{card['name']}: {json.dumps(card['scores'])} ({time.perf_counter() - started:.0f} s)", flush=True)
            write_card(folder, card)
            results[stage] = card["scores"]
    return results


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def train(out_dir: Path, steps: int, stage_steps: dict[str, int], save_every: int = 0) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(SEED)
    began, began_cpu = time.perf_counter(), time.process_time()
    specs = {name: load_spec(find_spec(name)) for name in ("shapes", "vrp_shapes")}
    exclude = bundled_hashes()
    print(f"{len(exclude)} distinct images in the bundled shapes and vrp_shapes suites", flush=True)

    train_groups = shapes_training_samples(SHAPES_SEED, IMAGES_PER_TASK, contrasts=True)
    train_groups += vrp_training_samples(VRP_SEED, VRP_SOURCES, VRP_PARTIAL_PER_SOURCE, VRP_FULL_PER_SOURCE, contrasts=True)
    val_groups = shapes_training_samples(VAL_SHAPES_SEED, dict.fromkeys(SHAPES_TASKS, VAL_IMAGES_PER_TASK), contrasts=False)
    val_groups += vrp_training_samples(VAL_VRP_SEED, VAL_VRP_SOURCES, None, None, contrasts=False)

    corpus = [chat_text(render_prompt(specs[s.benchmark].task_settings(s.task).prompt, s)) + f" {s.answer}</s>"
              for group in train_groups[::7] for s in group]
    corpus += [" ".join(ALIGN_WORDS)] * 50  # each a token of its own, whatever the sample of prompts
    processor = build_processor(corpus)
    tokenizer = processor.tokenizer
    data = DataSet(processor, train_groups, specs, exclude)
    val = DataSet(processor, val_groups, specs, exclude | data.hashes)
    data_seconds, data_cpu = time.perf_counter() - began, time.process_time() - began_cpu
    print(f"data: {len(data.pixels)} images, {len(data.examples)} questions ({data.dropped} dropped as equal to a"
          f" benchmark image); validation {len(val.examples)} questions; {data_seconds:.0f} s", flush=True)
    print("training questions per task:", dict(sorted(Counter(e.task for e in data.examples).items())), flush=True)

    encoded = [encode(tokenizer, e) for e in data.examples]
    val_encoded = [encode(tokenizer, e) for e in val.examples]
    _check_encoding(processor, val, val_encoded)

    model = build_model(tokenizer)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"model: {parameters:,} parameters", flush=True)
    align_began, align_began_cpu = time.perf_counter(), time.process_time()
    align_loss = align_vision(model, tokenizer, data, processor)
    align_seconds, align_cpu = time.perf_counter() - align_began, time.process_time() - align_began_cpu
    print(f"stage A (alignment): {ALIGN_STEPS} steps, loss {align_loss:.3f}, {align_seconds:.0f} s", flush=True)
    for name, parameter in model.named_parameters():  # stage B trains the language model only
        if frozen_in_stage_b(name):
            parameter.requires_grad_(False)
    trained = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    decay = [p for n, p in trained if p.ndim >= 2 and "embed" not in n]
    rest = [p for n, p in trained if not (p.ndim >= 2 and "embed" not in n)]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": WEIGHT_DECAY}, {"params": rest, "weight_decay": 0.0}],
                                  lr=LEARNING_RATE, betas=(0.9, 0.98))

    def lr_at(step: int) -> float:
        if step < WARMUP_STEPS:
            return LEARNING_RATE * (step + 1) / WARMUP_STEPS
        progress = (step - WARMUP_STEPS) / max(1, steps - WARMUP_STEPS)
        return LEARNING_RATE * (0.05 + 0.95 * 0.5 * (1 + math.cos(math.pi * progress)))

    order_rng = torch.Generator().manual_seed(SEED)
    order: list[int] = []  # groups (images) still to visit in this epoch
    phase: tuple[str, ...] | None = ()
    curriculum = dict(CURRICULUM)
    pad = tokenizer.pad_token_id
    model.train()
    train_began, train_began_cpu = time.perf_counter(), time.process_time()
    running = 0.0
    stage_at = {step: f"step{step}" for step in range(save_every, steps + 1, save_every)} if save_every else {}
    stage_at.update({step: stage for stage, step in stage_steps.items()})
    history = []
    seen = 0
    for step in range(steps):
        batch: list[int] = []  # whole groups: an image's questions are always learnt side by side
        while len(batch) < BATCH_SIZE:
            if step in curriculum and phase != curriculum[step]:
                phase, order = curriculum[step], []
            if not order:
                allowed = [k for k, group in enumerate(data.groups)
                           if phase is None or data.examples[group[0]].task in phase]
                order = [allowed[k] for k in torch.randperm(len(allowed), generator=order_rng).tolist()]
            batch += data.groups[order.pop()]
        seen += len(batch)
        ids, mask, labels = collate([encoded[i] for i in batch], pad)
        pixel_values = normalized(data.pixels[[data.examples[i].image for i in batch]], processor)
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step)
        loss = answer_loss(model, ids, mask, labels, pixel_values)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for _, p in trained], 1.0)
        optimizer.step()
        running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
        done = step + 1
        if done % 100 == 0:
            print(f"step {done}/{steps} loss {running:.3f} ({time.perf_counter() - train_began:.0f} s)", flush=True)
        if done in stage_at:
            stage = stage_at[done]
            train_seconds, train_cpu = time.perf_counter() - train_began, time.process_time() - train_began_cpu
            accuracy = first_token_accuracy(model, val, val_encoded, processor)
            history.append({"stage": stage, "step": done, "validation_first_token_accuracy": accuracy})
            print(f"{stage} at step {done}: validation (first answer token) {json.dumps(accuracy)}", flush=True)
            card = {
                "name": NAME if stage == STAGES[-1] and SEED == 0 else f"{NAME}@{stage}",
                "stage": stage,
                "recipe_version": RECIPE_VERSION,
                "model": {"architecture": "LlavaForConditionalGeneration", "parameters": parameters,
                          "image_size": IMAGE_SIZE, "patch_size": PATCH_SIZE, "vision": VISION, "text": TEXT,
                          "vocab_size": len(tokenizer), "weights_dtype": "float16"},
                "training": {
                    "steps": done, "total_steps": steps, "seed": SEED, "threads": 1,
                    "stage_a": {"what": "vision tower + projector regressed onto the summed word embeddings of what"
                                        " each patch shows (kind, colour, image half, VRP pointer, or empty); LM untouched",
                                "steps": ALIGN_STEPS, "batch_images": BATCH_SIZE, "learning_rate": ALIGN_LEARNING_RATE,
                                "final_loss": round(align_loss, 4), "words": list(ALIGN_WORDS)},
                    "stage_b": {"what": "language model (vision tower, projector, word embeddings frozen), loss on the"
                                        " answer tokens and </s> only; an image's questions always in one batch",
                                "steps": done, "batch_questions": BATCH_SIZE, "questions_seen": seen,
                                "learning_rate": LEARNING_RATE, "warmup_steps": WARMUP_STEPS,
                                "schedule": "linear warm-up, cosine to 5 %",
                                "optimizer": "AdamW(0.9, 0.98), weight decay 0.01, grad clip 1.0",
                                "curriculum": [[at, list(tasks) if tasks else "all"] for at, tasks in CURRICULUM]},
                    "seconds": {"data": round(data_seconds, 1), "stage_a": round(align_seconds, 1),
                                "stage_b_to_here": round(train_seconds, 1)},
                    "cpu_seconds": {"data": round(data_cpu, 1), "stage_a": round(align_cpu, 1),
                                    "stage_b_to_here": round(train_cpu, 1)},
                },
                "data": {
                    "shapes": {"generator": "pytest_mllm.loaders.shapes", "seed": SHAPES_SEED,
                               "images_per_task": IMAGES_PER_TASK},
                    "vrp_shapes": {"generator": "pytest_mllm.loaders.vrp_shapes + pytest_mllm.vrp.expand", "seed": VRP_SEED,
                                   "sources": VRP_SOURCES, "variants_per_source": {
                                       "none": 1, "partial": VRP_PARTIAL_PER_SOURCE, "full": VRP_FULL_PER_SOURCE}},
                    "bundled_benchmark_seed": 0,
                    "validation_seeds": {"shapes": VAL_SHAPES_SEED, "vrp_shapes": VAL_VRP_SEED},
                    "images": len(data.pixels), "questions": len(data.examples),
                    "hash_collisions_dropped": data.dropped,
                    "prompts": "the bundled specs' templates (benchmarks/shapes.yaml, benchmarks/vrp_shapes.yaml)",
                },
                "validation_first_token_accuracy": accuracy,
            }
            save_stage(model, processor, out_dir / stage, card)
    total, total_cpu = time.perf_counter() - train_began, time.process_time() - train_began_cpu
    for stage in STAGES:  # every card gets the run's totals
        card = json.loads((out_dir / stage / "card.json").read_text())
        card["training"]["seconds"].update(stage_b=round(total, 1), run=round(time.perf_counter() - began, 1))
        card["training"]["cpu_seconds"].update(stage_b=round(total_cpu, 1), run=round(time.process_time() - began_cpu, 1))
        card["model"]["weights_bytes"], card["model"]["folder_bytes"] = folder_bytes(out_dir / stage)
        write_card(out_dir / stage, card)
    print(f"stage B: {steps} steps in {total:.0f} s ({total_cpu:.0f} s CPU); data {data_seconds:.0f} s, stage A"
          f" {align_seconds:.0f} s; whole run {time.perf_counter() - began:.0f} s ({time.process_time() - began_cpu:.0f} s CPU)",
          flush=True)


def _check_encoding(processor, data: DataSet, encoded) -> None:
    """The hand-built token ids must equal what the processor makes of the same prompt."""
    from PIL import Image

    for i in (0, len(data.examples) // 2, len(data.examples) - 1):
        text = chat_text(data.examples[i].prompt)
        rendered = processor.apply_chat_template(chat_messages(data.examples[i].prompt), add_generation_prompt=True,
                                                 tokenize=False)
        assert rendered == text, f"chat template rendered differently: {rendered!r} != {text!r}"
        ids = processor(text=[text], images=[Image.new("RGB", (IMAGE_SIZE, IMAGE_SIZE))], return_tensors="pt")["input_ids"]
        tokens, start = encoded[i]
        assert ids[0].tolist() == tokens[:start], "training prompts differ from the processor's"


def main(argv: list[str] | None = None) -> int:
    global VRP_SOURCES, LEARNING_RATE, ALIGN_STEPS, SEED
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=WEIGHTS_DIR, help="where the stage folders go (default: the package's)")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--lr", type=float, default=LEARNING_RATE)
    parser.add_argument("--align-steps", type=int, default=ALIGN_STEPS)
    parser.add_argument("--data-scale", type=float, default=1.0, help="scale the training set (for quick trials)")
    parser.add_argument("--seed", type=int, default=SEED, help="initial weights, alignment draws and data order"
                        " (the shipped ladder: 0)")
    parser.add_argument("--save-every", type=int, default=0, metavar="K",
                        help="also save a checkpoint every K language-model steps (DIR/stepK, DIR/step2K, …)")
    parser.add_argument("--evaluate", action="store_true", help="score every stage on the bundled suites afterwards")
    parser.add_argument("--evaluate-only", action="store_true", help="only score the stages already in --out")
    args = parser.parse_args(argv)
    if args.evaluate_only:
        evaluate_stages(args.out)
        return 0
    LEARNING_RATE, ALIGN_STEPS, SEED = args.lr, args.align_steps, args.seed
    if args.data_scale != 1.0:
        for task in IMAGES_PER_TASK:
            IMAGES_PER_TASK[task] = max(1, round(IMAGES_PER_TASK[task] * args.data_scale))
        VRP_SOURCES = max(1, round(VRP_SOURCES * args.data_scale))
    stage_steps = {stage: max(1, round(step * args.steps / STEPS)) for stage, step in STAGE_STEPS.items()}
    train(args.out, args.steps, stage_steps, args.save_every)
    if args.evaluate:
        evaluate_stages(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
