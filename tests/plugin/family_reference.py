"""Each family's reference inference: its documented transformers usage, one request at a time,
written from the model cards and the transformers docs, with no pytest-mllm code on the path.

A family with a chat template (most of them):

    processor = AutoProcessor.from_pretrained(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder)
    inputs = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                           return_dict=True, return_tensors="pt")
    output = model.generate(**inputs, do_sample=False, max_new_tokens=N)
    processor.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)

A family without one is called as its model card shows (`CARDS`: the text, where the images go, the
card's extra `generate` arguments). An encoder-decoder's `generate` returns the answer alone, and the
cards decode all of it. A processor that declares a video processor cannot be loaded whole on a machine without torchvision
(transformers 5 needs torchvision for any video processor), nor from a folder that saved none (the tiny
models): it is then assembled from its saved parts, its video processor a stand-in that is never
called (its class check skipped), which changes nothing for images.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
import transformers
from transformers import (AutoConfig, AutoFeatureExtractor, AutoImageProcessor, AutoModelForImageTextToText,
                          AutoProcessor,
                          AutoTokenizer)
from transformers.utils import is_torchvision_available


@dataclass(frozen=True)
class Card:
    """How a model card calls a family that has no chat template."""

    text: str | None  # the prompt, "{q}" the question and "{img}" one image mark per image; None: images only
    image_mark: str = ""
    one_image: bool = False  # the card passes one image per prompt (a request with more is not asked)
    idefics: bool = False  # IDEFICS' prompt list of strings and images
    eos: tuple[str, ...] = ()  # tokens the card adds to generate's stopping tokens
    bad_words: tuple[str, ...] = ()  # tokens the card forbids (`bad_words_ids`)
    extra: dict[str, Any] = field(default_factory=dict)


CARDS: dict[str, Card] = {
    # google/paligemma-3b-mix-224: "answer en " + question
    "paligemma": Card("answer en {q}"),
    # Salesforce/blip-image-captioning-base: unconditional captioning, processor(image)
    "blip": Card(None, one_image=True),
    # Salesforce/blip2-opt-2.7b: "Question: … Answer:"
    "blip-2": Card("Question: {q} Answer:", one_image=True),
    # Salesforce/instructblip-vicuna-7b: the instruction itself
    "instructblip": Card("{q}", one_image=True),
    # microsoft/kosmos-2-patch14-224: "<grounding>" before the text
    "kosmos-2": Card("<grounding> Question: {q} Answer:", one_image=True),
    # microsoft/Florence-2-base: a task token; "<CAPTION>" for a caption
    "florence2": Card("<CAPTION>", one_image=True),
    # facebook/chameleon-7b: the question, then "<image>"
    "chameleon": Card("{q}{img}", image_mark="<image>"),
    # microsoft/git-base-textvqa: [CLS] + the question's tokens, no [SEP]
    "git": Card("{q}", one_image=True, extra={"git": True}),
    # HuggingFaceM4/idefics-9b-instruct: ["User:", image, question + "<end_of_utterance>", "\nAssistant:"]
    "idefics": Card("User:{img}{q}<end_of_utterance>\nAssistant:", idefics=True, eos=("<end_of_utterance>",),
                    bad_words=("<image>", "<fake_token_around_image>")),
    # stepfun-ai/GOT-OCR-2.0-hf: processor(image), stop at "<|im_end|>"
    "got_ocr2": Card(None, one_image=True, eos=("<|im_end|>",)),
    # Emu3-community/Emu3-Chat-hf (transformers' Emu3 docs)
    "emu3": Card("You are a helpful assistant. USER: {img}{q} ASSISTANT:", image_mark="<image>"),
    # microsoft/kosmos-2.5 (transformers' docs): "<ocr>", `height` and `width` popped before generate
    "kosmos-2.5": Card("<ocr>", one_image=True, extra={"drop": ("height", "width")}),
    # PaddlePaddle/PP-FormulaNet_plus-L_safetensors: the image alone
    "pp_formulanet": Card(None, one_image=True),
}


# chat-template families given a task instead of the question (their model cards')
CHAT_TASK: dict[str, str] = {
    "pp_chart2table": "Chart to table",  # PaddlePaddle/PP-Chart2Table_safetensors
}
# chat-template families whose model needs more than the processor returns by default
CHAT_EXTRA: dict[str, dict[str, Any]] = {
    # Cosmos3-Edge's model: "`mm_token_type_ids` is returned by the processor alongside `input_ids`"
    "cosmos3_edge": {"return_mm_token_type_ids": True},
}


def documented_processor(folder: Path) -> Any:
    """`AutoProcessor.from_pretrained(folder)`, or its parts without a video processor (no torchvision)."""
    saved = json.loads((folder / "processor_config.json").read_text())
    processor_class = getattr(transformers, saved.pop("processor_class"))
    has_video = "video_processor" in saved or (folder / "video_preprocessor_config.json").exists()
    if "video_processor" not in processor_class.get_attributes() or (has_video and is_torchvision_available()):
        return AutoProcessor.from_pretrained(folder)

    class WithoutVideoCheck(processor_class):  # type: ignore[misc,valid-type]
        def check_argument_for_proper_class(self, argument_name: str, argument: Any) -> Any:
            if argument_name != "video_processor":
                return super().check_argument_for_proper_class(argument_name, argument)

    loaders = {"image_processor": AutoImageProcessor.from_pretrained, "tokenizer": AutoTokenizer.from_pretrained,
               "feature_extractor": AutoFeatureExtractor.from_pretrained}
    parts: dict[str, Any] = {name: loaders[name](folder) for name in processor_class.get_attributes() if name in loaders}
    parts["video_processor"] = SimpleNamespace(num_frames=None, fps=None, slice_mode=None,
                                               downsample_mode=None)  # never called
    settings = {k: v for k, v in saved.items() if k not in parts}
    template = folder / "chat_template.jinja"
    return WithoutVideoCheck(**parts, **settings, chat_template=template.read_text() if template.exists() else None)


def _card_inputs(processor: Any, card: Card, prompt: str, images: list[Any]) -> Any:
    if card.text is None:
        return processor(images=images[0], return_tensors="pt")
    if card.idefics:
        before, after = card.text.replace("{q}", prompt).split("{img}")
        return processor(text=[[before, *images, after]], return_tensors="pt")
    if card.extra.get("git"):
        tokens = processor.tokenizer(prompt, add_special_tokens=False).input_ids
        pixels = processor(images=images[0], return_tensors="pt").pixel_values
        return {"pixel_values": pixels, "input_ids": torch.tensor([[processor.tokenizer.cls_token_id, *tokens]])}
    text = card.text.replace("{img}", card.image_mark * len(images)).replace("{q}", prompt)
    inputs = processor(text=text, images=images[0] if card.one_image else [images], return_tensors="pt")
    for name in card.extra.get("drop", ()):
        inputs.pop(name)
    return inputs


def reference_answers(folder: Path, requests: list[tuple[str, list[Any]]], *, max_new_tokens: int) -> list[str | None]:
    """Greedy answers to (prompt, images) requests, one at a time, stripped of surrounding space (None for a
    request with more images than the family's card passes)."""
    model_type = json.loads((folder / "config.json").read_text())["model_type"]
    processor = documented_processor(folder)
    model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32).eval()
    card = CARDS.get(model_type)
    arguments: dict[str, Any] = {}
    if card is not None and card.eos:
        eos = model.generation_config.eos_token_id
        eos = [eos] if isinstance(eos, int) else list(eos or [])
        arguments["eos_token_id"] = eos + processor.tokenizer.convert_tokens_to_ids(list(card.eos))
    if card is not None and card.bad_words:
        arguments["bad_words_ids"] = [[i] for i in processor.tokenizer.convert_tokens_to_ids(list(card.bad_words))]
    answers: list[str | None] = []
    for prompt, images in requests:
        if card is None:
            content = [{"type": "image", "image": image} for image in images] + [
                {"type": "text", "text": CHAT_TASK.get(model_type, prompt)}]
            inputs = processor.apply_chat_template([{"role": "user", "content": content}], add_generation_prompt=True,
                                                   tokenize=True, return_dict=True, return_tensors="pt",
                                                   **CHAT_EXTRA.get(model_type, {}))
        elif card.one_image and len(images) > 1:
            answers.append(None)
            continue
        else:
            inputs = _card_inputs(processor, card, prompt, images)
        with torch.inference_mode():
            output = model.generate(**inputs, do_sample=False, max_new_tokens=max_new_tokens, **arguments)
        if not model.config.is_encoder_decoder and not getattr(model.config.get_text_config(), "is_encoder_decoder",
                                                                  False) and "input_ids" in inputs:
            output = output[:, inputs["input_ids"].shape[1]:]
        answers.append(processor.batch_decode(output, skip_special_tokens=True)[0].strip())
    return answers


