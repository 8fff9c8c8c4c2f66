"""Tiny random models of the families prompted with their chat template whose processors need no
torchvision (see `models/tiny_families.py` for what a tiny family model is and how it is built).

Each builder returns the model and its processor; the checkpoint whose chat template it imitates is
named next to it.
"""

from __future__ import annotations

from typing import Any

from pytest_mllm.models.tiny_parts import (QWEN_TOKENS, VISION_WIDTH, WIDTH, assemble, chat_template, chatml, processor_of,
                                           merged, qwen_image_processor, qwen_vl, tiny_config, tiny_tokenizer, token_ids)

_MROPE = {"rope_type": "default", "mrope_section": [1, 1, 2], "rope_theta": 10000.0}  # head_dim 8 → 4 pairs
_INTERLEAVED_MROPE = {**_MROPE, "mrope_interleaved": True}
_QWEN3_VISION = {"depth": 2, "hidden_size": VISION_WIDTH, "out_hidden_size": WIDTH, "num_heads": 2,
                 "intermediate_size": 2 * VISION_WIDTH, "num_position_embeddings": 16}
_QWEN_IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"


def build_qwen3_vl_moe() -> tuple[Any, Any]:
    # Qwen/Qwen3-VL-30B-A3B-Instruct: Qwen3-VL's turns
    return qwen_vl("Qwen3VLMoeConfig", "Qwen3VLMoeForConditionalGeneration", "Qwen3VLProcessor", chatml(_QWEN_IMAGE),
                   patch=16, vision={**_QWEN3_VISION, "deepstack_visual_indexes": [1]},
                   text={"head_dim": 8, "rope_parameters": _INTERLEAVED_MROPE, "moe_intermediate_size": WIDTH,
                         "num_experts": 4, "num_experts_per_tok": 2})


def build_cosmos3_omni() -> tuple[Any, Any]:
    # nvidia/Cosmos3-Nano: Qwen3-VL's processor and turns (the usage transformers' docs show)
    return qwen_vl("Cosmos3OmniConfig", "Cosmos3OmniForConditionalGeneration", "Qwen3VLProcessor", chatml(_QWEN_IMAGE),
                   patch=16, vision={**_QWEN3_VISION, "deepstack_visual_indexes": [1]},
                   text={"head_dim": 8, "rope_parameters": _INTERLEAVED_MROPE})


# attention first: after a random linear-attention layer, the answers hardly depend on the input
_HYBRID = {"head_dim": 8, "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_num_key_heads": 2,
           "linear_num_value_heads": 4, "layer_types": ["full_attention", "linear_attention"],
           "rope_parameters": {**_INTERLEAVED_MROPE, "partial_rotary_factor": 1.0}}
# Qwen/Qwen3.5-27B: Qwen3-VL's turns, the assistant's turn opening a thought
_QWEN3_5_TEMPLATE = chatml(_QWEN_IMAGE, think="<think>\n")


def build_qwen3_5() -> tuple[Any, Any]:
    return qwen_vl("Qwen3_5Config", "Qwen3_5ForConditionalGeneration", "Qwen3VLProcessor", _QWEN3_5_TEMPLATE,
                   patch=16, vision=_QWEN3_VISION, text=_HYBRID, tokens=("<think>", "</think>"))


def build_qwen3_5_moe() -> tuple[Any, Any]:
    return qwen_vl("Qwen3_5MoeConfig", "Qwen3_5MoeForConditionalGeneration", "Qwen3VLProcessor", _QWEN3_5_TEMPLATE,
                   patch=16, vision=_QWEN3_VISION, tokens=("<think>", "</think>"),
                   text={**_HYBRID, "moe_intermediate_size": WIDTH, "shared_expert_intermediate_size": WIDTH,
                         "num_experts": 4, "num_experts_per_tok": 2})


def build_qwen4_exp() -> tuple[Any, Any]:
    # Qwen/Qwen4-Exp: Qwen3.5's turns
    return qwen_vl("Qwen4ExpConfig", "Qwen4ExpForConditionalGeneration", "Qwen3VLProcessor", _QWEN3_5_TEMPLATE,
                   patch=16, vision=_QWEN3_VISION, tokens=("<think>", "</think>"),
                   text={**_HYBRID, "layer_types": ["indexed_attention", "linear_attention"], "hc_count": 2, "indexer_n_heads": 2,
                         "indexer_kv_heads": 1, "indexer_head_dim": 8, "indexer_budget": 8, "indexer_compress_ratio": 4,
                         "hc_lowrank": 4, "moe_intermediate_size": WIDTH, "shared_expert_intermediate_size": WIDTH,
                         "num_experts": 4, "num_experts_per_tok": 2})


def build_exaone4_5() -> tuple[Any, Any]:
    # LGAI-EXAONE/EXAONE-4.5-33B: "[|user|]…[|endofturn|]\n[|assistant|]"
    from transformers import Exaone4_5_Config

    made = tiny_tokenizer(["[|endofturn|]", "[|user|]", "[|assistant|]", "[|system|]", "[PAD]", "[BOS]",
                           *QWEN_TOKENS[3:]], bos="[BOS]", eos="[|endofturn|]", pad="[PAD]")
    roles = {role: (f"[|{role}|]", "[|endofturn|]\n") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image=_QWEN_IMAGE, generation="[|assistant|]")
    processor = processor_of("Exaone4_5_Processor", image_processor=qwen_image_processor(patch=14), tokenizer=made,
                             chat_template=template)
    image, video, eos, pad = token_ids(made, "<|image_pad|>", "<|video_pad|>", "[|endofturn|]", "[PAD]")
    config = tiny_config(Exaone4_5_Config, {
        "vision_config": {"patch_size": 14, "fullatt_block_indexes": [1], "window_size": 56, "hidden_size": WIDTH},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad, "sliding_window": 64},
        "image_token_id": image, "video_token_id": video})
    return assemble("Exaone4_5_ForConditionalGeneration", config, made, processor, ["[|endofturn|]"])


