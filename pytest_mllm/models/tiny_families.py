"""Tiny random models of every family in the alias table, built offline for tests.

Each family is built with its real transformers classes (config, model, image processor,
processor) and a tiny byte-level BPE tokenizer carrying the family's special tokens and a chat
template written to render exactly as the family's released template does for a user turn of
images and text (the checkpoint each imitates is named next to it). Hidden sizes 16-64, one or two
layers, images of a few dozen pixels: each folder is well under a megabyte and loads in about
a second. The weights answer nonsense; the point is that every family's prompt, image tokens and
batched greedy generation go through the plugin the way the released checkpoints do.

`ensure_tiny_family(name)` builds a family once into the cache folder (see `default_family_dir`)
and reuses it after; heavy imports happen inside the builders.
"""

from __future__ import annotations

import importlib.util
import os
from functools import partial
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_mllm.models.tiny import ensure_built
from pytest_mllm.models.tiny import tiny_llava_parts
from pytest_mllm.models.tiny_chat_families import CHAT_FAMILIES
from pytest_mllm.models.tiny_prompted_families import PROMPTED_FAMILIES
from pytest_mllm.models.tiny_torchvision_families import CHAT_TORCHVISION_FAMILIES
from pytest_mllm.models.tiny_parts import (CLIP, QWEN_TOKENS, SIGLIP, VISION_WIDTH, WIDTH, greedy, qwen_vl,
                                              text_config, tiny_tokenizer, token_ids)

TINY_FAMILIES_VERSION = "3"  # bump when a recipe here or in a sibling module changes
_SEED = 0

# Qwen/Qwen2-VL-7B-Instruct and Qwen/Qwen2.5-VL-7B-Instruct: a default system turn, images first.
QWEN2_VL_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# Qwen/Qwen3-VL-2B-Instruct: no default system turn.
QWEN3_VL_TEMPLATE = QWEN2_VL_TEMPLATE.replace(
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}", "")
# llava-hf/llava-onevision-qwen2-0.5b-ov-hf: "<|im_start|>user <image>\ntext<|im_end|>\n<|im_start|>assistant\n".
ONEVISION_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }} "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] if content['type'] == 'image' %}<image>{% endfor %}"
    "{% for content in message['content'] if content['type'] == 'text' %}{{ '\n' + content['text'] }}{% endfor %}"
    "{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# llava-hf/llava-v1.6-mistral-7b-hf: "[INST] <image>\ntext [/INST]"; the tokenizer adds <s>.
