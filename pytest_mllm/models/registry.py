"""Model specs from the command line → model objects.

Forms: a short alias (`llava-1.5-7b`), `hf:<repo or folder>`, `tiny-llava`,
`baseline:random[:seed]`, `baseline:yes`, `baseline:no`, `replay:<path>`,
`openai:<model>` (an OpenAI-compatible endpoint), a name
registered through the `pytest_mllm.models` entry point group (`name` or `name:arg`),
or anything a conftest's `pytest_mllm_make_model` hook returns.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.models.shapes_llava import is_shapes_llava, model_names as shapes_llava_names
from pytest_mllm.sample import Model

if TYPE_CHECKING:
    from pytest_mllm.engine.endpoint import Endpoint

# alias → hub repo; the comment names the family (config.json's model_type) whose prompting conventions
# models/families.py holds, and the tiny model of models/tiny_families.py the tests verify it with.
ALIASES: dict[str, str] = {
    "llava-1.5-7b": "llava-hf/llava-1.5-7b-hf",  # llava (tiny-llava)
    "llava-1.5-13b": "llava-hf/llava-1.5-13b-hf",  # llava
    "llava-next-7b": "llava-hf/llava-v1.6-mistral-7b-hf",  # llava_next
    "llava-next-13b": "llava-hf/llava-v1.6-vicuna-13b-hf",  # llava_next
    "llava-onevision-0.5b": "llava-hf/llava-onevision-qwen2-0.5b-ov-hf",  # llava_onevision
    "llava-onevision-7b": "llava-hf/llava-onevision-qwen2-7b-ov-hf",  # llava_onevision
    "idefics2-8b": "HuggingFaceM4/idefics2-8b",  # idefics2
    "idefics3-8b": "HuggingFaceM4/Idefics3-8B-Llama3",  # idefics3
    "paligemma-3b": "google/paligemma-3b-mix-224",  # paligemma: no chat template, "answer en " prefix
    "qwen2-vl-2b": "Qwen/Qwen2-VL-2B-Instruct",  # qwen2_vl
    "qwen2-vl-7b": "Qwen/Qwen2-VL-7B-Instruct",  # qwen2_vl
    "qwen2.5-vl-3b": "Qwen/Qwen2.5-VL-3B-Instruct",  # qwen2_5_vl
    "qwen2.5-vl-7b": "Qwen/Qwen2.5-VL-7B-Instruct",  # qwen2_5_vl
    "qwen2.5-vl-72b": "Qwen/Qwen2.5-VL-72B-Instruct",  # qwen2_5_vl
    "qwen3-vl-2b": "Qwen/Qwen3-VL-2B-Instruct",  # qwen3_vl
    "qwen3-vl-8b": "Qwen/Qwen3-VL-8B-Instruct",  # qwen3_vl
    "smolvlm-2b": "HuggingFaceTB/SmolVLM-Instruct",  # idefics3
    "smolvlm2-2.2b": "HuggingFaceTB/SmolVLM2-2.2B-Instruct",  # smolvlm
    "gemma-3-4b": "google/gemma-3-4b-it",  # gemma3
    "gemma-3-27b": "google/gemma-3-27b-it",  # gemma3
    "internvl3-1b": "OpenGVLab/InternVL3-1B-hf",  # internvl
    "internvl3-8b": "OpenGVLab/InternVL3-8B-hf",  # internvl
    "llama-3.2-11b-vision": "meta-llama/Llama-3.2-11B-Vision-Instruct",  # mllama
}
BUILTIN_FORMS = ("hf:<repo or folder>", "tiny-llava", "baseline:random[:seed]", "baseline:yes",
                 "baseline:no", "replay:<file or MME results folder>", "openai:<model>")
ENTRY_POINT_GROUP = "pytest_mllm.models"


class UnknownModel(ValueError):
    """The model spec names nothing we know; the message lists what is known."""


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def known_names() -> list[str]:
    """Every accepted model name or form, for error messages and --help."""
    return sorted(ALIASES) + list(BUILTIN_FORMS) + shapes_llava_names() + sorted(_entry_points())


def recognizes(spec: str) -> bool:
    """True when `spec` has a form this registry builds (without building anything)."""
    kind, _, arg = spec.partition(":")
    return (spec in ALIASES or spec == "tiny-llava" or (kind in ("baseline", "replay", "hf", "openai") and bool(arg))
            or is_shapes_llava(spec) or kind in _entry_points())


def model_identity(spec: str, revision: str | None = None) -> str | None:
    """The identity answers of a built-in model are cached under, computed without loading it.

    None for models not worth caching (baselines, replay), for forms built elsewhere, and for served
    models, whose identity includes what their server says of them. `revision` (--mllm-model-args) picks
    the hub snapshot of an `hf:` repo id or an alias.
    """
    from pytest_mllm.models.identity import hf_identity

    kind, _, arg = spec.partition(":")
    if kind == "hf" and arg:
        return hf_identity(arg, spec, revision)
    if spec == "tiny-llava":
        from pytest_mllm.models.tiny import ensure_tiny_llava

        return hf_identity(str(ensure_tiny_llava()), spec)
    if is_shapes_llava(spec):
        from pytest_mllm.models.shapes_llava import shapes_llava_folder

        return hf_identity(str(shapes_llava_folder(spec)), spec)
    if spec in ALIASES:
        return hf_identity(ALIASES[spec], spec, revision)
    return None  # openai:<model>: what its server says of it is asked when it loads (`OpenAIModel.identity`)


def make_model(spec: str, hf_options: dict[str, Any], endpoint: Endpoint | None = None) -> Model:
    """Build the model named by `spec` (conftest hooks are asked before this, by the plugin).

    `endpoint` is where an `openai:<model>` is served (None: `Endpoint.from_environment()`).
    """
    kind, _, arg = spec.partition(":")
    if kind == "baseline":
        from pytest_mllm.models.baselines import ConstantBaseline, RandomBaseline

        name, _, seed = arg.partition(":")
        if name == "random":
            return RandomBaseline(int(seed or 0))
        if name in ("yes", "no"):
            return ConstantBaseline(name.capitalize())
        raise UnknownModel(f"unknown baseline {arg!r}; use baseline:random[:seed], baseline:yes or baseline:no")
    if kind == "replay":
        from pytest_mllm.models.replay import ReplayModel

        return ReplayModel(Path(arg).expanduser())
    if kind == "hf" and arg:
        from pytest_mllm.models.hf import HFModel

        return HFModel(arg, **hf_options)
    if kind == "openai" and arg:
        from pytest_mllm.engine.endpoint import Endpoint
        from pytest_mllm.models.openai import OpenAIModel

        return OpenAIModel(arg, endpoint or Endpoint.from_environment())
    if spec == "tiny-llava":
        from pytest_mllm.models.hf import HFModel
        from pytest_mllm.models.tiny import ensure_tiny_llava

        return HFModel(str(ensure_tiny_llava()), name="tiny-llava", **hf_options)
    if is_shapes_llava(spec):  # trained demo models shipped in the package
        from pytest_mllm.models.hf import HFModel
        from pytest_mllm.models.shapes_llava import shapes_llava_folder

        return HFModel(str(shapes_llava_folder(spec)), name=spec, **hf_options)
    if spec in ALIASES:
        from pytest_mllm.models.hf import HFModel

        return HFModel(ALIASES[spec], name=spec, **hf_options)
    plugins = _entry_points()
    if kind in plugins:
        factory = plugins[kind].load()
        return factory(arg) if arg else factory()
    raise UnknownModel(f"unknown model {spec!r}; known models: {', '.join(known_names())}")