_GLM_TOKENS = ["<|endoftext|>", "[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
               "<|begin_of_image|>", "<|end_of_image|>", "<|image|>", "<|begin_of_video|>", "<|end_of_video|>",
               "<|video|>", "<think>", "</think>"]
# zai-org/GLM-4.1V-9B-Thinking: "[gMASK]<sop><|user|>\n<|begin_of_image|><|image|><|end_of_image|>text<|assistant|>\n"
_GLM_TEMPLATE = chat_template({role: (f"<|{role}|>\n", "") for role in ("system", "user", "assistant")},
                              image="<|begin_of_image|><|image|><|end_of_image|>", generation="<|assistant|>\n",
                              bos="[gMASK]<sop>")


def _glm(config_name: str, model_name: str, processor_name: str, image_processor_name: str,
         text: dict[str, Any] | None = None, vision: dict[str, Any] | None = None,
         with_video_ids: bool = True) -> tuple[Any, Any]:
    """The GLM-4V family: Qwen-like dynamic resolution, GLM's turns, and the image wrapped in begin/end marks."""
    import transformers

    made = tiny_tokenizer(_GLM_TOKENS, bos=None, eos="<|endoftext|>", pad="<|endoftext|>")
    processor = processor_of(processor_name, image_processor=qwen_image_processor(image_processor_name, patch=14),
                             tokenizer=made, chat_template=_GLM_TEMPLATE)
    image, video, begin, end, begin_video, end_video, eos = token_ids(
        made, "<|image|>", "<|video|>", "<|begin_of_image|>", "<|end_of_image|>", "<|begin_of_video|>",
        "<|end_of_video|>", "<|endoftext|>")
    ids = {"image_token_id": image, "video_token_id": video, "image_start_token_id": begin, "image_end_token_id": end,
           **({"video_start_token_id": begin_video, "video_end_token_id": end_video} if with_video_ids else {})}
    config = tiny_config(getattr(transformers, config_name), {
        "vision_config": {"patch_size": 14, "image_size": 28, "out_hidden_size": WIDTH, **(vision or {})},
        "text_config": {"vocab_size": len(made), "eos_token_id": [eos], "pad_token_id": eos,
                        "rope_parameters": {"rope_type": "default", "mrope_section": [1, 1, 2], "rope_theta": 10000.0,
                                            "partial_rotary_factor": 1.0}, **(text or {})}, **ids})
    return assemble(model_name, config, made, processor, ["<|endoftext|>", "<|user|>"])


def build_glm4v() -> tuple[Any, Any]:
    return _glm("Glm4vConfig", "Glm4vForConditionalGeneration", "Glm4vProcessor", "Glm4vImageProcessor",
                with_video_ids=False)


def build_glm4v_moe() -> tuple[Any, Any]:
    # zai-org/GLM-4.5V
    return _glm("Glm4vMoeConfig", "Glm4vMoeForConditionalGeneration", "Glm4vProcessor", "Glm4vImageProcessor",
                with_video_ids=False)


def build_glm46v() -> tuple[Any, Any]:
    # zai-org/GLM-4.6V
    return _glm("Glm46VConfig", "Glm46VForConditionalGeneration", "Glm46VProcessor", "Glm46VImageProcessor")


def build_glmga() -> tuple[Any, Any]:
    return _glm("GlmgaConfig", "Glm46VForConditionalGeneration", "Glm46VProcessor", "GlmgaImageProcessor")


def build_glm_ocr() -> tuple[Any, Any]:
    # zai-org/GLM-OCR
    return _glm("GlmOcrConfig", "GlmOcrForConditionalGeneration", "Glm46VProcessor", "Glm46VImageProcessor")


def build_glm5_next() -> tuple[Any, Any]:
    return _glm("Glm5NextConfig", "Glm5NextForConditionalGeneration", "Glm5NextProcessor", "Glm5NextImageProcessor",
                text={"num_key_value_heads": 4, "qk_rope_head_dim": 0, "head_dim": 0, "index_head_dim": 8, "index_n_heads": 2,
                      "index_topk": 16})


def _chatml_family(config_name: str, model_name: str, processor_name: str, image_processor: Any, template: str,
                   ids: dict[str, str], *, changes: dict[str, Any] | None = None, tokens: tuple[str, ...] = (),
                   bos: str | None = None, eos: str = "<|im_end|>") -> tuple[Any, Any]:
    """A family of Qwen's tokens and ChatML turns: `ids` names the token of each of the config's token ids."""
    import transformers

    made = tiny_tokenizer(QWEN_TOKENS + list(tokens) + ([bos] if bos else []), bos=bos, eos=eos, pad="<|endoftext|>")
    processor = processor_of(processor_name, image_processor=image_processor, tokenizer=made, chat_template=template)
    stop, pad = token_ids(made, eos, "<|endoftext|>")
    settings = {"text_config": {"vocab_size": len(made), "eos_token_id": stop, "pad_token_id": pad,
                                **({"bos_token_id": made.bos_token_id} if bos else {})},
                **{field: made.convert_tokens_to_ids(token) for field, token in ids.items()}}
    config = tiny_config(getattr(transformers, config_name), merged(settings, changes or {}))
    return assemble(model_name, config, made, processor, [eos])


_QWEN_IDS = {"image_token_id": "<|image_pad|>", "video_token_id": "<|video_pad|>"}


def build_hyperclovax_vision_v2() -> tuple[Any, Any]:
    # naver-hyperclovax/HyperCLOVAX-SEED-Think-32B: ChatML turns
    return _chatml_family("HyperCLOVAXVisionV2Config", "HyperCLOVAXVisionV2ForConditionalGeneration",
                          "HyperCLOVAXVisionV2Processor", qwen_image_processor(patch=14), chatml(_QWEN_IMAGE), _QWEN_IDS,
                          changes={"vision_config": {"patch_size": 14, "fullatt_block_indexes": [1], "window_size": 56,
                                                     "out_hidden_size": WIDTH}})