def describe_reference(folder: Path) -> str:
    """What the reference loop does for the family in `folder`, in a few words (for the sweep's table)."""
    model_type = json.loads((folder / "config.json").read_text())["model_type"]
    card = CARDS.get(model_type)
    config = AutoConfig.from_pretrained(folder)
    decoded = ("decodes all `generate` returns (an encoder-decoder)" if config.is_encoder_decoder
               or getattr(config.get_text_config(), "is_encoder_decoder", False) else "decodes the new tokens")
    if card is None:
        extra = "".join(f", {k}={v}" for k, v in CHAT_EXTRA.get(model_type, {}).items())
        task = f", the text {CHAT_TASK[model_type]!r} for every question" if model_type in CHAT_TASK else ""
        return f"`apply_chat_template(tokenize=True{extra})`{task}; {decoded}"
    if card.text is None:
        decoded = "decodes all `generate` returns (it was given no text)"
    if card.idefics:
        call = f"`processor(text=[{card.text!r} with the images at {{img}}])`"
    elif card.extra.get("git"):
        call = "[CLS] + the question's tokens, `pixel_values` from the processor"
    elif card.text is None:
        call = "`processor(images=image)`, no text"
    else:
        call = f"`processor(text={card.text!r}, images=…)`"
    stops = f"; stops at {', '.join(card.eos)}" if card.eos else ""
    stops += f"; drops {', '.join(card.extra['drop'])} before `generate`" if card.extra.get("drop") else ""
    return f"{call}{stops}; {decoded}" + ("; one image per prompt" if card.one_image else "")