LLAVA_NEXT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}[INST] {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] if content['type'] == 'image' %}<image>\n{% endfor %}"
    "{% for content in message['content'] if content['type'] == 'text' %}{{ content['text'] }}{% endfor %}"
    "{% endif %}"
    "{% if message['role'] == 'user' %} [/INST]{% else %}</s>{% endif %}"
    "{% endfor %}"
)
# HuggingFaceM4/idefics2-8b: "User:<image>text<end_of_utterance>\nAssistant:"; the tokenizer adds <s>.
_IDEFICS_TURNS = (
    "{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}"
    "{% if line['type'] == 'text' %}{{ line['text'] }}{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}"
    "{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
IDEFICS2_TEMPLATE = _IDEFICS_TURNS
# HuggingFaceM4/Idefics3-8B-Llama3: the same turns after <|begin_of_text|>, written by the template.
IDEFICS3_TEMPLATE = "<|begin_of_text|>" + _IDEFICS_TURNS
# HuggingFaceTB/SmolVLM2-2.2B-Instruct: the same turns after <|im_start|> (its BOS).
SMOLVLM_TEMPLATE = "<|im_start|>" + _IDEFICS_TURNS
# google/gemma-3-4b-it: "<bos><start_of_turn>user\n<start_of_image>text<end_of_turn>\n<start_of_turn>model\n";
# a system turn's text opens the first user turn.
GEMMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] == 'system' %}"
    "{% set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' %}"
    "{% set loop_messages = messages[1:] %}"
    "{% else %}{% set first_user_prefix = '' %}{% set loop_messages = messages %}{% endif %}"
    "{% for message in loop_messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ first_user_prefix if loop.first else '' }}"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<start_of_image>{% elif item['type'] == 'text' %}{{ item['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
# OpenGVLab/InternVL3-1B-hf: Qwen2 turns, "<IMG_CONTEXT>\n" per image before the text.
INTERNVL_TEMPLATE = (
    "{% for message in messages %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<IMG_CONTEXT>\n"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
# meta-llama/Llama-3.2-11B-Vision-Instruct:
# "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n<|image|>text<|eot_id|>" + the assistant header.
MLLAMA_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{% if message['content'] is string %}{{ message['content'] | trim }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|image|>{% elif content['type'] == 'text' %}{{ content['text'] | trim }}{% endif %}"
    "{% endfor %}{% endif %}<|eot_id|>"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)


def missing_requirements(model_type: str) -> list[str]:
    """The packages a family's tiny model needs beyond the `hf` extra that are not installed (see `REQUIRES`)."""
    return [name for name in REQUIRES.get(model_type, ()) if importlib.util.find_spec(name) is None]


def default_family_dir(name: str) -> Path:
    """`$PYTEST_MLLM_CACHE_DIR/tiny-<name>-v<VERSION>`, else under `~/.cache/pytest-mllm/`."""
    folder = f"tiny-{name}-v{TINY_FAMILIES_VERSION}"
    cache_dir = os.environ.get("PYTEST_MLLM_CACHE_DIR")
    if cache_dir:
        return Path(cache_dir).expanduser() / folder
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "pytest-mllm" / folder


def ensure_tiny_family(name: str, dest: Path | None = None) -> Path:
    """A folder holding the tiny model of family `name` (a key of `FAMILY_BUILDERS`), built if missing."""
    build = FAMILY_BUILDERS[name]
    return ensure_built(dest if dest is not None else default_family_dir(name), lambda folder: _save(build, folder),
                        TINY_FAMILIES_VERSION)


def _save(build: Callable[[], tuple[Any, Any]], folder: Path) -> None:
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        model, processor = build()
    model.eval()
    model.generation_config.do_sample = False
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


# -- the families -----------------------------------------------------------------------------------

_MROPE = {"rope_type": "default", "mrope_section": [1, 1, 2], "rope_theta": 10000.0}  # head_dim 8 → 4 pairs


def build_qwen2_vl() -> tuple[Any, Any]:
    return qwen_vl("Qwen2VLConfig", "Qwen2VLForConditionalGeneration", "Qwen2VLProcessor", QWEN2_VL_TEMPLATE,
                    patch=14, image_processor_class="Qwen2VLImageProcessor",
                    vision={"depth": 1, "embed_dim": VISION_WIDTH, "num_heads": 2, "hidden_size": WIDTH,
                            "mlp_ratio": 2},
                    text={"rope_parameters": _MROPE})


def build_qwen2_5_vl() -> tuple[Any, Any]:
    return qwen_vl("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration", "Qwen2_5_VLProcessor",
                    QWEN2_VL_TEMPLATE, patch=14, image_processor_class="Qwen2VLImageProcessor",
                    vision={"depth": 2, "hidden_size": VISION_WIDTH, "out_hidden_size": WIDTH, "num_heads": 2,
                            "intermediate_size": 2 * VISION_WIDTH, "window_size": 56, "fullatt_block_indexes": [1]},
                    text={"rope_parameters": _MROPE})


def build_qwen3_vl() -> tuple[Any, Any]:
    return qwen_vl("Qwen3VLConfig", "Qwen3VLForConditionalGeneration", "Qwen3VLProcessor", QWEN3_VL_TEMPLATE,
                    patch=16, image_processor_class="Qwen2VLImageProcessor",
                    vision={"depth": 2, "hidden_size": VISION_WIDTH, "out_hidden_size": WIDTH, "num_heads": 2,
                            "intermediate_size": 2 * VISION_WIDTH, "num_position_embeddings": 16,
                            "deepstack_visual_indexes": [1]},
                    text={"head_dim": 8, "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 2],
                                                             "mrope_interleaved": True, "rope_theta": 10000.0}})




def build_llava_onevision() -> tuple[Any, Any]:
    from transformers import (LlavaOnevisionConfig, LlavaOnevisionForConditionalGeneration,
                              LlavaOnevisionImageProcessor, LlavaOnevisionProcessor)

    from pytest_mllm.models.hf_inputs import image_only

    tokenizer = tiny_tokenizer(QWEN_TOKENS + ["<image>", "<video>"], bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                           image_token="<image>", video_token="<video>")
    size = 28
    image_processor = LlavaOnevisionImageProcessor(size={"height": size, "width": size},
                                                   image_grid_pinpoints=[[size, size], [size, 2 * size],
                                                                         [2 * size, size], [2 * size, 2 * size]])
    processor = image_only(LlavaOnevisionProcessor)(image_processor=image_processor, tokenizer=tokenizer,
                                                    num_image_tokens=(size // 14) ** 2,
                                                    vision_feature_select_strategy="full",
                                                    chat_template=ONEVISION_TEMPLATE)
    image, video, im_end, endoftext = token_ids(tokenizer, "<image>", "<video>", "<|im_end|>", "<|endoftext|>")
    config = LlavaOnevisionConfig(
        vision_config={"model_type": "siglip_vision_model", "image_size": size, "patch_size": 14, **SIGLIP},
        text_config={"model_type": "qwen2", **text_config(vocab_size=len(tokenizer), eos_token_id=im_end,
                                                    pad_token_id=endoftext)},
        image_token_id=image, video_token_id=video, vision_feature_select_strategy="full",
        vision_feature_layer=-1, image_grid_pinpoints=image_processor.image_grid_pinpoints)
    model = LlavaOnevisionForConditionalGeneration(config)
    return greedy(model, tokenizer, [im_end, endoftext]), processor


def build_llava_next() -> tuple[Any, Any]:
    from transformers import (LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextImageProcessor,
                              LlavaNextProcessor)

    tokenizer = tiny_tokenizer(["<unk>", "<s>", "</s>", "<image>"], bos="<s>", eos="</s>", pad="<unk>", adds_bos=True,
                           image_token="<image>")
    size = 32
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": size},
                                              crop_size={"height": size, "width": size},
                                              image_grid_pinpoints=[[size, size], [size, 2 * size],
                                                                    [2 * size, size], [2 * size, 2 * size]])
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=8,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   chat_template=LLAVA_NEXT_TEMPLATE)
    image, eos = token_ids(tokenizer, "<image>", "</s>")
    config = LlavaNextConfig(
        vision_config={"model_type": "clip_vision_model", "image_size": size, "patch_size": 8,
                       "projection_dim": VISION_WIDTH, **CLIP},
        text_config={"model_type": "mistral", **text_config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                                                      eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)},
        image_token_id=image, vision_feature_select_strategy="default", vision_feature_layer=-2,
        image_grid_pinpoints=image_processor.image_grid_pinpoints)
    model = LlavaNextForConditionalGeneration(config)
    return greedy(model, tokenizer, [eos]), processor


_IDEFICS_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>"]


def build_idefics2() -> tuple[Any, Any]:
    from transformers import Idefics2Config, Idefics2ForConditionalGeneration, Idefics2ImageProcessor, Idefics2Processor

    tokenizer = tiny_tokenizer(["<unk>", "<s>", "</s>"] + _IDEFICS_TOKENS, bos="<s>", eos="</s>", pad="<unk>",
                           adds_bos=True)
    image_processor = Idefics2ImageProcessor(size={"shortest_edge": 28, "longest_edge": 28}, do_image_splitting=False)
    processor = Idefics2Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=4,
                                  chat_template=IDEFICS2_TEMPLATE)
    image, eos, end_of_utterance = token_ids(tokenizer, "<image>", "</s>", "<end_of_utterance>")
    config = Idefics2Config(
        vision_config={"image_size": 28, "patch_size": 14, **SIGLIP},
        perceiver_config={"hidden_size": WIDTH, "resampler_n_latents": 4, "resampler_depth": 1,
                          "resampler_n_heads": 2, "resampler_head_dim": 8, "num_key_value_heads": 1},
        text_config={"model_type": "mistral", **text_config(vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id,
                                                      eos_token_id=eos, pad_token_id=tokenizer.pad_token_id)},
        image_token_id=image)
    model = Idefics2ForConditionalGeneration(config)
    return greedy(model, tokenizer, [eos, end_of_utterance]), processor


