"""Each family's reference inference: its documented transformers usage, one request at a time,
written from the model cards and the transformers docs, with no pytest-mllm code on the path.

    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder)
    inputs = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                           return_dict=True, return_tensors="pt")
    output = model.generate(**inputs, do_sample=False, max_new_tokens=N)
    processor.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

PaliGemma (no chat template) is called as its model card shows: `processor(text=prompt, images=image)`.
On a machine without torchvision, a processor that declares a video processor cannot be loaded
whole (transformers 5 needs torchvision for any video processor): it is then assembled from its
saved parts, its video processor a stand-in that is never called (its class check skipped), which
changes nothing for images.
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from pathlib import Path
from typing import Any

import torch
import transformers
from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor, AutoTokenizer
from transformers.utils import is_torchvision_available


def documented_processor(folder: Path) -> Any:
    """`AutoProcessor.from_pretrained(folder)`, or its parts without a video processor (no torchvision)."""
    saved = json.loads((folder / "processor_config.json").read_text())
    processor_class = getattr(transformers, saved.pop("processor_class"))
    if is_torchvision_available() or "video_processor" not in processor_class.get_attributes():
        return AutoProcessor.from_pretrained(folder)

    class WithoutVideoCheck(processor_class):  # type: ignore[misc,valid-type]
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name != "video_processor":
                return super().check_argument_for_proper_class(argument_name, argument)

    parts: dict[str, Any] = {"image_processor": AutoImageProcessor.from_pretrained(folder),
                             "tokenizer": AutoTokenizer.from_pretrained(folder),
                             "video_processor": SimpleNamespace(num_frames=None, fps=None)}  # never called
    settings = {k: v for k, v in saved.items() if k not in parts}
    template = folder / "chat_template.jinja"
    return WithoutVideoCheck(**parts, **settings, chat_template=template.read_text() if template.exists() else None)


def reference_answers(folder: Path, requests: list[tuple[str, list[Any]]], *, max_new_tokens: int,
                      prefix: str = "") -> list[str]:
    """Greedy answers to (prompt, images) requests, one at a time, stripped of surrounding space."""
    processor = documented_processor(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32).eval()
    answers = []
    for prompt, images in requests:
        if processor.chat_template:
            content = [{"type": "image", "image": image} for image in images] + [{"type": "text", "text": prompt}]
            inputs = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                                   tokenize=True, return_dict=True, return_tensors="pt")
        else:
            inputs = processor(text=prefix + prompt, images=[images], return_tensors="pt")
        with torch.inference_mode():
            output = model.generate(**inputs, do_sample=False, max_new_tokens=max_new_tokens)
        new = output[:, inputs["input_ids"].shape[1]:]
        answers.append(processor.batch_decode(new, skip_special_tokens=True)[0].strip())
    return answers