def build_lfm3_vl() -> tuple[Any, Any]:
    # LiquidAI/LFM3-VL-2B: ChatML turns after <|startoftext|>
    return _chatml_family("Lfm3VlConfig", "Lfm3VlForConditionalGeneration", "Lfm3VlProcessor",
                          qwen_image_processor(patch=16), chatml(_QWEN_IMAGE, bos="<|startoftext|>"),
                          {**_QWEN_IDS, "vision_start_token_id": "<|vision_start|>",
                           "vision_end_token_id": "<|vision_end|>"}, bos="<|startoftext|>",
                          changes={"vision_config": {"patch_size": 16}})


def build_cosmos3_edge() -> tuple[Any, Any]:
    # nvidia/Cosmos3-Edge: ChatML turns
    from transformers import Cosmos3EdgeImageProcessor

    image_processor = Cosmos3EdgeImageProcessor(min_pixels=32 * 32, max_pixels=64 * 64)
    return _chatml_family("Cosmos3EdgeConfig", "Cosmos3EdgeForConditionalGeneration", "Cosmos3EdgeProcessor",
                          image_processor, chatml(_QWEN_IMAGE), {"image_token_id": "<|image_pad|>"},
                          changes={"vision_config": {"patch_size": 16}})


def build_aria() -> tuple[Any, Any]:
    # rhymes-ai/Aria: ChatML turns, "<fim_prefix><|img|><fim_suffix>" per image; images of 980 pixels (the
    # processor's default) are 70 x 70 patches queried by 256 tokens
    from transformers import AriaConfig, AriaImageProcessor

    made = tiny_tokenizer(["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>", "<fim_prefix>", "<fim_suffix>", "<|img|>"],
                          bos="<s>", eos="<|im_end|>", pad="<unk>", unk="<unk>", image_token="<|img|>")
    processor = processor_of("AriaProcessor", image_processor=AriaImageProcessor(split_image=False),
                             tokenizer=made, chat_template=chatml("<fim_prefix><|img|><fim_suffix>"),
                             size_conversion={490: 128, 980: 256})
    image, eos, pad = token_ids(made, "<|img|>", "<|im_end|>", "<unk>")
    config = tiny_config(AriaConfig, {
        "vision_config": {"image_size": 980, "patch_size": 14},
        "projector_patch_to_query_dict": {1225: 128, 4900: 256},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "moe_num_experts": 4, "moe_topk": 2,
                        "moe_num_shared_experts": 1},
        "image_token_index": image})
    return assemble("AriaForConditionalGeneration", config, made, processor, ["<|im_end|>"])


_COHERE_TURN = ("<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>")
_COHERE_TOKENS = ["<PAD>", "<UNK>", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>", "<|START_OF_TURN_TOKEN|>",
                  "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>", "<|SYSTEM_TOKEN|>"]


def _cohere_template(image: str) -> str:
    """Command-R's turns: "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|USER_TOKEN|>…<|END_OF_TURN_TOKEN|>", then the chatbot's."""
    start, end = _COHERE_TURN
    roles = {"system": (start + "<|SYSTEM_TOKEN|>", end), "user": (start + "<|USER_TOKEN|>", end),
             "assistant": (start + "<|CHATBOT_TOKEN|>", end)}
    return chat_template(roles, image=image, generation=start + "<|CHATBOT_TOKEN|>", bos="<BOS_TOKEN>")


def build_aya_vision() -> tuple[Any, Any]:
    # CohereLabs/aya-vision-8b: Command-R's turns; a 28-pixel tile of 2 x 2 patches, downsampled by 2 into one token
    from transformers import AyaVisionConfig, GotOcr2ImageProcessor

    tokens = ["<image>", "<|START_OF_IMG|>", "<|END_OF_IMG|>", "<|IMG_PATCH|>", "<|IMG_LINE_BREAK|>", "TILE",
              "TILE_GLOBAL"]
    made = tiny_tokenizer(_COHERE_TOKENS + tokens, bos="<BOS_TOKEN>", eos="<|END_OF_TURN_TOKEN|>", pad="<PAD>")
    image_processor = GotOcr2ImageProcessor(size={"height": 28, "width": 28}, crop_to_patches=True, max_patches=2)
    processor = processor_of("AyaVisionProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=_cohere_template("<image>"), patch_size=28, img_size=28)
    patch, eos, pad = token_ids(made, "<|IMG_PATCH|>", "<|END_OF_TURN_TOKEN|>", "<PAD>")
    config = tiny_config(AyaVisionConfig, {
        "vision_config": {"image_size": 28, "patch_size": 14}, "image_token_index": patch,
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "sliding_window": 64}})
    return assemble("AyaVisionForConditionalGeneration", config, made, processor, ["<|END_OF_TURN_TOKEN|>"])


DEEPSEEK_BOS, DEEPSEEK_EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
# deepseek-community/deepseek-vl-1.3b-chat: "User: <image_placeholder>text\n\nAssistant:"
_DEEPSEEK_VL_TEMPLATE = chat_template({"system": ("", "\n\n"), "user": ("User: ", "\n\n"),
                                       "assistant": ("Assistant: ", DEEPSEEK_EOS)},
                                      image="<image_placeholder>", generation="Assistant:", bos=DEEPSEEK_BOS)


