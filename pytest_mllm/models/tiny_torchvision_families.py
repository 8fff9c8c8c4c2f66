"""Tiny random models of the families whose image processors need torchvision (transformers 5
has no PIL version of them), or whose vision towers come from timm: built and checked only where
torchvision (and timm) are installed.

See `models/tiny_families.py` for what a tiny family model is and how it is built; the checkpoint
each imitates is named next to it.
"""

from __future__ import annotations

from typing import Any

from pytest_mllm.models.tiny_chat_families import DEEPSEEK_BOS, DEEPSEEK_EOS, minicpmv
from pytest_mllm.models.tiny_parts import (QWEN_TOKENS, WIDTH, assemble, chat_template, chatml, llama3, merged,
                                           processor_of, qwen_image_processor,
                                           tiny_config, tiny_tokenizer, token_ids)


def build_llama4() -> tuple[Any, Any]:
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: "<|header_start|>user<|header_end|>\n\n…<|eot|>" after its BOS; a
    # 28-pixel tile of 2 x 2 patches, pixel-shuffled into one <|patch|>
    from transformers import Llama4Config, Llama4ImageProcessor

    marks = ["<|image|>", "<|image_start|>", "<|image_end|>", "<|patch|>", "<|tile_x_separator|>",
             "<|tile_y_separator|>"]
    made = tiny_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<|header_start|>", "<|header_end|>", "<|eot|>",
                           "<|finetune_right_pad|>", *marks], bos="<|begin_of_text|>", eos="<|eot|>",
                          pad="<|finetune_right_pad|>", adds_bos=True)
    roles = {role: (f"<|header_start|>{role}<|header_end|>\n\n", "<|eot|>") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="<|image|>", generation="<|header_start|>assistant<|header_end|>\n\n",
                             bos="<|begin_of_text|>", trim=True)
    image_processor = Llama4ImageProcessor(size={"height": 28, "width": 28}, max_patches=2)
    processor = processor_of("Llama4Processor", image_processor=image_processor, tokenizer=made, patch_size=14,
                             chat_template=template)
    patch, start, end, eos, eot, pad = token_ids(made, "<|patch|>", "<|image_start|>", "<|image_end|>",
                                                 "<|end_of_text|>", "<|eot|>", "<|finetune_right_pad|>")
    config = tiny_config(Llama4Config, {
        "vision_config": {"image_size": 28, "patch_size": 14, "vision_output_dim": WIDTH, "projector_input_dim": WIDTH,
                          "projector_output_dim": WIDTH, "pixel_shuffle_ratio": 0.5,
                          "intermediate_size": 4 * WIDTH},  # the shuffled patches feed its adapter
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": [eos, eot],
                        "pad_token_id": pad, "intermediate_size_mlp": 2 * WIDTH, "attention_chunk_size": 64,
                        "moe_layers": [1], "no_rope_layers": [1, 0]},
        "image_token_index": patch, "boi_token_index": start, "eoi_token_index": end})
    return assemble("Llama4ForConditionalGeneration", config, made, processor, ["<|eot|>", "<|end_of_text|>"])


_MISTRAL_TOKENS = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "[IMG]", "[IMG_BREAK]", "[IMG_END]",
                   "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"]
# mistralai/Mistral-Small-3.1-24B-Instruct-2503: "<s>[INST][IMG]…text[/INST]"
_MISTRAL_TEMPLATE = chat_template({"system": ("[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]"), "user": ("[INST]", "[/INST]"),
                                   "assistant": ("", "</s>")}, image="[IMG]", generation="", bos="<s>")