def _idefics3_like(config_class: Any, model_class: Any, image_processor_class: Any, processor_class: Any,
                   template: str, *, bos: str, eos: str, pad: str, adds_bos: bool) -> tuple[Any, Any]:
    """Idefics3 and SmolVLM: a 28-pixel tile of 2 x 2 patches, pixel-shuffled by 2 into one image token."""
    tokenizer = tiny_tokenizer([pad, bos, eos] + _IDEFICS_TOKENS + ["<global-img>"], bos=bos, eos=eos, pad=pad,
                           adds_bos=adds_bos)
    image, eos_id, end_of_utterance = token_ids(tokenizer, "<image>", eos, "<end_of_utterance>")
    image_processor = image_processor_class(size={"longest_edge": 56}, max_image_size={"longest_edge": 28})
    processor = processor_class(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=1,
                                chat_template=template)
    config = config_class(vision_config={"image_size": 28, "patch_size": 14, **SIGLIP}, scale_factor=2,
                          image_token_id=image,
                          text_config={"model_type": "llama", **text_config(
                              vocab_size=len(tokenizer), bos_token_id=tokenizer.bos_token_id, eos_token_id=eos_id,
                              pad_token_id=tokenizer.pad_token_id)})
    return greedy(model_class(config), tokenizer, [eos_id, end_of_utterance]), processor