def _deepseek_vl(config_name: str, model_name: str, processor_name: str, image_processor: Any,
                 changes: dict[str, Any]) -> tuple[Any, Any]:
    """DeepSeek-VL: a 32-pixel image of 2 x 2 patches becomes 4 image tokens."""
    import transformers

    made = tiny_tokenizer([DEEPSEEK_BOS, DEEPSEEK_EOS, "<image_placeholder>", "<｜▁pad▁｜>"], bos=DEEPSEEK_BOS,
                          eos=DEEPSEEK_EOS, pad="<｜▁pad▁｜>", adds_bos=False, image_token="<image_placeholder>")
    processor = processor_of(processor_name, image_processor=image_processor, tokenizer=made,
                             chat_template=_DEEPSEEK_VL_TEMPLATE, num_image_tokens=4)
    image, eos, pad = token_ids(made, "<image_placeholder>", DEEPSEEK_EOS, "<｜▁pad▁｜>")
    config = tiny_config(getattr(transformers, config_name), merged({
        "vision_config": {"image_size": 32, "patch_size": 16}, "image_token_id": image,
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id}}, changes))
    return assemble(model_name, config, made, processor, [DEEPSEEK_EOS])


def build_deepseek_vl() -> tuple[Any, Any]:
    from transformers import DeepseekVLImageProcessor

    return _deepseek_vl("DeepseekVLConfig", "DeepseekVLForConditionalGeneration", "DeepseekVLProcessor",
                        DeepseekVLImageProcessor(size={"height": 32, "width": 32}), {})


def build_deepseek_vl_hybrid() -> tuple[Any, Any]:
    # deepseek-community/deepseek-vl-7b-chat: a SigLIP view and a 64-pixel SAM view of each image
    from transformers import DeepseekVLHybridImageProcessor

    image_processor = DeepseekVLHybridImageProcessor(size={"height": 32, "width": 32},
                                                     high_res_size={"height": 64, "width": 64})
    return _deepseek_vl("DeepseekVLHybridConfig", "DeepseekVLHybridForConditionalGeneration",
                        "DeepseekVLHybridProcessor", image_processor,
                        {"high_res_vision_config": {"image_size": 64, "patch_size": 16, "output_channels": WIDTH,
                                                    "global_attn_indexes": [1], "window_size": 2,
                                                    "mlp_dim": 2 * WIDTH}})


def build_janus() -> tuple[Any, Any]:
    # deepseek-community/Janus-Pro-1B: "<|User|>: <image_placeholder>\ntext\n\n<|Assistant|>:" after the BOS
    from transformers import JanusConfig, JanusImageProcessor

    made = tiny_tokenizer([DEEPSEEK_BOS, DEEPSEEK_EOS, "<image_placeholder>", "<begin_of_image>", "<end_of_image>",
                           "<｜▁pad▁｜>"], bos=DEEPSEEK_BOS, eos=DEEPSEEK_EOS, pad="<｜▁pad▁｜>",
                          image_token="<image_placeholder>", boi_token="<begin_of_image>", eoi_token="<end_of_image>")
    roles = {"system": ("", "\n\n"), "user": ("<|User|>: ", "\n\n"), "assistant": ("<|Assistant|>: ", DEEPSEEK_EOS)}
    template = chat_template(roles, image="<image_placeholder>\n", generation="<|Assistant|>:", bos=DEEPSEEK_BOS)
    processor = processor_of("JanusProcessor", image_processor=JanusImageProcessor(size={"height": 32, "width": 32}),
                             tokenizer=made, chat_template=template, num_image_tokens=4)
    image, eos, pad = token_ids(made, "<image_placeholder>", DEEPSEEK_EOS, "<｜▁pad▁｜>")
    config = tiny_config(JanusConfig, {
        "vision_config": {"image_size": 32, "patch_size": 16, "num_image_tokens": 4},
        "vq_config": {"num_embeddings": 16, "base_channels": 32, "latent_channels": 32, "embed_dim": 8,
                      "channel_multiplier": [1, 1], "num_res_blocks": 1, "projection_dim": WIDTH,
                      "image_token_embed_dim": WIDTH},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id}, "image_token_id": image})
    return assemble("JanusForConditionalGeneration", config, made, processor, [DEEPSEEK_EOS])


def build_ovis2() -> tuple[Any, Any]:
    # thisisiron/Ovis2-1B-hf: ChatML turns, "<image>\n" per image; a 28-pixel image of 2 x 2 patches is 4 visual atoms
    from transformers import Ovis2Config, Ovis2ImageProcessor

    indicators = ["<IMG_START>", "<IMG_GRID>", "<IMG_COL>", "<IMG_ROW>", "<IMG_END>"]
    made = tiny_tokenizer(QWEN_TOKENS + ["<image>", "<IMG_ATOM>", *indicators], bos=None, eos="<|im_end|>",
                          pad="<|endoftext|>")
    processor = processor_of("Ovis2Processor", image_processor=Ovis2ImageProcessor(size={"height": 28, "width": 28}),
                             tokenizer=made, chat_template=chatml("<image>\n"), image_seq_length=4)
    atom, eos, pad = token_ids(made, "<IMG_ATOM>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(Ovis2Config, {
        "vision_config": {"image_size": 28, "patch_size": 14, "vocab_size": 64},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_id": atom, "visual_indicator_token_ids": token_ids(made, *indicators),
        "vocab_size": len(made), "hidden_size": WIDTH})
    return assemble("Ovis2ForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_ernie4_5_vl_moe() -> tuple[Any, Any]:
    # baidu/ERNIE-4.5-VL-28B-A3B-PT: "User: …\nAssistant: " after its BOS, the image between its start and end marks
    from transformers import Ernie4_5_VLMoeConfig

    marks = {"image_token": "<|IMAGE_PLACEHOLDER|>", "image_start_token": "<|IMAGE_START|>",
             "image_end_token": "<|IMAGE_END|>", "video_token": "<|VIDEO_PLACEHOLDER|>",
             "video_start_token": "<|VIDEO_START|>", "video_end_token": "<|VIDEO_END|>"}
    made = tiny_tokenizer(["<unk>", "<s>", "</s>", "<|begin_of_sentence|>", "<|end_of_sentence|>", *marks.values()],
                          bos="<s>", eos="</s>", pad="<unk>", **marks)
    roles = {"system": ("", "\n"), "user": ("User: ", "\n"), "assistant": ("Assistant: ", "<|end_of_sentence|>")}
    template = chat_template(roles, image="Picture:<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>",
                             generation="Assistant: ", bos="<|begin_of_sentence|>")
    processor = processor_of("Ernie4_5_VLMoeProcessor", tokenizer=made, chat_template=template,
                             image_processor=qwen_image_processor("Ernie4_5_VLMoeImageProcessor", patch=14, temporal=1))
    ids = token_ids(made, *marks.values())
    eos, pad, end = token_ids(made, "</s>", "<unk>", "<|end_of_sentence|>")
    config = tiny_config(Ernie4_5_VLMoeConfig, {
        "vision_config": {"patch_size": 14},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "moe_intermediate_size": [2 * WIDTH, 2 * WIDTH],
                        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}},
        **dict(zip(["image_token_id", "image_start_token_id", "image_end_token_id", "video_token_id",
                    "video_start_token_id", "video_end_token_id"], ids))})
    return assemble("Ernie4_5_VLMoeForConditionalGeneration", config, made, processor, ["</s>", "<|end_of_sentence|>"])