def _pixtral_family(config_name: str, model_name: str, template: str, changes: dict[str, Any],
                    merge: int = 2) -> tuple[Any, Any]:
    """A Pixtral vision tower's family: 8-pixel patches, merged `merge` x `merge`, rows ended by [IMG_BREAK] (an image of
    a single merged patch fails in transformers 5.24's Mistral 3: its features are squeezed to one dimension)."""
    import transformers
    from transformers import PixtralImageProcessor

    made = tiny_tokenizer(_MISTRAL_TOKENS, bos="<s>", eos="</s>", pad="<unk>", unk="<unk>")
    image_processor = PixtralImageProcessor(size={"longest_edge": 64}, patch_size={"height": 8, "width": 8})
    processor = processor_of("PixtralProcessor", image_processor=image_processor, tokenizer=made, patch_size=8,
                             spatial_merge_size=merge, chat_template=template)
    image, eos, pad = token_ids(made, "[IMG]", "</s>", "<unk>")
    settings = {"vision_config": {"image_size": 64, "patch_size": 8, "head_dim": 8},
                "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                                "pad_token_id": pad, "head_dim": 8},
                "image_token_index": image, "spatial_merge_size": merge}
    config = tiny_config(getattr(transformers, config_name), merged(settings, changes))
    return assemble(model_name, config, made, processor, ["</s>"])


def build_mistral3() -> tuple[Any, Any]:
    return _pixtral_family("Mistral3Config", "Mistral3ForConditionalGeneration", _MISTRAL_TEMPLATE, {})


def build_mistral_large4() -> tuple[Any, Any]:
    # mistralai/Mistral-Large-4-1T-A52B: Mistral's turns; a DeepSeek-V3-shaped text model
    return _pixtral_family("MistralLarge4Config", "MistralLarge4ForConditionalGeneration", _MISTRAL_TEMPLATE,
                           {"text_config": {"num_key_value_heads": 4, "kv_source_layers": None}})