def build_idefics3() -> tuple[Any, Any]:
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor

    return _idefics3_like(Idefics3Config, Idefics3ForConditionalGeneration, Idefics3ImageProcessor, Idefics3Processor,
                          IDEFICS3_TEMPLATE, bos="<|begin_of_text|>", eos="<|end_of_text|>",  # a Llama 3 tokenizer
                          pad="<|finetune_right_pad_id|>", adds_bos=True)


def build_smolvlm() -> tuple[Any, Any]:
    from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMImageProcessor, SmolVLMProcessor

    from pytest_mllm.models.hf_inputs import image_only

    return _idefics3_like(SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMImageProcessor,
                          partial(image_only(SmolVLMProcessor), video_processor=None), SMOLVLM_TEMPLATE,
                          bos="<|im_start|>", eos="<|im_end|>", pad="<|im_end|>", adds_bos=False)  # SmolLM2's


def build_paligemma() -> tuple[Any, Any]:
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor, SiglipImageProcessor

    tokenizer = tiny_tokenizer(["<pad>", "<eos>", "<bos>", "<unk>", "<image>"], bos="<bos>", eos="<eos>", pad="<pad>",
                           adds_bos=True, image_token="<image>")
    image_processor = SiglipImageProcessor(size={"height": 28, "width": 28}, image_seq_length=4)
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tokenizer)
    image, eos = token_ids(tokenizer, "<image>", "<eos>")
    config = PaliGemmaConfig(
        vision_config={"image_size": 28, "patch_size": 14, "projection_dim": WIDTH, **SIGLIP},
        text_config={"model_type": "gemma", **text_config(vocab_size=len(tokenizer), head_dim=8,
                                                    bos_token_id=tokenizer.bos_token_id, eos_token_id=eos,
                                                    pad_token_id=tokenizer.pad_token_id)},
        image_token_id=image, projection_dim=WIDTH)
    model = PaliGemmaForConditionalGeneration(config)
    return greedy(model, tokenizer, [eos]), processor


