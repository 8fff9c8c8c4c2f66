"""The transformers side of a request: the processor (built without its video part) and the
model inputs of a batch, rendered as each family's documented usage does.

Needs torch and transformers (the `hf` extra); imported by `models/hf.py` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from pytest_mllm.models.families import Conventions, conventions_for
from pytest_mllm.sample import Request

_VIDEO = "video_processor"


class _AbsentVideoPart:
    """Where a processor keeps its video processor: absent, for image benchmarks.

    Families whose chat-template code reads the video sampling defaults (SmolVLM's `num_frames`
    and `fps`) find none set, as for a request without video; anything else is an error that says why.
    """

    num_frames = None
    fps = None

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"this processor was built without its video part (no `{name}`): "
                             "pytest-mllm's benchmarks have no video")

    def __bool__(self) -> bool:
        return False


@cache
def image_only(processor_class: type) -> type:
    """`processor_class` without its video processor: same name, same behaviour for images.

    In transformers 5 a processor of Qwen2-VL, Qwen2.5-VL, Qwen3-VL, LLaVA-OneVision, SmolVLM or
    InternVL builds a video processor, which needs torchvision; an image benchmark does not.
    A processor without a video part is returned unchanged.
    """
    if _VIDEO not in processor_class.get_attributes():
        return processor_class

    def get_attributes(cls: type) -> list[str]:
        return [a for a in processor_class.get_attributes() if a != _VIDEO]

    def from_args_and_dict(cls: type, args: Any, processor_dict: dict[str, Any], **kwargs: Any) -> Any:
        # some families' __init__ require the argument
        return processor_class.from_args_and_dict.__func__(cls, args, processor_dict, **{_VIDEO: None, **kwargs})

    return type(processor_class.__name__, (processor_class,), {
        "from_args_and_dict": classmethod(from_args_and_dict), "get_attributes": classmethod(get_attributes),
        _VIDEO: _AbsentVideoPart(), "__module__": processor_class.__module__, "__doc__": processor_class.__doc__})


def load_processor(target: str, *, trust_remote_code: bool = False,
                   processor_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The processor saved at `target` (folder or hub id), without its video part.

    `processor_kwargs` (e.g. `max_pixels`) override the saved settings, as keyword arguments of
    `AutoProcessor.from_pretrained` do.
    """
    from transformers import AutoProcessor

    kwargs = {"trust_remote_code": trust_remote_code, **(processor_kwargs or {})}
    processor_class = _processor_class(target, trust_remote_code)
    if processor_class is None:
        return AutoProcessor.from_pretrained(target, **kwargs)
    return image_only(processor_class).from_pretrained(target, **kwargs)


def _processor_class(target: str, trust_remote_code: bool) -> type | None:
    """The transformers processor class `target` names (processor_config.json, else its config's
    model type); None for remote code or a folder that names none."""
    from transformers import AutoConfig, PROCESSOR_MAPPING
    from transformers.processing_utils import ProcessorMixin

    dictionary, _ = ProcessorMixin.get_processor_dict(target)
    name = dictionary.get("processor_class")
    if isinstance(name, str):
        import transformers

        found = getattr(transformers, name, None)
        return found if isinstance(found, type) else None
    config = AutoConfig.from_pretrained(target, trust_remote_code=trust_remote_code)
    return PROCESSOR_MAPPING.get(type(config), None)


def messages(request: Request, conventions: Conventions) -> list[dict[str, Any]]:
    """The chat of one request: an optional system turn, then a user turn of images and text
    placed as the family's conventions say."""
    images = [{"type": "image", "image": image} for image in request.images]
    text = [{"type": "text", "text": request.prompt}]
    content = images + text if conventions.images_before_text else text + images
    chat: list[dict[str, Any]] = []
    if conventions.system_prompt is not None:
        chat.append({"role": "system", "content": [{"type": "text", "text": conventions.system_prompt}]})
    chat.append({"role": "user", "content": content})
    return chat


def model_inputs(processor: Any, requests: Sequence[Request], conventions: Conventions) -> Any:
    """The padded tensors of a batch, as the family's documented usage builds them.

    With a chat template: `processor.apply_chat_template(chats, add_generation_prompt=True,
    tokenize=True, return_dict=True)`, which adds no second BOS to a template that writes one.
    Without (PaliGemma): `processor(text=prefix + prompt, images=…)`, as its model card shows.
    """
    if conventions.chat_template:
        chats = [messages(r, conventions) for r in requests]
        return processor.apply_chat_template(chats, add_generation_prompt=True, tokenize=True, return_dict=True,
                                             return_tensors="pt", processor_kwargs={"padding": True})
    texts = [conventions.prompt_prefix + r.prompt for r in requests]
    images = [list(r.images) for r in requests] if any(r.images for r in requests) else None
    return processor(text=texts, images=images, padding=True, return_tensors="pt")


def load_conventions(target: str, *, trust_remote_code: bool = False) -> Conventions:
    """The conventions of the family `target`'s config names (`models/families.py`)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(target, trust_remote_code=trust_remote_code)
    return conventions_for(getattr(config, "model_type", None))