def build_lighton_ocr() -> tuple[Any, Any]:
    # lightonai/LightOnOCR-1B-1025: ChatML turns, a Pixtral tower's patches merged 2 x 2 into image tokens
    from transformers import LightOnOcrConfig, PixtralImageProcessor

    marks = {"image_token": "<|image_pad|>", "image_break_token": "<|vision_pad|>", "image_end_token": "<|vision_end|>"}
    made = tiny_tokenizer(QWEN_TOKENS[:3] + list(marks.values()), bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                          **marks)
    image_processor = PixtralImageProcessor(size={"longest_edge": 56}, patch_size={"height": 14, "width": 14})
    processor = processor_of("LightOnOcrProcessor", image_processor=image_processor, tokenizer=made, patch_size=14,
                             spatial_merge_size=2, chat_template=chatml("<|image_pad|>"))
    image, eos, pad = token_ids(made, "<|image_pad|>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(LightOnOcrConfig, {
        "vision_config": {"image_size": 56, "patch_size": 14, "head_dim": 8},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_id": image})
    return assemble("LightOnOcrForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_lfm2_vl() -> tuple[Any, Any]:
    # LiquidAI/LFM2-VL-450M: ChatML turns after <|startoftext|>, "<image>" per image; one 64-pixel tile of 4 x 4
    # patches, downsampled 2 x 2 into 4 tokens, between its start and end marks
    from transformers import Lfm2VlConfig, Lfm2VlImageProcessor

    made = tiny_tokenizer(["<|pad|>", "<|startoftext|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>",
                           "<|image_start|>", "<|image_end|>", "<|img_thumbnail|>"], bos="<|startoftext|>",
                          eos="<|im_end|>", pad="<|pad|>", adds_bos=False, image_token="<image>")
    image_processor = Lfm2VlImageProcessor(do_image_splitting=False, min_image_tokens=1, max_image_tokens=4,
                                           encoder_patch_size=16, tile_size=64, size={"height": 64, "width": 64})
    processor = processor_of("Lfm2VlProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=chatml("<image>", bos="<|startoftext|>"))
    image, eos, pad = token_ids(made, "<image>", "<|im_end|>", "<|pad|>")
    config = tiny_config(Lfm2VlConfig, {
        "vision_config": {"patch_size": 16, "num_patches": 16},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad},
        "image_token_id": image})
    return assemble("Lfm2VlForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_cohere2_vision() -> tuple[Any, Any]:
    # CohereLabs/command-a-vision-07-2025: Command-R's turns, "<|IMG_PATCH|>" per image; one 32-pixel tile of 4 x 4
    # patches downsampled 2 x 2 into 4 tokens, with its thumbnail
    from transformers import Cohere2VisionConfig, Cohere2VisionImageProcessor

    marks = {"image_token": "<|IMG_PATCH|>", "boi_token": "<|START_OF_IMG|>", "eoi_token": "<|END_OF_IMG|>",
             "img_line_break_token": "<|IMG_LINE_BREAK|>"}
    start, end = "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>"
    made = tiny_tokenizer(["<PAD>", "<UNK>", "<BOS_TOKEN>", end, start, "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>",
                           "<|SYSTEM_TOKEN|>", *marks.values()], bos="<BOS_TOKEN>", eos=end, pad="<PAD>",
                          **marks)
    roles = {"system": (start + "<|SYSTEM_TOKEN|>", end), "user": (start + "<|USER_TOKEN|>", end),
             "assistant": (start + "<|CHATBOT_TOKEN|>", end)}
    template = chat_template(roles, image="<|IMG_PATCH|>", generation=start + "<|CHATBOT_TOKEN|>", bos="<BOS_TOKEN>")
    image_processor = Cohere2VisionImageProcessor(size={"height": 32, "width": 32}, max_patches=2,
                                                  patch_size=2)  # tokens per side of a tile
    processor = processor_of("Cohere2VisionProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    image, eos, pad = token_ids(made, "<|IMG_PATCH|>", end, "<PAD>")
    config = tiny_config(Cohere2VisionConfig, {
        "vision_config": {"image_size": 32, "patch_size": 8, "vision_use_head": False},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "sliding_window": 64},
        "image_token_id": image, "alignment_intermediate_size": 2 * WIDTH})
    return assemble("Cohere2VisionForConditionalGeneration", config, made, processor, [end])


def build_molmo2() -> tuple[Any, Any]:
    # allenai/Molmo2-8B: ChatML turns, "<|image|>" per image; one 28-pixel crop of 2 x 2 patches pooled into one
    # token, and its low-resolution view
    from transformers import Molmo2Config, Molmo2ImageProcessor

    marks = ["<im_start>", "<im_end>", "<im_patch>", "<im_col>", "<low_res_im_start>", "<frame_start>", "<frame_end>",
             "<im_low>", "<|image|>", "<|video|>"]
    made = tiny_tokenizer(QWEN_TOKENS[:3] + marks, bos=None, eos="<|im_end|>", pad="<|endoftext|>")
    image_processor = Molmo2ImageProcessor(size={"height": 28, "width": 28}, max_crops=1, overlap_margins=[0, 0])
    processor = processor_of("Molmo2Processor", image_processor=image_processor, tokenizer=made,
                             chat_template=chatml("<|image|>"))
    start, end, patch, low, frame_start, frame_end, eos, pad = token_ids(
        made, "<im_start>", "<im_end>", "<im_patch>", "<low_res_im_start>", "<frame_start>", "<frame_end>",
        "<|im_end|>", "<|endoftext|>")
    config = tiny_config(Molmo2Config, {
        "vision_config": {"image_size": [28, 28], "patch_size": 14, "num_position_embeddings": 4, "head_dim": 8},
        "adapter_config": {"vision_feature_layer": [1, 0], "text_hidden_size": WIDTH, "head_dim": 8},
        "text_config": {"vocab_size": len(made), "additional_vocab_size": 0, "eos_token_id": eos, "pad_token_id": pad},
        "image_start_token_id": start, "low_res_image_start_token_id": low, "image_end_token_id": end,
        "image_patch_id": patch, "frame_start_token_id": frame_start, "frame_end_token_id": frame_end})
    return assemble("Molmo2ForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_kimi_k25() -> tuple[Any, Any]:
    # moonshotai/Kimi-K2.6: "<|im_user|>user<|im_middle|>…<|im_end|><|im_assistant|>assistant<|im_middle|>", each
    # image as <|media_pad|> between its media marks; a DeepSeek-V3-shaped text model
    from transformers import Kimi_K25Config, Kimi_K25ImageProcessor

    marks = ["<|media_start|>", "<|media_content|>", "<|media_end|>", "<|media_pad|>", "<|kimi_k25_video_placeholder|>"]
    made = tiny_tokenizer(["[BOS]", "[EOS]", "[PAD]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>",
                           "<|im_middle|>", *marks], bos="[BOS]", eos="<|im_end|>", pad="[PAD]")
    roles = {role: (f"<|im_{role if role != 'assistant' else 'assistant'}|>{role}<|im_middle|>", "<|im_end|>")
             for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="<|media_start|>image<|media_content|><|media_pad|><|media_end|>",
                             generation="<|im_assistant|>assistant<|im_middle|>")
    image_processor = Kimi_K25ImageProcessor(size={"max_height": 56, "max_width": 56})
    processor = processor_of("Kimi_K25Processor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    image, video, start, end, eos, pad = token_ids(made, "<|media_pad|>", "<|kimi_k25_video_placeholder|>",
                                                   "<|media_start|>", "<|media_end|>", "<|im_end|>", "[PAD]")
    config = tiny_config(Kimi_K25Config, {
        "vision_config": {"patch_size": 14, "pos_emb_height": 8, "pos_emb_width": 8},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "num_key_value_heads": 4},
        "projection_hidden_size": WIDTH, "image_token_id": image, "video_token_id": video,
        "vision_start_token_id": start, "vision_end_token_id": end})
    return assemble("Kimi_K25ForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_step3p7() -> tuple[Any, Any]:
    # stepfun-ai/Step-3.7-Flash: "<|BOT|>user\n<im_patch>…<|EOT|><|BOT|>assistant\n"; a 56-pixel global view of 4 x 4
    # patches downsampled 4 x 4 into one token, 56-pixel local crops likewise
    from transformers import Step3p7Config, Step3p7ImageProcessor

    marks = ["<im_patch>", "<im_start>", "<im_end>", "<patch_start>", "<patch_end>", "<patch_newline>"]
    made = tiny_tokenizer(["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<|BOT|>", "<|EOT|>", "<unk>", *marks],
                          bos="<｜begin▁of▁sentence｜>", eos="<|EOT|>", pad="<unk>")
    roles = {role: (f"<|BOT|>{role}\n", "<|EOT|>") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="<im_patch>", generation="<|BOT|>assistant\n", bos="<｜begin▁of▁sentence｜>")
    image_processor = Step3p7ImageProcessor(size={"height": 56, "width": 56}, patch_size=56, max_image_size=112)
    processor = processor_of("Step3p7Processor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    patch, eos, pad = token_ids(made, "<im_patch>", "<|EOT|>", "<unk>")
    config = tiny_config(Step3p7Config, {
        "vision_config": {"image_size": 56, "patch_size": 14, "max_position_embeddings": 16, "mlp_ratio": 2.0},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "share_expert_dim": WIDTH, "sliding_window": 64},
        "image_token_id": patch})
    return assemble("Step3p7ForConditionalGeneration", config, made, processor, ["<|EOT|>"])


def build_minicpm_ocr() -> tuple[Any, Any]:
    return minicpmv("MiniCPMOcrProcessor", "MiniCPMOcrConfig", "MiniCPMOcrForConditionalGeneration",
                    "MiniCPMOcrImageProcessor", scale=28)


def build_unlimited_ocr() -> tuple[Any, Any]:
    # baidu/Unlimited-OCR: DeepSeek's turns, "<image>\n" per image; a 64-pixel global view of 4 x 4 SAM patches
    # downsampled into one query and its row's end, no local crops
    from transformers import UnlimitedOcrConfig, UnlimitedOcrImageProcessor

    made = tiny_tokenizer([DEEPSEEK_BOS, DEEPSEEK_EOS, "<image>", "<｜▁pad▁｜>"], bos=DEEPSEEK_BOS, eos=DEEPSEEK_EOS,
                          pad="<｜▁pad▁｜>", image_token="<image>")
    roles = {"system": ("", "\n\n"), "user": ("<|User|>: ", "\n\n"), "assistant": ("<|Assistant|>: ", DEEPSEEK_EOS)}
    template = chat_template(roles, image="<image>\n", generation="<|Assistant|>:", bos=DEEPSEEK_BOS)
    image_processor = UnlimitedOcrImageProcessor(size={"height": 64, "width": 64}, tile_size=64, crop_to_patches=False)
    processor = processor_of("UnlimitedOcrProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    image, eos, pad = token_ids(made, "<image>", DEEPSEEK_EOS, "<｜▁pad▁｜>")
    config = tiny_config(UnlimitedOcrConfig, {
        "vision_config": {"sam_config": {"image_size": 64, "patch_size": 16, "global_attn_indexes": [1],
                                         "window_size": 2, "mlp_dim": 2 * WIDTH, "downsample_channels": [WIDTH, WIDTH]},
                          "encoder_config": {"image_size": 64, "patch_size": 16}},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad},
        "image_token_id": image})
    return assemble("UnlimitedOcrForConditionalGeneration", config, made, processor, [DEEPSEEK_EOS])


def build_pp_formulanet() -> tuple[Any, Any]:
    # PaddlePaddle/PP-FormulaNet_plus-L_safetensors: a SAM encoder (64-pixel images here) and an mBART-shaped
    # decoder; the image alone, no text
    from transformers import PPFormulaNetConfig, PPFormulaNetImageProcessor

    made = tiny_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>")
    image_processor = PPFormulaNetImageProcessor(size={"height": 64, "width": 64})
    processor = processor_of("PPFormulaNetProcessor", image_processor=image_processor, tokenizer=made)
    eos, pad = token_ids(made, "</s>", "<pad>")
    config = tiny_config(PPFormulaNetConfig, {
        "vision_config": {"image_size": 64, "patch_size": 16, "global_attn_indexes": [1], "window_size": 2,
                          "mlp_dim": 2 * WIDTH, "output_channels": WIDTH, "post_conv_in_channels": WIDTH,
                          "post_conv_mid_channels": WIDTH, "post_conv_out_channels": WIDTH, "decoder_hidden_size": WIDTH},
        "text_config": {"vocab_size": len(made), "d_model": WIDTH, "decoder_layers": 1, "decoder_ffn_dim": 2 * WIDTH,
                        "decoder_attention_heads": 4, "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "decoder_start_token_id": eos, "forced_eos_token_id": None,
                        "init_std": 0.2}})
    return assemble("PPFormulaNetForConditionalGeneration", config, made, processor, ["</s>"])


def build_perception_lm() -> tuple[Any, Any]:
    # facebook/Perception-LM-1B: Llama 3's turns, "<|image|>" per image; a timm Perception Encoder of 32-pixel
    # tiles of 2 x 2 patches, pooled 2 x 2 into one token (the thumbnail alone)
    from transformers import PerceptionLMConfig, PerceptionLMImageProcessor

    made = tiny_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                           "<|eot_id|>", "<|finetune_right_pad_id|>", "<|image|>", "<|video|>"], bos="<|begin_of_text|>",
                          eos="<|eot_id|>", pad="<|finetune_right_pad_id|>", adds_bos=False, image_token="<|image|>",
                          video_token="<|video|>")
    image_processor = PerceptionLMImageProcessor(tile_size=32, max_num_tiles=1, size={"width": 32, "height": 32},
                                                 vision_input_type="thumb+tile")
    processor = processor_of("PerceptionLMProcessor", image_processor=image_processor, tokenizer=made, patch_size=16,
                             pooling_ratio=2, chat_template=llama3("<|image|>"))
    image, video, eos, pad = token_ids(made, "<|image|>", "<|video|>", "<|eot_id|>", "<|finetune_right_pad_id|>")
    config = tiny_config(PerceptionLMConfig, {
        "vision_config": {"architecture": "vit_pe_core_tiny_patch16_384", "num_classes": 0,
                          "model_args": {"embed_dim": WIDTH, "depth": 1, "num_heads": 2, "img_size": [32, 32],
                                         "ref_feat_shape": [2, 2], "global_pool": "",
                                         "use_post_transformer_norm": False}},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad},
        "projector_pooling_ratio": 2, "image_token_id": image, "video_token_id": video})
    return assemble("PerceptionLMForConditionalGeneration", config, made, processor, ["<|eot_id|>"])


def build_fast_vlm() -> tuple[Any, Any]:
    # KamilaMila/FastVLM-7B: LLaVA's processor with ChatML turns, "<image>\n" per image; a timm
    # FastViT-HD downsampling 64 times: a 128-pixel image is 4 tokens
    from transformers import CLIPImageProcessor, FastVlmConfig

    made = tiny_tokenizer(QWEN_TOKENS[:3] + ["<image>"], bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                          image_token="<image>")
    image_processor = CLIPImageProcessor(size={"shortest_edge": 128}, crop_size={"height": 128, "width": 128})
    processor = processor_of("LlavaProcessor", image_processor=image_processor, tokenizer=made, patch_size=64,
                             vision_feature_select_strategy="full", num_additional_image_tokens=0,
                             chat_template=chatml("<image>\n"))
    image, eos, pad = token_ids(made, "<image>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(FastVlmConfig, {
        "vision_config": {"hidden_size": 2 * WIDTH,
                          "model_args": {"inference_mode": True, "layers": [1, 1, 1, 1, 1],
                                         "embed_dims": [8, 8, 16, WIDTH, WIDTH], "mlp_ratios": [2, 2, 2, 2, 2]}},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_index": image, "image_seq_length": 4})
    return assemble("FastVlmForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def _inkling2(prefix: str) -> tuple[Any, Any]:
    """Inkling 2 (thinkingmachines/Inkling-2-Small): ChatML-like turns, one image token per 40-pixel patch (2 x 2 of
    its tower's 20-pixel patches) at the image's own size."""
    import transformers
    from transformers import Inkling2ImageProcessor

    made = tiny_tokenizer(QWEN_TOKENS[:3] + ["<|unused_200054|>"], bos=None, eos="<|im_end|>", pad="<|endoftext|>",
                          image_token="<|unused_200054|>")
    processor = processor_of("Inkling2Processor", image_processor=Inkling2ImageProcessor(), tokenizer=made,
                             chat_template=chatml("<|unused_200054|>"))
    image, eos, pad = token_ids(made, "<|unused_200054|>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(getattr(transformers, f"{prefix}Config"), {
        "vision_config": {"text_hidden_size": WIDTH, "projection_hidden_dim": 2 * WIDTH},
        "text_config": {"vocab_size": len(made), "unpadded_vocab_size": len(made), "eos_token_id": eos,
                        "pad_token_id": pad, "swa_num_attention_heads": 4, "swa_num_key_value_heads": 2,
                        "swa_head_dim": 8, "d_rel": 4, "rel_extent": 64, "sliding_window_size": 64,
                        "n_layers_per_attn_res_block": 1},
        "image_token_id": image})
    return assemble(f"{prefix}ForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_inkling2() -> tuple[Any, Any]:
    return _inkling2("Inkling2")


def build_inkling2_loop() -> tuple[Any, Any]:
    return _inkling2("Inkling2Loop")


def build_minimax_m3_vl() -> tuple[Any, Any]:
    # MiniMaxAI/MiniMax-M3: "]~!b[]~b]user\n…[e~[\n" turns, each image between its start and end marks;
    # Qwen-style 14-pixel patches merged 2 x 2
    from transformers import MiniMaxM3VLConfig

    marks = ["]<]image[>[", "]<]video[>[", "]<]start of image[>[", "]<]end of image[>["]
    made = tiny_tokenizer(["]~!b[", "]~b]", "[e~[", "<pad>", *marks], bos="]~!b[", eos="[e~[", pad="<pad>")
    roles = {role: (f"]~b]{role}\n", "[e~[\n") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="]<]image[>[", generation="]~b]ai\n", bos="]~!b[")
    processor = processor_of("MiniMaxM3VLProcessor", tokenizer=made, chat_template=template,
                             image_processor=qwen_image_processor("MiniMaxM3VLImageProcessor", patch=14))
    image, video, eos, pad = token_ids(made, "]<]image[>[", "]<]video[>[", "[e~[", "<pad>")
    config = tiny_config(MiniMaxM3VLConfig, {
        "vision_config": {"image_size": 56, "patch_size": 14},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "rotary_dim": 8, "dense_intermediate_size": 2 * WIDTH,
                        "shared_intermediate_size": 2 * WIDTH, "index_block_size": 8, "index_topk_blocks": 2},
        "image_token_index": image, "video_token_index": video, "projector_hidden_size": 2 * WIDTH})
    return assemble("MiniMaxM3SparseForConditionalGeneration", config, made, processor, ["[e~["])


def build_muse_glimmer() -> tuple[Any, Any]:
    # meta-models/Muse-Glimmer-30B: Llama 4's header turns; Qwen-style 14-pixel patches merged 2 x 2, each image
    # between its start and end marks
    from transformers import MuseGlimmerConfig, MuseGlimmerImageProcessor

    marks = ["<|patch|>", "<|image_start|>", "<|image_end|>", "<|video|>", "<|vid_frame_separator|>", "<|vid_start|>",
             "<|vid_end|>"]
    made = tiny_tokenizer(["<|begin_of_text|>", "<|end_of_text|>", "<|header_start|>", "<|header_end|>", "<|eot|>",
                           "<|finetune_right_pad|>", *marks], bos="<|begin_of_text|>", eos="<|eot|>",
                          pad="<|finetune_right_pad|>", adds_bos=True)
    roles = {role: (f"<|header_start|>{role}<|header_end|>\n\n", "<|eot|>") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="<|patch|>", generation="<|header_start|>assistant<|header_end|>\n\n",
                             bos="<|begin_of_text|>", trim=True)
    image_processor = MuseGlimmerImageProcessor(max_image_tokens=16)
    processor = processor_of("MuseGlimmerProcessor", image_processor=image_processor, tokenizer=made,
                             chat_template=template)
    patch, video, eos, pad = token_ids(made, "<|patch|>", "<|video|>", "<|eot|>", "<|finetune_right_pad|>")
    config = tiny_config(MuseGlimmerConfig, {
        "vision_config": {"pos_emb_height": 8, "pos_emb_width": 8, "max_position_embeddings": 64},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad, "sliding_window": 64, "layer_rope_theta": None},
        "image_token_id": patch, "video_token_id": video, "out_hidden_size": 4 * WIDTH,  # 2 x 2 merged patches
        "projector_hidden_size": 2 * WIDTH})
    return assemble("MuseGlimmerForConditionalGeneration", config, made, processor, ["<|eot|>"])


CHAT_TORCHVISION_FAMILIES = {
    "muse_glimmer": build_muse_glimmer,
    "minimax_m3_vl": build_minimax_m3_vl,
    "inkling2": build_inkling2,
    "inkling2_loop": build_inkling2_loop,
    "fast_vlm": build_fast_vlm,
    "perception_lm": build_perception_lm,
    "pp_formulanet": build_pp_formulanet,
    "minicpm_ocr": build_minicpm_ocr,
    "unlimited_ocr": build_unlimited_ocr,
    "step3p7": build_step3p7,
    "kimi_k25": build_kimi_k25,
    "molmo2": build_molmo2,
    "mistral_large4": build_mistral_large4,
    "lighton_ocr": build_lighton_ocr,
    "lfm2_vl": build_lfm2_vl,
    "cohere2_vision": build_cohere2_vision,
    "llama4": build_llama4,
    "mistral3": build_mistral3,
}