_GRANITE_TOKENS = ["<|end_of_text|>", "<|start_of_role|>", "<|end_of_role|>", "<|pad|>"]


def _granite_template(image: str) -> str:
    """Granite's turns: "<|start_of_role|>user<|end_of_role|>…<|end_of_text|>\n", then the assistant's role."""
    roles = {role: (f"<|start_of_role|>{role}<|end_of_role|>", "<|end_of_text|>\n")
             for role in ("system", "user", "assistant")}
    return chat_template(roles, image=image, generation="<|start_of_role|>assistant<|end_of_role|>")


def build_granite_docling() -> tuple[Any, Any]:
    # ibm-granite/granite-for-docling-500m: Granite's turns; a 64-pixel tile of 4 x 4 patches, pixel-shuffled by 4 into
    # one token
    from transformers import GraniteDoclingConfig, GraniteDoclingImageProcessor

    made = tiny_tokenizer(_GRANITE_TOKENS + ["<image>", "<fake_token_around_image>", "<global-img>",
                                             "<end_of_utterance>"], bos=None, eos="<|end_of_text|>", pad="<|pad|>",
                          image_token="<image>")
    image_processor = GraniteDoclingImageProcessor(size={"height": 64, "width": 64}, max_patches=2)
    processor = processor_of("GraniteDoclingProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=_granite_template("<image>"), image_seq_len=1)
    image, eos, pad = token_ids(made, "<image>", "<|end_of_text|>", "<|pad|>")
    config = tiny_config(GraniteDoclingConfig, {
        "vision_config": {"image_size": 64, "patch_size": 16, "scale_factor": 4},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad, "bos_token_id": eos,
                        "embedding_multiplier": 1.0, "logits_scaling": 1.0, "residual_multiplier": 1.0,
                        "attention_multiplier": 1.0},  # the released scales make a random model repeat one token
        "image_token_id": image})
    return assemble("GraniteDoclingForConditionalGeneration", config, made, processor,
                    ["<|end_of_text|>", "<end_of_utterance>"])


def build_granite4_vision() -> tuple[Any, Any]:
    # Granite 4 Vision: Granite's turns, "<image>" per image; LLaVA-NeXT tiles of 32 pixels
    from transformers import Granite4VisionConfig, LlavaNextImageProcessor

    made = tiny_tokenizer(_GRANITE_TOKENS + ["<image>"], bos=None, eos="<|end_of_text|>", pad="<|pad|>",
                          image_token="<image>")
    pinpoints = [[32, 64], [64, 32], [64, 64]]
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                              image_grid_pinpoints=pinpoints)
    processor = processor_of("Granite4VisionProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=_granite_template("<image>"), patch_size=8,
                             vision_feature_select_strategy="default", num_additional_image_tokens=1,
                             downsample_rate="2/4")
    image, eos, pad = token_ids(made, "<image>", "<|end_of_text|>", "<|pad|>")
    config = tiny_config(Granite4VisionConfig, {
        "vision_config": {"image_size": 32, "patch_size": 8, "hidden_size": 64},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad, "bos_token_id": eos},
        "image_token_index": image, "image_grid_pinpoints": pinpoints, "vision_feature_select_strategy": "default",
        "vision_feature_layer": -1, "downsample_rate": "2/4", "spatial_target_layers": [1], "image_seq_length": 4,
        "deepstack_layer_map": [[0, 0]]})
    return assemble("Granite4VisionForConditionalGeneration", config, made, processor, ["<|end_of_text|>"])


def _hunyuan_template(image: str) -> str:
    """Hunyuan's turns: "<｜hy_User｜>…<｜hy_Assistant｜>" after its BOS."""
    roles = {"system": ("", "<｜hy_place▁holder▁no▁3｜>"), "user": ("<｜hy_User｜>", ""),
             "assistant": ("<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁2｜>")}
    return chat_template(roles, image=image, generation="<｜hy_Assistant｜>", bos="<｜hy_begin▁of▁sentence｜>")


_HUNYUAN_TOKENS = ["<｜hy_begin▁of▁sentence｜>", "<｜hy_place▁holder▁no▁2｜>", "<｜hy_place▁holder▁no▁3｜>",
                   "<｜hy_User｜>", "<｜hy_Assistant｜>", "<｜hy_▁pad▁｜>"]