def build_gemma3() -> tuple[Any, Any]:
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3ImageProcessor, Gemma3Processor

    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
              "<end_of_image>", "<image_soft_token>"]
    tokenizer = tiny_tokenizer(tokens, bos="<bos>", eos="<eos>", pad="<pad>", adds_bos=True, image_token="<image_soft_token>",
                           boi_token="<start_of_image>", eoi_token="<end_of_image>")
    image_processor = Gemma3ImageProcessor(size={"height": 32, "width": 32})
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_length=4,
                                chat_template=GEMMA3_TEMPLATE)
    image, boi, eoi, eos, end_of_turn = token_ids(tokenizer, "<image_soft_token>", "<start_of_image>", "<end_of_image>",
                                             "<eos>", "<end_of_turn>")
    config = Gemma3Config(
        vision_config={"image_size": 32, "patch_size": 8, **SIGLIP},
        text_config=text_config(vocab_size=len(tokenizer), head_dim=8, sliding_window=64,
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=[eos, end_of_turn],
                          pad_token_id=tokenizer.pad_token_id),
        mm_tokens_per_image=4, image_token_id=image, boi_token_id=boi, eoi_token_id=eoi)
    model = Gemma3ForConditionalGeneration(config)
    return greedy(model, tokenizer, [eos, end_of_turn]), processor


def build_t5gemma2() -> tuple[Any, Any]:
    # google/t5gemma-2-270m-270m: Gemma 3's processor and turns; an encoder-decoder (the encoder reads the image)
    from transformers import Gemma3ImageProcessor, Gemma3Processor, T5Gemma2Config, T5Gemma2ForConditionalGeneration

    from pytest_mllm.models.tiny_parts import tiny_config

    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>",
              "<end_of_image>", "<image_soft_token>"]
    tokenizer = tiny_tokenizer(tokens, bos="<bos>", eos="<eos>", pad="<pad>", adds_bos=True,
                               image_token="<image_soft_token>", boi_token="<start_of_image>", eoi_token="<end_of_image>")
    processor = Gemma3Processor(image_processor=Gemma3ImageProcessor(size={"height": 32, "width": 32}),
                                tokenizer=tokenizer, image_seq_length=4, chat_template=GEMMA3_TEMPLATE)
    image, boi, eoi, eos, end_of_turn = token_ids(tokenizer, "<image_soft_token>", "<start_of_image>",
                                                  "<end_of_image>", "<eos>", "<end_of_turn>")
    ids = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id, "eos_token_id": [eos, end_of_turn],
           "pad_token_id": tokenizer.pad_token_id, "sliding_window": 64, "query_pre_attn_scalar": 8}
    config = tiny_config(T5Gemma2Config, {
        "encoder": {"text_config": ids, "vision_config": {"image_size": 32, "patch_size": 8}, "mm_tokens_per_image": 4,
                    "image_token_index": image, "boi_token_index": boi, "eoi_token_index": eoi},
        "decoder": ids, "image_token_index": image})
    model = T5Gemma2ForConditionalGeneration(config)
    return greedy(model, tokenizer, [eos, end_of_turn]), processor


