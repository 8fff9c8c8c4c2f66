"""The transformers side of a request: the processor (built without its video part) and the
model inputs of a batch, rendered as each family's documented usage does.

Needs torch and transformers (the `hf` extra); imported by `models/hf.py` only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import inspect
import threading
from functools import cache, wraps
from typing import Any

from pytest_mllm.models.families import Conventions, conventions_for
from pytest_mllm.sample import Request

_VIDEO = "video_processor"
_BUILDING = threading.local()  # set while a processor without its video part runs its family's __init__
_IMAGES = "\x00images\x00"  # where an interleaved prompt's images go


class _AbsentVideoPart:
    """Where a processor keeps its video processor: absent, for image benchmarks.

    Families that read video settings find none: SmolVLM's chat-template code its sampling defaults
    (`num_frames`, `fps`), as for a request without video; MiniCPM-V's processor its slicing settings
    as it is built; ERNIE's saving its font file. Anything else is an error that says why.
    """

    num_frames = None
    fps = None
    slice_mode = None
    downsample_mode = None
    font = ""

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"this processor was built without its video part (no `{name}`): "
                             "pytest-mllm's benchmarks have no video")

    def __bool__(self) -> bool:
        return False


_ABSENT = _AbsentVideoPart()


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
        attributes = processor_class.get_attributes()
        return attributes if getattr(_BUILDING, "active", False) else [a for a in attributes if a != _VIDEO]

    @wraps(processor_class.__init__)  # its signature is the family's: saving reads the settings it names
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        # the family's __init__ hands its parts to ProcessorMixin by position, the video processor among them
        # (first, for Video-LLaVA and LLaVA-NeXT-Video): while it runs, the attributes are the family's own
        given = inspect.signature(processor_class.__init__).bind_partial(self, *args, **kwargs)
        if given.arguments.get(_VIDEO) is None:
            given.arguments[_VIDEO] = _ABSENT
        _BUILDING.active = True
        try:
            processor_class.__init__(*given.args, **given.kwargs)
        finally:
            _BUILDING.active = False
        self.__dict__.pop(_VIDEO, None)  # not saved: the class's absent part shows through

    def check_argument_for_proper_class(self: Any, name: str, argument: Any) -> Any:
        if name == _VIDEO and (argument is None or argument is _ABSENT):
            return None
        return processor_class.check_argument_for_proper_class(self, name, argument)

    def from_args_and_dict(cls: type, args: Any, processor_dict: dict[str, Any], **kwargs: Any) -> Any:
        # what ProcessorMixin.from_args_and_dict does, with the parts by name (the wrapped __init__ hides the
        # family's parameter names from it): the saved settings the family's __init__ names, over them `kwargs`
        return_unused = kwargs.pop("return_unused_kwargs", False)
        parts = dict(zip(get_attributes(cls), args))
        named = [name for name, parameter in inspect.signature(processor_class.__init__).parameters.items()
                 if name != "self" and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]
        settings = {k: v for k, v in {**processor_dict, **kwargs}.items()
                    if k not in parts and k not in (_VIDEO, "auto_map", "processor_class")}
        processor = cls(**parts,
                        **{k: v for k, v in settings.items() if k in named})
        unused = {k: v for k, v in settings.items() if k not in named}
        return (processor, unused) if return_unused else processor

    return type(processor_class.__name__, (processor_class,), {
        "__init__": __init__, "from_args_and_dict": classmethod(from_args_and_dict),
        "get_attributes": classmethod(get_attributes), "check_argument_for_proper_class": check_argument_for_proper_class,
        _VIDEO: _ABSENT, "__module__": processor_class.__module__, "__doc__": processor_class.__doc__})


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
    placed as the family's conventions say (the text: the prompt, or the family's task prompt)."""
    images = [{"type": "image", "image": image} for image in request.images]
    text = [{"type": "text", "text": prompt_text(request, conventions, images="") or ""}]
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
    Without: `processor(text=…, images=…)` with the text the model card shows (`prompt_text`), the
    images of each prompt as a list (one image: the image itself), or IDEFICS' interleaved prompts.
    """
    inputs = _inputs(processor, requests, conventions)
    for name in conventions.dropped_inputs:
        inputs.pop(name, None)
    return inputs


def _inputs(processor: Any, requests: Sequence[Request], conventions: Conventions) -> Any:
    if conventions.chat_template:
        chats = [messages(r, conventions) for r in requests]
        return processor.apply_chat_template(chats, add_generation_prompt=True, tokenize=True, return_dict=True,
                                             return_tensors="pt",
                                             processor_kwargs={"padding": True, **conventions.call_kwargs})
    if conventions.interleaved:
        return processor(text=[_interleave(prompt_text(r, conventions, images=_IMAGES), r.images) for r in requests],
                         padding=True, return_tensors="pt", **conventions.call_kwargs)
    texts = [prompt_text(r, conventions) for r in requests]
    images: list[Any] | None = None
    if any(r.images for r in requests):
        images = [r.images[0] if conventions.max_images == 1 else list(r.images) for r in requests]
    if texts[0] is None:
        return processor(images=images, return_tensors="pt", **conventions.call_kwargs)
    return processor(text=texts, images=images, padding=True, return_tensors="pt", **conventions.call_kwargs)


def prompt_text(request: Request, conventions: Conventions, images: str | None = None) -> str | None:
    """The text a family without a chat template is given: its prompt format with the request's prompt, and
    `images` (default: the family's image placeholder once per image) where the format says "{images}"
    (None: the family takes no text)."""
    if conventions.prompt_format is None:
        return None
    marks = conventions.image_placeholder * len(request.images) if images is None else images
    return conventions.prompt_format.replace("{images}", marks).replace("{prompt}", request.prompt)


def _interleave(text: str | None, images: Sequence[Any]) -> list[Any]:
    """IDEFICS' prompt list: the text around `_IMAGES` (where the format said "{images}") with the images between."""
    before, _, after = (text or "").partition(_IMAGES)
    return [piece for piece in (before, *images, after) if not isinstance(piece, str) or piece]


def too_many_images(request: Request, conventions: Conventions) -> str | None:
    """Why the family cannot take this request's images (None: it can)."""
    limit = conventions.max_images
    if limit is None or len(request.images) <= limit:
        return None
    return (f"this family takes {limit} image{'s' if limit != 1 else ''} per prompt and the sample has "
            f"{len(request.images)} (models/families.py: max_images)")


def load_conventions(target: str, *, trust_remote_code: bool = False) -> Conventions:
    """The conventions of the family `target`'s config names (`models/families.py`)."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(target, trust_remote_code=trust_remote_code)
    return conventions_for(getattr(config, "model_type", None))