def build_hunyuan_vl() -> tuple[Any, Any]:
    # tencent/HunyuanOCR: Hunyuan's turns, each image between its start and end marks
    from transformers import HunYuanVLConfig, HunYuanVLImageProcessor

    marks = {"image_token": "<｜hy_place▁holder▁no▁102｜>", "image_start_token": "<｜hy_place▁holder▁no▁100｜>",
             "image_end_token": "<｜hy_place▁holder▁no▁101｜>"}
    newline = "<｜hy_place▁holder▁no▁103｜>"
    made = tiny_tokenizer(_HUNYUAN_TOKENS + [*marks.values(), newline], bos="<｜hy_begin▁of▁sentence｜>",
                          eos="<｜hy_place▁holder▁no▁2｜>", pad="<｜hy_▁pad▁｜>", **marks)
    image_processor = HunYuanVLImageProcessor(size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64})
    processor = processor_of("HunYuanVLProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=_hunyuan_template("".join(marks[k] for k in ("image_start_token",
                                                                                         "image_token",
                                                                                         "image_end_token"))))
    image, start, end, line, eos, pad = token_ids(made, *marks.values(), newline, "<｜hy_place▁holder▁no▁2｜>",
                                                  "<｜hy_▁pad▁｜>")
    config = tiny_config(HunYuanVLConfig, {
        "vision_config": {"patch_size": 16, "text_hidden_size": WIDTH, "max_image_size": 128},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "eod_token_id": eos, "sep_token_id": pad, "head_dim": 8,
                        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 1, 1]}},
        "image_token_id": image, "im_start_id": start, "im_end_id": end, "im_newline_id": line})
    return assemble("HunYuanVLForConditionalGeneration", config, made, processor, ["<｜hy_place▁holder▁no▁2｜>"])


def build_hy_v4_vl() -> tuple[Any, Any]:
    # tencent/Hy4: Hunyuan's turns, Qwen-style image pads
    from transformers import HYV4VLConfig, HYV4VLImageProcessor

    made = tiny_tokenizer(_HUNYUAN_TOKENS + QWEN_TOKENS[3:], bos="<｜hy_begin▁of▁sentence｜>",
                          eos="<｜hy_place▁holder▁no▁2｜>", pad="<｜hy_▁pad▁｜>")
    image_processor = HYV4VLImageProcessor(size={"shortest_edge": 32 * 32, "longest_edge": 64 * 64})
    processor = processor_of("HYV4VLProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=_hunyuan_template(_QWEN_IMAGE))
    image, video, eos, pad = token_ids(made, "<|image_pad|>", "<|video_pad|>", "<｜hy_place▁holder▁no▁2｜>",
                                       "<｜hy_▁pad▁｜>")
    config = tiny_config(HYV4VLConfig, {
        "vision_config": {"patch_size": 16, "max_image_size": 128},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "index_n_heads": 2, "index_head_dim": 8},
        "image_token_id": image, "video_token_id": video})
    return assemble("HYV4VLForConditionalGeneration", config, made, processor, ["<｜hy_place▁holder▁no▁2｜>"])


_LLAMA2_TOKENS = ["<unk>", "<s>", "</s>", "<image>", "<video>", "<pad>"]
# llava-hf/LLaVA-NeXT-Video-7B-hf, LanguageBind/Video-LLaVA-7B-hf: "USER: <image>\ntext ASSISTANT:"
_USER_ASSISTANT = chat_template({"system": ("", " "), "user": ("USER: ", " "), "assistant": ("ASSISTANT: ", "</s>")},
                                image="<image>\n", generation="ASSISTANT:")


def _llava_like(config_name: str, model_name: str, processor_name: str, image_processor: Any, template: str,
                changes: dict[str, Any], **processor: Any) -> tuple[Any, Any]:
    """A LLaVA of a CLIP tower and a Llama 2 text model: Llama 2's tokenizer (which adds the BOS), `<image>` and `<video>`."""
    import transformers

    made = tiny_tokenizer(_LLAMA2_TOKENS, bos="<s>", eos="</s>", pad="<pad>", adds_bos=True, unk="<unk>",
                          image_token="<image>", video_token="<video>")
    built = processor_of(processor_name, image_processor=image_processor, tokenizer=made, chat_template=template,
                         **processor)
    image, video, eos, pad = token_ids(made, "<image>", "<video>", "</s>", "<pad>")
    settings = {"vision_config": {"model_type": "clip_vision_model", "image_size": 32, "patch_size": 8},
                "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                                "bos_token_id": made.bos_token_id},
                "image_token_index": image, **({"video_token_index": video} if processor_name != "LlavaProcessor" else {})}
    config = tiny_config(getattr(transformers, config_name), merged(settings, changes))
    return assemble(model_name, config, made, built, ["</s>"])


def build_vipllava() -> tuple[Any, Any]:
    # llava-hf/vip-llava-7b-hf: "###Human: <image>\ntext###Assistant:" after its system sentence
    from transformers import CLIPImageProcessor

    roles = {"system": ("", ""), "user": ("###Human: ", ""), "assistant": ("###Assistant: ", "")}
    template = chat_template(roles, image="<image>\n", generation="###Assistant:",
                             default_system="A chat between a curious human and an artificial intelligence assistant. "
                                            "The assistant gives helpful, detailed, and polite answers to the human's "
                                            "questions.")
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return _llava_like("VipLlavaConfig", "VipLlavaForConditionalGeneration", "LlavaProcessor", image_processor,
                       template, {"vision_feature_layer": [-2, -1, 0, 1, 2], "image_seq_length": 16}, patch_size=8,
                       vision_feature_select_strategy="default", num_additional_image_tokens=1)


def build_llava_next_video() -> tuple[Any, Any]:
    from transformers import LlavaNextImageProcessor

    pinpoints = [[32, 32], [32, 64], [64, 32], [64, 64]]
    image_processor = LlavaNextImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                              image_grid_pinpoints=pinpoints)
    return _llava_like("LlavaNextVideoConfig", "LlavaNextVideoForConditionalGeneration", "LlavaNextVideoProcessor",
                       image_processor, _USER_ASSISTANT, {"image_grid_pinpoints": pinpoints, "image_seq_length": 16},
                       patch_size=8, vision_feature_select_strategy="default", num_additional_image_tokens=1)