def _gemma4(prefix: str, vision: dict[str, Any] | None = None, **text: Any) -> tuple[Any, Any]:
    """Gemma 4 and Gemma 4 Unified (google/gemma-4-e2b-it): Gemma's turns, the image's soft tokens between its marks
    (up to 70, its smallest budget, each pooling 3 x 3 patches of 16 pixels); the processor's audio part kept,
    its video part dropped."""
    import transformers

    from pytest_mllm.models.hf_inputs import image_only
    from pytest_mllm.models.tiny_parts import tiny_config

    marks = {"image_token": "<|image|>", "boi_token": "<|image>", "eoi_token": "<image|>", "audio_token": "<|audio|>",
             "boa_token": "<|audio>", "eoa_token": "<audio|>"}
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", *marks.values()]
    tokenizer = tiny_tokenizer(tokens, bos="<bos>", eos="<eos>", pad="<pad>", adds_bos=True, **marks)
    template = GEMMA3_TEMPLATE.replace("<start_of_image>", "<|image|>")
    processor = image_only(getattr(transformers, f"{prefix}Processor"))(
        feature_extractor=getattr(transformers, f"{prefix}AudioFeatureExtractor")(), tokenizer=tokenizer,
        chat_template=template, image_seq_length=70,
        image_processor=getattr(transformers, f"{prefix}ImageProcessor")(max_soft_tokens=70))
    image, video, boi, eoi, eos, end_of_turn = token_ids(tokenizer, "<|image|>", "<|video|>", "<|image>", "<image|>",
                                                         "<eos>", "<end_of_turn>")
    config = tiny_config(getattr(transformers, f"{prefix}Config"), {
        "vision_config": {"patch_size": 16, "pooling_kernel_size": 3, "position_embedding_size": 64, "head_dim": 8,
                          **(vision or {})},
        "text_config": {"vocab_size": len(tokenizer), "vocab_size_per_layer_input": len(tokenizer),
                        "hidden_size_per_layer_input": 8, "bos_token_id": tokenizer.bos_token_id,
                        "eos_token_id": [eos, end_of_turn], "pad_token_id": tokenizer.pad_token_id,
                        "sliding_window": 64, "global_head_dim": 8, **text},
        "audio_config": None, "image_token_id": image, "video_token_id": video, "boi_token_id": boi,
        "eoi_token_id": eoi})
    model = getattr(transformers, f"{prefix}ForConditionalGeneration")(config)
    return greedy(model, tokenizer, [eos, end_of_turn]), processor


def build_gemma4() -> tuple[Any, Any]:
    return _gemma4("Gemma4")


def build_gemma4_unified() -> tuple[Any, Any]:
    # its vision part is one patch embedder, of positions up to 64 per side here; at 0.2 its random answers are
    # blank lines
    return _gemma4("Gemma4Unified", {"mm_embed_dim": WIDTH, "output_proj_dims": WIDTH, "mm_posemb_size": 64},
                   initializer_range=0.02)


def build_internvl() -> tuple[Any, Any]:
    from transformers import GotOcr2ImageProcessor, InternVLConfig, InternVLForConditionalGeneration, InternVLProcessor

    from pytest_mllm.models.hf_inputs import image_only

    tokenizer = tiny_tokenizer(QWEN_TOKENS + ["<img>", "</img>", "<IMG_CONTEXT>", "<video>"], bos=None, eos="<|im_end|>",
                           pad="<|endoftext|>", start_image_token="<img>", end_image_token="</img>",
                           context_image_token="<IMG_CONTEXT>", video_token="<video>")
    image_processor = GotOcr2ImageProcessor(size={"height": 28, "width": 28}, crop_to_patches=False)
    processor = image_only(InternVLProcessor)(image_processor=image_processor, tokenizer=tokenizer,
                                              image_seq_length=1, chat_template=INTERNVL_TEMPLATE)
    image, im_end, endoftext = token_ids(tokenizer, "<IMG_CONTEXT>", "<|im_end|>", "<|endoftext|>")
    config = InternVLConfig(
        vision_config={"image_size": [28, 28], "patch_size": [14, 14], **CLIP},
        text_config={"model_type": "qwen2", **text_config(vocab_size=len(tokenizer), eos_token_id=im_end,
                                                    pad_token_id=endoftext)},
        image_token_id=image, downsample_ratio=0.5, vision_feature_layer=-1)
    model = InternVLForConditionalGeneration(config)
    return greedy(model, tokenizer, [im_end, endoftext]), processor


