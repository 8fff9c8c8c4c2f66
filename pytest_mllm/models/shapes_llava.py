"""The trained demo models: `shapes-llava` and its training ladder `shapes-llava@stage1..5`.

A tiny LLaVA (CLIP-style vision tower + Llama text model, the architecture `tiny.py`
builds, slightly enlarged) trained offline on CPU by `scripts/train_shapes_llava.py` on
scenes drawn with the bundled benchmarks' own generators under other seeds. Each stage is a
`save_pretrained` folder shipped in the package (safetensors weights, JSON tokenizer and
processor files, a chat template, and a model card `card.json` + `README.md` with its
training steps, data seeds and scores), so the names load offline through the ordinary
transformers path. `shapes-llava` is the last stage.

Pure path logic: nothing heavy is imported here.
"""

from __future__ import annotations

from pathlib import Path

NAME = "shapes-llava"
STAGES = ("stage1", "stage2", "stage3", "stage4", "stage5")
FINAL_STAGE = STAGES[-1]
WEIGHTS_DIR = Path(__file__).resolve().parent / "weights" / NAME


def model_names() -> list[str]:
    """Every accepted name: the final model, then each stage."""
    return [NAME] + [f"{NAME}@{stage}" for stage in STAGES]


def is_shapes_llava(spec: str) -> bool:
    """True when `spec` names the final model or one of its stages."""
    return spec in model_names()


def stage_of(spec: str) -> str:
    """The stage a name refers to ("shapes-llava" is the final stage)."""
    if not is_shapes_llava(spec):
        raise ValueError(f"{spec!r} is not a shapes-llava model; known: {', '.join(model_names())}")
    return spec.partition("@")[2] or FINAL_STAGE


def shapes_llava_folder(spec: str) -> Path:
    """The shipped folder holding the named stage; FileNotFoundError if it is missing."""
    folder = WEIGHTS_DIR / stage_of(spec)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(
            f"the weights of {spec!r} are missing from {folder}: reinstall pytest-mllm, or rebuild them "
            "with `python scripts/train_shapes_llava.py`"
        )
    return folder
