"""Tiny random models of the families prompted without a chat template: their released checkpoints
have none, and their model cards give the text the processor is called with (the conventions of
`models/families.py`). Some are encoder-decoders (Florence-2, whose `generate` returns the answer
alone); some take an image and no question (BLIP's captioner, GOT-OCR 2).

See `models/tiny_families.py` for what a tiny family model is and how it is built; the checkpoint
each imitates is named next to it.
"""

from __future__ import annotations

from typing import Any

from pytest_mllm.models.tiny_parts import (WIDTH, assemble, chat_template, processor_of, text_config, tiny_config, tiny_tokenizer,
                                           token_ids)

_BERT_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_blip() -> tuple[Any, Any]:
    # Salesforce/blip-image-captioning-base: a BERT tokenizer whose [DEC] starts the caption, ended by [SEP]
    from transformers import BlipConfig, BlipImageProcessor

    made = tiny_tokenizer(_BERT_TOKENS + ["[DEC]"], bos="[DEC]", eos="[SEP]", pad="[PAD]", unk="[UNK]",
                          cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")
    image_processor = BlipImageProcessor(size={"height": 32, "width": 32})
    processor = processor_of("BlipProcessor", image_processor=image_processor, tokenizer=made)
    bos, sep, pad = token_ids(made, "[DEC]", "[SEP]", "[PAD]")
    config = tiny_config(BlipConfig, {
        "vision_config": {"image_size": 32, "patch_size": 16},
        "text_config": {"vocab_size": len(made), "bos_token_id": bos, "eos_token_id": sep, "sep_token_id": sep,
                        "pad_token_id": pad, "encoder_hidden_size": WIDTH}, "projection_dim": WIDTH})
    return assemble("BlipForConditionalGeneration", config, made, processor, ["[SEP]"])


def build_blip_2() -> tuple[Any, Any]:
    # Salesforce/blip2-opt-2.7b: OPT's tokenizer (its BOS "</s>"), 4 query tokens standing for the image
    from transformers import Blip2Config, BlipImageProcessor

    made = tiny_tokenizer(["<pad>", "</s>", "<unk>"], bos="</s>", eos="</s>", pad="<pad>", unk="<unk>", adds_bos=True)
    processor = processor_of("Blip2Processor", image_processor=BlipImageProcessor(size={"height": 32, "width": 32}),
                             tokenizer=made, num_query_tokens=4)  # it adds its <image> token to the tokenizer
    image, eos, pad = token_ids(made, "<image>", "</s>", "<pad>")
    config = tiny_config(Blip2Config, {
        "vision_config": {"image_size": 32, "patch_size": 16},
        "qformer_config": {"encoder_hidden_size": WIDTH, "vocab_size": 64},
        "text_config": {"model_type": "opt", "vocab_size": len(made), "bos_token_id": eos, "eos_token_id": eos,
                        "pad_token_id": pad, "word_embed_proj_dim": WIDTH, "ffn_dim": 2 * WIDTH},
        "num_query_tokens": 4, "image_token_index": image})
    return assemble("Blip2ForConditionalGeneration", config, made, processor, ["</s>"])


def build_instructblip() -> tuple[Any, Any]:
    # Salesforce/instructblip-vicuna-7b: Vicuna's tokenizer for the language model, BERT's for the Q-Former
    from transformers import BlipImageProcessor, InstructBlipConfig

    made = tiny_tokenizer(["<unk>", "<s>", "</s>"], bos="<s>", eos="</s>", pad="<unk>", unk="<unk>", adds_bos=True)
    qformer = tiny_tokenizer(_BERT_TOKENS, bos=None, eos="[SEP]", pad="[PAD]", unk="[UNK]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")
    qformer.padding_side = "right"  # BERT's: its absolute positions start at the first token
    processor = processor_of("InstructBlipProcessor", tokenizer=made, qformer_tokenizer=qformer, num_query_tokens=4,
                             image_processor=BlipImageProcessor(size={"height": 32, "width": 32}))  # adds <image>
    image, eos, pad = token_ids(made, "<image>", "</s>", "<unk>")
    config = tiny_config(InstructBlipConfig, {
        "vision_config": {"image_size": 32, "patch_size": 16},
        "qformer_config": {"encoder_hidden_size": WIDTH, "vocab_size": len(qformer)},
        "text_config": {"model_type": "llama", **text_config(vocab_size=len(made), bos_token_id=made.bos_token_id,
                                                             eos_token_id=eos, pad_token_id=pad)},
        "num_query_tokens": 4, "image_token_index": image})
    return assemble("InstructBlipForConditionalGeneration", config, made, processor, ["</s>"])


def build_git() -> tuple[Any, Any]:
    # microsoft/git-base-textvqa: a BERT tokenizer; [CLS] + the question's tokens, the image's before them
    from transformers import CLIPImageProcessor, GitConfig

    made = tiny_tokenizer(_BERT_TOKENS, bos="[CLS]", eos="[SEP]", pad="[PAD]", unk="[UNK]", cls_token="[CLS]",
                          sep_token="[SEP]", mask_token="[MASK]")
    image_processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = processor_of("GitProcessor", image_processor=image_processor, tokenizer=made)
    cls, sep, pad = token_ids(made, "[CLS]", "[SEP]", "[PAD]")
    config = tiny_config(GitConfig, {"vision_config": {"image_size": 32, "patch_size": 16}, "vocab_size": len(made),
                                     "bos_token_id": cls, "eos_token_id": sep, "pad_token_id": pad})
    return assemble("GitForCausalLM", config, made, processor, ["[SEP]"])


def build_kosmos_2() -> tuple[Any, Any]:
    # microsoft/kosmos-2-patch14-224: XLM-R's tokenizer (it adds <s>), 64 latent queries between <image> and </image>
    from transformers import CLIPImageProcessor, Kosmos2Config

    made = tiny_tokenizer(["<s>", "<pad>", "</s>", "<unk>"], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>",
                          adds_bos=True)
    image_processor = CLIPImageProcessor(size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28})
    processor = processor_of("Kosmos2Processor", image_processor=image_processor, tokenizer=made,
                             num_patch_index_tokens=16)
    eos, pad = token_ids(made, "</s>", "<pad>")
    config = tiny_config(Kosmos2Config, {
        "vision_config": {"image_size": 28, "patch_size": 14},
        "text_config": {"vocab_size": len(processor.tokenizer), "embed_dim": WIDTH, "layers": 2, "ffn_dim": 2 * WIDTH,
                        "attention_heads": 4, "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad}})
    return assemble("Kosmos2ForConditionalGeneration", config, processor.tokenizer, processor, ["</s>"])


def build_florence2() -> tuple[Any, Any]:
    # microsoft/Florence-2-base: BART's tokenizer (it adds <s> and </s>), DaViT's image tokens before the task's text;
    # an encoder-decoder
    from transformers import CLIPImageProcessor, Florence2Config

    made = tiny_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<image>"], bos="<s>", eos="</s>", pad="<pad>",
                          unk="<unk>", adds_bos=True, adds_eos=True, image_token="<image>")
    image_processor = CLIPImageProcessor(size={"height": 32, "width": 32}, do_center_crop=False,
                                         image_seq_length=17)  # 4 x 4 after DaViT's strides, and a pooled one
    processor = processor_of("Florence2Processor", image_processor=image_processor, tokenizer=made)
    image, eos, pad = token_ids(made, "<image>", "</s>", "<pad>")
    config = tiny_config(Florence2Config, {
        "vision_config": {"depths": [1, 1], "patch_size": [7, 3], "patch_stride": [4, 2], "patch_padding": [3, 1],
                          "patch_prenorm": [False, True], "embed_dim": [16, WIDTH], "num_heads": [2, 4],
                          "num_groups": [2, 4], "window_size": 2, "projection_dim": WIDTH, "drop_path_rate": 0.0,
                          "max_position_embeddings": 8},
        "text_config": {"vocab_size": len(made), "d_model": WIDTH, "encoder_layers": 1, "decoder_layers": 1,
                        "encoder_attention_heads": 4, "decoder_attention_heads": 4, "bos_token_id": made.bos_token_id,
                        "eos_token_id": eos, "pad_token_id": pad, "decoder_start_token_id": eos, "init_std": 0.2,
                        "forced_eos_token_id": None, "max_position_embeddings": 256},
        "image_token_id": image})
    model, built = assemble("Florence2ForConditionalGeneration", config, made, processor, ["</s>"])
    model.generation_config.forced_bos_token_id = made.bos_token_id  # BART's: the answer opens with <s>
    return model, built


def _visual_words(count: int, name: Any) -> list[str]:
    return [name(i) for i in range(count)]


def _chameleon_code(i: int) -> str:
    """Chameleon's name of image code `i`: its digits as the letters A-J, between IMGIMG and Z."""
    return "IMGIMG" + "".join(chr(ord("A") + int(d)) for d in str(i)) + "Z"


def build_chameleon() -> tuple[Any, Any]:
    # facebook/chameleon-7b: the question, then "<image>" where the image's 16 VQ codes go (a 32-pixel image
    # downsampled 8 times); the processor ends the prompt with its separator
    from transformers import ChameleonConfig, ChameleonImageProcessor

    codes = _visual_words(16, _chameleon_code)
    made = tiny_tokenizer(["<s>", "</s>", "<pad>", "<unk>", "<image>", "<racm3:break>", "<eoss>", "<reserved08706>",
                           *codes], bos="<s>", eos="</s>", pad="<pad>", unk="<unk>", adds_bos=True,
                          sep_token="<reserved08706>")
    image_processor = ChameleonImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = processor_of("ChameleonProcessor", image_processor=image_processor, tokenizer=made,
                             image_seq_length=16)
    eos, pad = token_ids(made, "</s>", "<pad>")
    config = tiny_config(ChameleonConfig, {
        "vq_config": {"embed_dim": 8, "num_embeddings": 16, "latent_channels": 8, "resolution": 32,
                      "base_channels": 32, "channel_multiplier": [1, 1, 1, 1], "num_res_blocks": 1},
        "vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos, "pad_token_id": pad,
        "vocabulary_map": made.get_vocab(), "hidden_size": WIDTH})
    return assemble("ChameleonForConditionalGeneration", config, made, processor, ["</s>"])


def build_idefics() -> tuple[Any, Any]:
    # HuggingFaceM4/idefics-9b-instruct: "User:", the image, the question and <end_of_utterance>, "\nAssistant:";
    # LLaMA's tokenizer (it adds <s>)
    from transformers import IdeficsConfig, IdeficsImageProcessor

    made = tiny_tokenizer(["<unk>", "<s>", "</s>", "<image>", "<fake_token_around_image>", "<end_of_utterance>"],
                          bos="<s>", eos="</s>", pad="<unk>", unk="<unk>", adds_bos=True)
    image_processor = IdeficsImageProcessor(image_size=28)
    processor = processor_of("IdeficsProcessor", image_processor=image_processor, tokenizer=made, image_size=28)
    eos, pad = token_ids(made, "</s>", "<unk>")
    config = tiny_config(IdeficsConfig, {
        "vision_config": {"image_size": 28, "patch_size": 14, "embed_dim": WIDTH},
        "vocab_size": len(made), "additional_vocab_size": 0, "bos_token_id": made.bos_token_id, "eos_token_id": eos,
        "pad_token_id": pad, "alpha_initializer": "ones", "cross_layer_interval": 1})  # zeros: images would not count
    return assemble("IdeficsForVisionText2Text", config, made, processor, ["</s>"])


def build_got_ocr2() -> tuple[Any, Any]:
    # stepfun-ai/GOT-OCR-2.0-hf: Qwen's tokenizer; the processor writes its own OCR prompt around 256 image tokens
    # (a 1024-pixel image: its processor's default)
    from transformers import GotOcr2Config, GotOcr2ImageProcessor

    made = tiny_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<imgpad>"], bos=None,
                          eos="<|endoftext|>", pad="<|endoftext|>")
    image_processor = GotOcr2ImageProcessor(size={"height": 1024, "width": 1024})
    processor = processor_of("GotOcr2Processor", image_processor=image_processor, tokenizer=made)
    image, eos, end = token_ids(made, "<imgpad>", "<|endoftext|>", "<|im_end|>")
    config = tiny_config(GotOcr2Config, {
        "vision_config": {"global_attn_indexes": [], "window_size": 8, "output_channels": WIDTH, "mlp_dim": 2 * WIDTH},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": eos},
        "image_token_index": image})
    model, built = assemble("GotOcr2ForConditionalGeneration", config, made, processor, ["<|endoftext|>"])
    return model, built


def build_emu3() -> tuple[Any, Any]:
    # Emu3-community/Emu3-Chat-hf: "You are a helpful assistant. USER: <image>… ASSISTANT:"; a 32-pixel image becomes
    # 4 x 4 VQ codes (downsampled 8 times) spelled as its visual tokens, a row end after each row
    from transformers import Emu3Config, Emu3ImageProcessor

    codes = _visual_words(16, lambda i: f"<|visual token {i:06d}|>")
    marks = {"image_token": "<image>", "boi_token": "<|image start|>", "eoi_token": "<|image end|>",
             "image_wrapper_token": "<|image token|>", "eof_token": "<|extra_201|>"}
    made = tiny_tokenizer(["<|extra_203|>", "<|extra_204|>", "<|endoftext|>", "<|extra_200|>", *marks.values(), *codes],
                          bos="<|extra_203|>", eos="<|extra_204|>", pad="<|endoftext|>", adds_bos=True, **marks)
    image_processor = Emu3ImageProcessor(min_pixels=32 * 32, max_pixels=32 * 32, spatial_factor=8)
    processor = processor_of("Emu3Processor", image_processor=image_processor, tokenizer=made)
    eos, pad = token_ids(made, "<|extra_204|>", "<|endoftext|>")
    config = tiny_config(Emu3Config, {
        "vq_config": {"codebook_size": 16, "embed_dim": 4, "latent_channels": 4, "base_channels": 32,
                      "channel_multiplier": [1, 1, 1, 1], "num_res_blocks": 1, "attn_resolutions": [],
                      "hidden_size": WIDTH, "temporal_downsample_factor": 4},
        "text_config": {"vocab_size": len(made), "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad},
        "vocabulary_map": made.get_vocab()})
    return assemble("Emu3ForConditionalGeneration", config, made, processor, ["<|extra_204|>"])


def build_pp_chart2table() -> tuple[Any, Any]:
    # PaddlePaddle/PP-Chart2Table_safetensors: GOT-OCR 2.0's model; its chat template writes the 256 image tokens of a
    # 1024-pixel image itself, then the task
    from transformers import PPChart2TableConfig, PPChart2TableImageProcessor

    made = tiny_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<img>", "</img>", "<imgpad>"], bos=None,
                          eos="<|im_end|>", pad="<|endoftext|>")
    roles = {role: (f"<|im_start|>{role}\n", "<|im_end|>") for role in ("system", "user", "assistant")}
    template = chat_template(roles, image="<img>" + "<imgpad>" * 256 + "</img>\n", generation="<|im_start|>assistant\n")
    processor = processor_of("PPChart2TableProcessor", image_processor=PPChart2TableImageProcessor(), tokenizer=made,
                             chat_template=template)
    image, eos, pad = token_ids(made, "<imgpad>", "<|im_end|>", "<|endoftext|>")
    config = tiny_config(PPChart2TableConfig, {
        "vision_config": {"global_attn_indexes": [], "window_size": 8, "output_channels": WIDTH, "mlp_dim": 2 * WIDTH},
        "text_config": {"vocab_size": len(made), "eos_token_id": eos, "pad_token_id": pad},
        "image_token_index": image})
    return assemble("GotOcr2ForConditionalGeneration", config, made, processor, ["<|im_end|>"])


def build_kosmos_2_5() -> tuple[Any, Any]:
    # microsoft/kosmos-2.5: a task prompt after <image>, 4 latent queries of up to 4096 Pix2Struct-style patches (its
    # processor's default)
    from transformers import Kosmos2_5Config, Kosmos2_5ImageProcessor

    made = tiny_tokenizer(["<s>", "<pad>", "</s>", "<unk>", "<image>", "</image>", "<ocr>", "<md>"], bos="<s>",
                          eos="</s>", pad="<pad>", unk="<unk>", adds_bos=True, image_token="<s>", boi_token="<image>",
                          eoi_token="</image>")
    processor = processor_of("Kosmos2_5Processor", image_processor=Kosmos2_5ImageProcessor(),
                             tokenizer=made, num_image_tokens=4)
    eos, pad = token_ids(made, "</s>", "<pad>")
    config = tiny_config(Kosmos2_5Config, {
        "vision_config": {"patch_embed_hidden_size": 3 * 16 * 16, "max_num_patches": 4096, "head_dim": 8,
                          "num_attention_heads": 2, "num_hidden_layers": 1},
        "text_config": {"vocab_size": len(made), "embed_dim": WIDTH, "layers": 2, "ffn_dim": 2 * WIDTH,
                        "attention_heads": 4, "bos_token_id": made.bos_token_id, "eos_token_id": eos,
                        "pad_token_id": pad},
        "latent_query_num": 4})
    return assemble("Kosmos2_5ForConditionalGeneration", config, made, processor, ["</s>"])


PROMPTED_FAMILIES = {
    "pp_chart2table": build_pp_chart2table,
    "kosmos-2.5": build_kosmos_2_5,
    "emu3": build_emu3,
    "blip": build_blip,
    "blip-2": build_blip_2,
    "instructblip": build_instructblip,
    "git": build_git,
    "kosmos-2": build_kosmos_2,
    "florence2": build_florence2,
    "chameleon": build_chameleon,
    "idefics": build_idefics,
    "got_ocr2": build_got_ocr2,
}