def build_mllama() -> tuple[Any, Any]:
    from transformers import MllamaConfig, MllamaForConditionalGeneration, MllamaImageProcessor, MllamaProcessor

    tokens = ["<|begin_of_text|>", "<|end_of_text|>", "<|finetune_right_pad_id|>", "<|start_header_id|>",
              "<|end_header_id|>", "<|eot_id|>", "<|image|>", "<|python_tag|>"]
    tokenizer = tiny_tokenizer(tokens, bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>",
                           adds_bos=True)
    image_processor = MllamaImageProcessor(size={"height": 28, "width": 28}, max_image_tiles=2)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tokenizer, chat_template=MLLAMA_TEMPLATE)
    image, eot, end_of_text = token_ids(tokenizer, "<|image|>", "<|eot_id|>", "<|end_of_text|>")
    config = MllamaConfig(
        vision_config={"image_size": 28, "patch_size": 14, "hidden_size": VISION_WIDTH, "intermediate_size":
                       2 * VISION_WIDTH, "num_hidden_layers": 2, "num_global_layers": 1, "attention_heads": 2,
                       "intermediate_layers_indices": [0], "vision_output_dim": 2 * VISION_WIDTH,
                       "max_num_tiles": 2, "supported_aspect_ratios": [[1, 1], [1, 2], [2, 1]]},
        text_config=text_config(vocab_size=len(tokenizer), cross_attention_layers=[1],
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=[eot, end_of_text],
                          pad_token_id=tokenizer.pad_token_id),
        image_token_index=image)
    model = MllamaForConditionalGeneration(config)
    return greedy(model, tokenizer, [eot, end_of_text]), processor


FAMILY_BUILDERS: dict[str, Callable[[], tuple[Any, Any]]] = {  # by the config's model_type
    "llava": tiny_llava_parts,
    "qwen2_vl": build_qwen2_vl,
    "qwen2_5_vl": build_qwen2_5_vl,
    "qwen3_vl": build_qwen3_vl,
    "llava_onevision": build_llava_onevision,
    "llava_next": build_llava_next,
    "idefics2": build_idefics2,
    "idefics3": build_idefics3,
    "smolvlm": build_smolvlm,
    "paligemma": build_paligemma,
    "gemma3": build_gemma3,
    "t5gemma2": build_t5gemma2,
    "gemma4": build_gemma4,
    "gemma4_unified": build_gemma4_unified,
    "internvl": build_internvl,
    "mllama": build_mllama,
    **CHAT_FAMILIES,
    **PROMPTED_FAMILIES,
    **CHAT_TORCHVISION_FAMILIES,
}
# transformers 5.24 has no PIL image processor for these families (Fuyu's PIL one fails on every image): their
# processors need torchvision; some vision towers come from timm
REQUIRES: dict[str, tuple[str, ...]] = {
    **{name: ("torchvision",) for name in CHAT_TORCHVISION_FAMILIES},
    "fuyu": ("torchvision",),
    "gemma3n": ("torchvision", "timm"),
    "perception_lm": ("torchvision", "timm"),
    "fast_vlm": ("torchvision", "timm"),
    "gemma4_unified": ("torchvision",),
}
# families of the mapping with no tiny model: they run with their conventions (models/families.py), unchecked
UNCHECKED: dict[str, str] = {
    "fuyu": "its processor drops the first token SentencePiece writes before the image tokens (its '▁'), which a "
            "byte-level tiny tokenizer does not write",
    "gemma3n": "its timm MobileNetV5 vision tower cannot be made tiny (the smallest has 83 million parameters)",
    "pix2struct": "its question-answering checkpoints draw the question onto the image with a font its image "
                  "processor downloads from the Hub",
    **{name: "no tiny model built yet" for name in ("apertus1p5", "dots3_note", "inkling_mm_model", "muse_spark",
                                                    "nemotron_h_omni", "qwen2_5_omni_thinker", "qwen3_omni_moe_thinker")},
}