def build_video_llava() -> tuple[Any, Any]:
    from transformers import VideoLlavaImageProcessor

    image_processor = VideoLlavaImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    return _llava_like("VideoLlavaConfig", "VideoLlavaForConditionalGeneration", "VideoLlavaProcessor",
                       image_processor, _USER_ASSISTANT, {"image_seq_length": 16}, patch_size=8,
                       vision_feature_select_strategy="default", num_additional_image_tokens=1)


def minicpmv(processor_name: str, config_name: str, model_name: str, image_processor_name: str, *,
             scale: int) -> tuple[Any, Any]:
    """MiniCPM-V 4.6, 4.7 and MiniCPM-OCR (openbmb/MiniCPM-V-4.6): ChatML turns, the image between its marks;
    images of `scale` pixels (the scale resolution) merged into one token (16 times for MiniCPM-V, 4 times for
    MiniCPM-OCR), not sliced."""
    import transformers

    marks = {"image_token": "<|image_pad|>", "video_token": "<|video_pad|>", "image_start_token": "<image>",
             "image_end_token": "</image>", "slice_start_token": "<slice>", "slice_end_token": "</slice>",
             "image_id_start_token": "<image_id>", "image_id_end_token": "</image_id>"}
    made = tiny_tokenizer(QWEN_TOKENS[:3] + list(marks.values()), bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                          **marks)
    image_processor = getattr(transformers, image_processor_name)(scale_resolution=scale, max_slice_nums=1,
                                                                  slice_mode=False)
    processor = processor_of(processor_name, image_processor=image_processor, tokenizer=made,
                             chat_template=chatml("<|image_pad|>"))
    image, video, eos, pad = token_ids(made, "<|image_pad|>", "<|video_pad|>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(getattr(transformers, config_name), {
        "vision_config": {"image_size": scale, "patch_size": 14}, "insert_layer_id": 0,
        "text_config": {**_HYBRID, "vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_id": image, "video_token_id": video})
    return assemble(model_name, config, made, processor, ["<|im_end|>"])


def build_minicpmv4_6() -> tuple[Any, Any]:
    return minicpmv("MiniCPMV4_6Processor", "MiniCPMV4_6Config", "MiniCPMV4_6ForConditionalGeneration",
                    "MiniCPMV4_6ImageProcessor", scale=56)


def build_minicpmv4_7() -> tuple[Any, Any]:
    return minicpmv("MiniCPMV4_7Processor", "MiniCPMV4_7Config", "MiniCPMV4_7ForConditionalGeneration",
                    "MiniCPMV4_6ImageProcessor", scale=56)


def build_paddleocr_vl() -> tuple[Any, Any]:
    # PaddlePaddle/PaddleOCR-VL: ERNIE's turns, "User: <|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>…\nAssistant: "
    from transformers import PaddleOCRVLConfig

    made = tiny_tokenizer(["<unk>", "<s>", "</s>", "<|begin_of_sentence|>", "<|end_of_sentence|>", "<|IMAGE_START|>",
                           "<|IMAGE_END|>", "<|IMAGE_PLACEHOLDER|>", "<|video_pad|>"], bos="<s>", eos="</s>", pad="<unk>",
                          image_token="<|IMAGE_PLACEHOLDER|>")
    roles = {"system": ("", "\n"), "user": ("User: ", "\n"), "assistant": ("Assistant: ", "<|end_of_sentence|>")}
    template = chat_template(roles, image="<|IMAGE_START|><|IMAGE_PLACEHOLDER|><|IMAGE_END|>", generation="Assistant: ",
                             bos="<|begin_of_sentence|>")
    processor = processor_of("PaddleOCRVLProcessor", tokenizer=made, chat_template=template,
                             image_processor=qwen_image_processor("PaddleOCRVLImageProcessor", patch=14, temporal=1))
    image, video, start, end, eos, pad = token_ids(made, "<|IMAGE_PLACEHOLDER|>", "<|video_pad|>", "<|IMAGE_START|>",
                                                   "<|IMAGE_END|>", "</s>", "<unk>")
    config = tiny_config(PaddleOCRVLConfig, {
        "vision_config": {"patch_size": 14, "image_size": 28},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "rope_parameters": {"rope_type": "default",
                                                                               "rope_theta": 10000.0,
                                                                               "mrope_section": [1, 1, 2]}},
        "image_token_id": image, "video_token_id": video, "vision_start_token_id": start, "vision_end_token_id": end})
    return assemble("PaddleOCRVLForConditionalGeneration", config, made, processor, ["</s>", "<|end_of_sentence|>"])


