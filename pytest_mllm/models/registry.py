"""The built-in model kinds: what `--mllm` can name, each a factory registered with `@model_kind`
(`models/ref.py`) that imports its model's module only when it builds one.

Forms: a short alias (`llava-1.5-7b`), `hf:<repo or folder>`, `tiny-llava`,
`baseline:random[:seed]`, `baseline:yes`, `baseline:no`, `replay:<path>`,
`openai:<model>` (an OpenAI-compatible endpoint), the trained demo `shapes-llava`, a name
registered through the `pytest_mllm.models` entry point group (`name` or `name:arg`),
or anything a conftest's `pytest_mllm_make_model` hook returns.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from pytest_mllm.models.ref import MODEL_KINDS, ModelRef, model_kind
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
ENTRY_POINT_GROUP = "pytest_mllm.models"


class UnknownModel(ValueError):
    """The model spec names nothing we know; the message lists what is known."""


def _entry_points() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _hf_identity(ref: ModelRef, revision: str | None) -> str | None:
    from pytest_mllm.models.identity import hf_identity

    return hf_identity(ref.arg, ref.raw, revision)


@model_kind("alias", read=ALIASES.get, names=lambda: sorted(ALIASES), source=lambda ref: ref.arg,
            identity=_hf_identity)
def _alias(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    from pytest_mllm.models.hf import HFModel

    return HFModel(ref.arg, name=ref.raw, **hf_options)


@model_kind("hf", forms=("hf:<repo or folder>",), source=lambda ref: ref.arg, identity=_hf_identity)
def _hf(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    from pytest_mllm.models.hf import HFModel

    return HFModel(ref.arg, **hf_options)


def _tiny_llava_identity(ref: ModelRef, revision: str | None) -> str | None:
    from pytest_mllm.models.identity import hf_identity
    from pytest_mllm.models.tiny import ensure_tiny_llava

    return hf_identity(str(ensure_tiny_llava()), ref.raw)


@model_kind("tiny", read=lambda raw: "llava" if raw == "tiny-llava" else None, forms=("tiny-llava",),
            source=lambda ref: "", identity=_tiny_llava_identity)
def _tiny(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    from pytest_mllm.models.hf import HFModel
    from pytest_mllm.models.tiny import ensure_tiny_llava

    return HFModel(str(ensure_tiny_llava()), name="tiny-llava", **hf_options)


@model_kind("baseline", forms=("baseline:random[:seed]", "baseline:yes", "baseline:no"), instant=True)
def _baseline(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    from pytest_mllm.models.baselines import ConstantBaseline, RandomBaseline

    name, _, seed = ref.arg.partition(":")
    if name == "random":
        return RandomBaseline(int(seed or 0))
    if name in ("yes", "no"):
        return ConstantBaseline(name.capitalize())
    raise UnknownModel(f"unknown baseline {ref.arg!r}; use baseline:random[:seed], baseline:yes or baseline:no")


def _check_recording(ref: ModelRef) -> None:
    from pytest_mllm.models.replay import check_recording

    check_recording(ref.arg)  # ReplayFileError, a ValueError naming the formats replay reads


@model_kind("replay", forms=("replay:<file or results folder>",), instant=True, recording=True,
            check=_check_recording)
def _replay(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    from pytest_mllm.models.replay import ReplayModel

    return ReplayModel(Path(ref.arg).expanduser())


@model_kind("openai", forms=("openai:<model>",), served=True)
def _openai(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    """`endpoint` is where it is served (None: `Endpoint.from_environment()`); what its server says of it is
    part of its identity, asked when it loads (`OpenAIModel.identity`)."""
    from pytest_mllm.engine.endpoint import Endpoint
    from pytest_mllm.models.openai import OpenAIModel

    return OpenAIModel(ref.arg, endpoint or Endpoint.from_environment())


def _shapes_llava_identity(ref: ModelRef, revision: str | None) -> str | None:
    from pytest_mllm.models.identity import hf_identity
    from pytest_mllm.models.shapes_llava import shapes_llava_folder

    return hf_identity(str(shapes_llava_folder(ref.raw)), ref.raw)


@model_kind("shapes-llava", read=lambda raw: raw if is_shapes_llava(raw) else None, names=shapes_llava_names,
            source=lambda ref: "", identity=_shapes_llava_identity)
def _shapes_llava(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    """The trained demo models shipped in the package."""
    from pytest_mllm.models.hf import HFModel
    from pytest_mllm.models.shapes_llava import shapes_llava_folder

    return HFModel(str(shapes_llava_folder(ref.raw)), name=ref.raw, **hf_options)


@model_kind("plugin", read=lambda raw: raw if raw.partition(":")[0] in _entry_points() else None,
            names=lambda: sorted(_entry_points()))
def _plugin(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None) -> Model:
    """A model class registered under the `pytest_mllm.models` entry point group: `name` or `name:arg`."""
    name, _, arg = ref.arg.partition(":")
    factory = _entry_points()[name].load()
    made: Model = factory(arg) if arg else factory()
    return made


BUILTIN_FORMS = tuple(form for kind in MODEL_KINDS.registered_by(__name__).values() for form in kind.forms)


def known_names() -> list[str]:
    """Every accepted model name or form, for error messages and --help."""
    return [name for kind in MODEL_KINDS.entries().values() for name in (*kind.names(), *kind.forms)]


def recognizes(spec: str) -> bool:
    """True when `spec` has a form a registered kind builds (without building anything)."""
    return ModelRef.parse(spec).known


def model_identity(ref: ModelRef, revision: str | None = None) -> str | None:
    """The identity answers of a built-in model are cached under, computed without loading it.

    None for models not worth caching (baselines, replay), for forms built elsewhere, and for served
    models, whose identity includes what their server says of them. `revision` (--mllm-model-args) picks
    the hub snapshot of an `hf:` repo id or an alias.
    """
    entry = ref.entry
    return entry.identity(ref, revision) if entry is not None and entry.identity is not None else None


def make_model(ref: ModelRef, hf_options: Mapping[str, Any], endpoint: Endpoint | None = None) -> Model:
    """Build the model `ref` names (conftest hooks are asked before this, by the plugin).

    `endpoint` is where an `openai:<model>` is served (None: `Endpoint.from_environment()`).
    """
    entry = ref.entry
    if entry is None:
        raise UnknownModel(f"unknown model {ref.raw!r}; known models: {', '.join(known_names())}")
    return entry.make(ref, hf_options, endpoint)