def build_qianfan_ocr() -> tuple[Any, Any]:
    # baidu/Qianfan-OCR: ChatML turns, "<image>\n" per image, spelled out as <img><IMG_CONTEXT>…</img>; a 28-pixel
    # image of 2 x 2 patches pixel-shuffled into one token
    from transformers import GotOcr2ImageProcessor, QianfanOCRConfig

    made = tiny_tokenizer(QWEN_TOKENS[:3] + ["<image>", "<img>", "</img>", "<IMG_CONTEXT>"], bos=None, eos="<|im_end|>",
                          pad="<|endoftext|>", start_image_token="<img>", end_image_token="</img>",
                          context_image_token="<IMG_CONTEXT>")
    image_processor = GotOcr2ImageProcessor(size={"height": 28, "width": 28}, crop_to_patches=False)
    processor = processor_of("QianfanOCRProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=chatml("<image>\n"), image_seq_length=1)
    context, eos, pad = token_ids(made, "<IMG_CONTEXT>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(QianfanOCRConfig, {
        "vision_config": {"image_size": [28, 28], "patch_size": [14, 14]}, "image_seq_length": 1,
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_id": context})
    return assemble("QianfanOCRForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_video_llama_3() -> tuple[Any, Any]:
    # lkhl/VideoLLaMA3-2B-Image-HF: ChatML turns; images of 14-pixel patches, unmerged
    return _chatml_family("VideoLlama3Config", "VideoLlama3ForConditionalGeneration", "VideoLlama3Processor",
                          qwen_image_processor("VideoLlama3ImageProcessor", patch=14, merge=1, temporal=1),
                          chatml(_QWEN_IMAGE), _QWEN_IDS, changes={"vision_config": {"patch_size": 14}})


def build_cohere_compass() -> tuple[Any, Any]:
    # CohereLabs/North-Micro-Vision-Instruct: Command-R's turns, each image between its vision marks
    from transformers import CohereCompassConfig

    marks = ["<|VISION_START|>", "<|VISION_END|>", "<|IMAGE_PAD|>", "<|VIDEO_PAD|>"]
    made = tiny_tokenizer(_COHERE_TOKENS + marks, bos="<BOS_TOKEN>", eos="<|END_OF_TURN_TOKEN|>", pad="<PAD>")
    processor = processor_of("CohereCompassProcessor", image_processor=qwen_image_processor(patch=16), tokenizer=made,
                             chat_template=_cohere_template("<|VISION_START|><|IMAGE_PAD|><|VISION_END|>"))
    start, end, image, video, eos, pad = token_ids(made, *marks, "<|END_OF_TURN_TOKEN|>", "<PAD>")
    config = tiny_config(CohereCompassConfig, {
        "vision_config": {"patch_size": 16, "deepstack_visual_indexes": [1], "num_position_embeddings": 16},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "sliding_window": 64,
                        "rope_parameters": {"full_attention": _INTERLEAVED_MROPE}},  # one per layer type
        "image_token_id": image, "video_token_id": video, "vision_start_token_id": start, "vision_end_token_id": end})
    return assemble("CohereCompassForConditionalGeneration", config, made, processor, ["<|END_OF_TURN_TOKEN|>"])


def build_deepseek_ocr2() -> tuple[Any, Any]:
    # deepseek-community/DeepSeek-OCR-2: DeepSeek's turns, "<image>\n" per image; a 768-pixel global view (its
    # processor's tile size, the smaller of the model's two query sets: 144 tokens), no local crops
    from transformers import DeepseekOcr2Config, DeepseekOcr2ImageProcessor

    made = tiny_tokenizer([DEEPSEEK_BOS, DEEPSEEK_EOS, "<image>", "<｜▁pad▁｜>"], bos=DEEPSEEK_BOS, eos=DEEPSEEK_EOS,
                          pad="<｜▁pad▁｜>", adds_bos=False, image_token="<image>")
    roles = {"system": ("", "\n\n"), "user": ("<|User|>: ", "\n\n"), "assistant": ("<|Assistant|>: ", DEEPSEEK_EOS)}
    template = chat_template(roles, image="<image>\n", generation="<|Assistant|>:", bos=DEEPSEEK_BOS)
    image_processor = DeepseekOcr2ImageProcessor(size={"height": 768, "width": 768}, crop_to_patches=False)
    processor = processor_of("DeepseekOcr2Processor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    image, eos, pad = token_ids(made, "<image>", DEEPSEEK_EOS, "<｜▁pad▁｜>")
    config = tiny_config(DeepseekOcr2Config, {
        "vision_config": {"sam_config": {"image_size": 768, "patch_size": 16, "global_attn_indexes": [1],
                                         "window_size": 4, "downsample_channels": [WIDTH, WIDTH], "mlp_dim": 2 * WIDTH},
                          "encoder_config": {"vocab_size": 16}},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad,
                        "bos_token_id": made.bos_token_id, "mlp_layer_types": ["dense", "sparse"],
                        "num_experts_per_tok": 2},
        "image_token_id": image})
    return assemble("DeepseekOcr2ForConditionalGeneration", config, made, processor, [DEEPSEEK_EOS])


CHAT_FAMILIES = {
    "cosmos3_omni": build_cosmos3_omni,
    "deepseek_ocr2": build_deepseek_ocr2,
    "video_llama_3": build_video_llama_3,
    "cohere_compass": build_cohere_compass,
    "paddleocr_vl": build_paddleocr_vl,
    "qianfan_ocr": build_qianfan_ocr,
    "minicpmv4_6": build_minicpmv4_6,
    "minicpmv4_7": build_minicpmv4_7,
    "vipllava": build_vipllava,
    "llava_next_video": build_llava_next_video,
    "video_llava": build_video_llava,
    "granite_docling": build_granite_docling,
    "granite4_vision": build_granite4_vision,
    "hunyuan_vl": build_hunyuan_vl,
    "hy_v4_vl": build_hy_v4_vl,
    "ovis2": build_ovis2,
    "ernie4_5_vl_moe": build_ernie4_5_vl_moe,
    "deepseek_vl": build_deepseek_vl,
    "deepseek_vl_hybrid": build_deepseek_vl_hybrid,
    "janus": build_janus,
    "aria": build_aria,
    "aya_vision": build_aya_vision,
    "hyperclovax_vision_v2": build_hyperclovax_vision_v2,
    "lfm3_vl": build_lfm3_vl,
    "cosmos3_edge": build_cosmos3_edge,
    "glm4v": build_glm4v,
    "glm4v_moe": build_glm4v_moe,
    "glm46v": build_glm46v,
    "glmga": build_glmga,
    "glm_ocr": build_glm_ocr,
    "glm5_next": build_glm5_next,
    "exaone4_5": build_exaone4_5,
    "qwen4_exp": build_qwen4_exp,
    "qwen3_vl_moe": build_qwen3_vl_moe,
    "qwen3_5": build_qwen3_5,
    "qwen3_5_moe": build_qwen3_5_moe,
}
