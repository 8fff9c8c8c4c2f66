"""The parts every tiny family model is made of: a byte-level BPE tokenizer carrying the family's
special tokens, a chat template written to render as the family's released one does for a user turn
of images and text, a small Llama-shaped text config, greedy generation settings.

Heavy imports (tokenizers, transformers) happen inside the functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pytest_mllm.models.tiny import bpe_tokenizer, tiny_corpus

WIDTH = 32  # hidden size of the text models
VISION_WIDTH = 16
CLIP = {"hidden_size": VISION_WIDTH, "intermediate_size": 2 * VISION_WIDTH, "num_hidden_layers": 2,
        "num_attention_heads": 2}
SIGLIP = {**CLIP}
QWEN_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
               "<|image_pad|>", "<|video_pad|>"]


def tiny_tokenizer(special: list[str], *, bos: str | None, eos: str, pad: str, adds_bos: bool = False,
              adds_eos: bool = False, unk: str | None = None, **attributes: str) -> Any:
    """The tiny BPE tokenizer with the family's special tokens; `adds_bos` when the family's tokenizer
    puts its BOS before the text it encodes (Llama, Mistral, Gemma), not when it has none to add (Qwen,
    SmolLM2); `adds_eos` when it ends every text with its EOS (T5, BART); `attributes` become named
    tokens (e.g. image_token="<image>") as the family's tokenizer_config declares them."""
    from tokenizers.processors import TemplateProcessing

    made = bpe_tokenizer(tiny_corpus(), special_tokens=special, bos_token=bos, eos_token=eos, pad_token=pad,
                         extra_special_tokens=attributes or None, **({"unk_token": unk} if unk else {}))
    if adds_bos or adds_eos:
        first = [bos] if adds_bos else []
        last = [eos] if adds_eos else []
        marks = {t: made.convert_tokens_to_ids(t) for t in first + last if t is not None}
        made.backend_tokenizer.post_processor = TemplateProcessing(
            single=" ".join([*first, "$A", *last]), pair=" ".join([*first, "$A", *last, *first, "$B", *last]),
            special_tokens=list(marks.items()))
    return made


def token_ids(made: Any, *tokens: str) -> list[int]:
    """The ids of `tokens` in the tokenizer `made`."""
    return [made.convert_tokens_to_ids(t) for t in tokens]


def greedy(model: Any, made: Any, eos: list[int]) -> Any:
    """`model` with greedy generation that stops at any of `eos`, padding with the tokenizer's pad."""
    generation = model.generation_config
    generation.pad_token_id = made.pad_token_id
    generation.bos_token_id = made.bos_token_id
    generation.eos_token_id = eos if len(eos) > 1 else eos[0]
    return model


def text_config(**overrides: Any) -> dict[str, Any]:
    """A Llama-shaped text model of `WIDTH` units, 2 layers."""
    return {"hidden_size": WIDTH, "intermediate_size": 2 * WIDTH, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 4096,
            "initializer_range": 0.2, **overrides}  # wide enough that answers follow the input


def chat_template(roles: Mapping[str, tuple[str, str]], *, image: str, generation: str, bos: str = "",
                  default_system: str | None = None, images_first: bool = True, trim: bool = False,
                  first_user_prefix: bool = False) -> str:
    """A chat template rendering each message as `open + content + close` of its role, where content is
    its images (`image` each) and its text, then `generation` when a generation prompt is asked for.

    `bos` opens the chat; `default_system` is the system turn written when the chat has none; `images_first`
    puts a user turn's images before its text whatever their order; `trim` strips the text;
    `first_user_prefix` (Gemma 3) writes a system turn's text at the start of the first user turn.
    """
    def literal(text: str) -> str:
        return json.dumps(text)

    parts = [f"{{{{ {literal(bos)} }}}}"] if bos else []
    table = "{" + ", ".join(f"{literal(role)}: [{literal(o)}, {literal(c)}]" for role, (o, c) in roles.items()) + "}"
    parts.append(f"{{% set roles = {table} %}}")
    text_of = "{{ item['text'] | trim }}" if trim else "{{ item['text'] }}"
    string_of = "{{ message['content'] | trim }}" if trim else "{{ message['content'] }}"
    if first_user_prefix:
        parts.append("{% if messages[0]['role'] == 'system' %}"
                     "{% set prefix = (messages[0]['content'] if messages[0]['content'] is string "
                     "else messages[0]['content'][0]['text']) + '\\n\\n' %}{% set chat = messages[1:] %}"
                     "{% else %}{% set prefix = '' %}{% set chat = messages %}{% endif %}")
    else:
        parts.append("{% set prefix = '' %}{% set chat = messages %}")
        if default_system is not None:
            open_, close = roles["system"]
            parts.append(f"{{% if messages[0]['role'] != 'system' %}}{{{{ {literal(open_ + default_system + close)} }}}}"
                         "{% endif %}")
    image_of = f"{{{{ {literal(image)} }}}}"
    if images_first:
        content = (f"{{% for item in message['content'] if item['type'] == 'image' %}}{image_of}{{% endfor %}}"
                   f"{{% for item in message['content'] if item['type'] == 'text' %}}{text_of}{{% endfor %}}")
    else:
        content = (f"{{% for item in message['content'] %}}{{% if item['type'] == 'image' %}}{image_of}"
                   f"{{% elif item['type'] == 'text' %}}{text_of}{{% endif %}}{{% endfor %}}")
    parts.append("{% for message in chat %}{{ roles[message['role']][0] }}{{ prefix if loop.first else '' }}"
                 f"{{% if message['content'] is string %}}{string_of}{{% else %}}{content}{{% endif %}}"
                 "{{ roles[message['role']][1] }}{% endfor %}")
    parts.append(f"{{% if add_generation_prompt %}}{{{{ {literal(generation)} }}}}{{% endif %}}")
    return "".join(parts)


def chatml(image: str, *, default_system: str | None = None, bos: str = "", think: str = "") -> str:
    """Qwen's ChatML turns (`<|im_start|>user\\n…<|im_end|>\\n`), `think` after the assistant's opening."""
    roles = {role: (f"<|im_start|>{role}\n", "<|im_end|>\n") for role in ("system", "user", "assistant")}
    return chat_template(roles, image=image, generation="<|im_start|>assistant\n" + think, bos=bos,
                         default_system=default_system)


def llama3(image: str, *, bos: str = "<|begin_of_text|>", trim: bool = True) -> str:
    """Llama 3's header turns: `<|start_header_id|>user<|end_header_id|>\\n\\n…<|eot_id|>`."""
    roles = {role: (f"<|start_header_id|>{role}<|end_header_id|>\n\n", "<|eot_id|>")
             for role in ("system", "user", "assistant")}
    return chat_template(roles, image=image, generation="<|start_header_id|>assistant<|end_header_id|>\n\n",
                         bos=bos, trim=trim)


def qwen_vl(config_class: str, model_class: str, processor_class: str, template: str,
            *, patch: int, vision: dict[str, Any], text: dict[str, Any],
            image_processor_class: str = "Qwen2VLImageProcessor", merge: int = 2, tokens: tuple[str, ...] = (),
            config: dict[str, Any] | None = None, processor: dict[str, Any] | None = None,
            eos: str = "<|im_end|>") -> tuple[Any, Any]:
    """A Qwen-VL-shaped family: the ChatML tokenizer (with `tokens` besides Qwen's), a Qwen2-VL image processor
    of `patch`-pixel patches merged `merge` x `merge`, the processor without its video part, and the family's
    config (with `config`'s entries) and model classes by name."""
    import transformers

    from pytest_mllm.models.hf_inputs import image_only

    made = tiny_tokenizer(QWEN_TOKENS + list(tokens), bos=None, eos=eos, pad="<|endoftext|>")
    side = patch * merge  # one merged token covers merge x merge patches
    image_processor = getattr(transformers, image_processor_class)(
        patch_size=patch, merge_size=merge, temporal_patch_size=2,
        size={"shortest_edge": side * side, "longest_edge": 4 * side * side})
    built = image_only(getattr(transformers, processor_class))(
        image_processor=image_processor, tokenizer=made, chat_template=template, **(processor or {}))
    image, video, start, end, stop, endoftext = token_ids(made, "<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
                                                          "<|vision_end|>", eos, "<|endoftext|>")
    settings = getattr(transformers, config_class)(
        vision_config={"patch_size": patch, "spatial_merge_size": merge, "temporal_patch_size": 2, **vision},
        text_config={**text_config(vocab_size=len(made), bos_token_id=endoftext, eos_token_id=stop,
                                   pad_token_id=endoftext), **text},
        image_token_id=image, video_token_id=video, vision_start_token_id=start, vision_end_token_id=end,
        **(config or {}))
    model = getattr(transformers, model_class)(settings)
    return greedy(model, made, [stop, endoftext]), built


_WIDTHS = {"hidden_size", "embed_dim", "d_model", "n_embd", "width", "out_hidden_size", "adapter_in_dim",
           "adapter_out_dim", "projector_hidden_size", "projection_dim", "ple_embed_dim", "hidden_dim",
           "output_channels", "proj_dim"}
_INTERMEDIATES = {"intermediate_size", "moe_intermediate_size", "shared_expert_intermediate_size", "ffn_dim",
                  "encoder_ffn_dim", "decoder_ffn_dim", "d_ff", "n_inner", "mlp_dim", "alignment_intermediate_size",
                  "vision_intermediate_size", "projector_intermediate_size", "projection_intermediate_size"}
_DEPTHS = {"num_hidden_layers", "depth", "num_layers", "n_layer", "encoder_layers", "decoder_layers",
           "num_decoder_layers"}
_HEADS = {"num_attention_heads", "num_heads", "n_head", "attention_heads", "encoder_attention_heads",
          "decoder_attention_heads", "linear_num_value_heads"}
_SMALL = {"num_key_value_heads": 2, "head_dim": 8, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8, "v_head_dim": 8,
          "qk_head_dim": 16, "kv_lora_rank": 16, "q_lora_rank": 16, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
          "linear_num_key_heads": 2, "num_experts": 4, "n_routed_experts": 4, "num_local_experts": 4,
          "num_experts_per_tok": 2, "n_group": 1, "topk_group": 1, "n_shared_experts": 1, "first_k_dense_replace": 1,
          "max_position_embeddings": 2048, "initializer_range": 0.2, "kv_channels": 8, "linear_head_dim": 8,
          "linear_num_heads": 4, "moe_num_experts": 4, "moe_k": 2, "moe_topk": 2, "moe_num_shared_experts": 1,
          "index_head_dim": 8, "index_n_heads": 2}
_LAYER_LISTS = ("layer_types", "mlp_layer_types", "indexer_types")


def shrunk(settings: dict[str, Any], *, width: int = WIDTH, layers: int = 2) -> dict[str, Any]:
    """A config's dictionary (`to_dict()`) made tiny by name: widths `width`, feed-forwards twice that, `layers`
    layers (a layer-type list keeps one layer of each type), 4 heads of 8, 4 experts of which 2 are used;
    sub-configs likewise. What a family needs beyond this, it sets itself afterwards."""
    out: dict[str, Any] = {}
    types = next((settings[k] for k in _LAYER_LISTS if isinstance(settings.get(k), list) and settings[k]), None)
    keep = _one_of_each(types, layers) if types else list(range(layers))
    for key, value in settings.items():
        if key == "per_layer_config":  # by layer index: the config derives it again from the fewer layers
            continue
        if isinstance(value, dict) and ("model_type" in value or key.endswith("_config")):
            out[key] = shrunk(value, width=width, layers=layers)
        elif isinstance(value, bool) or value is None:
            out[key] = value
        elif key in _WIDTHS and isinstance(value, int):
            out[key] = width
        elif key in _INTERMEDIATES and isinstance(value, int):
            out[key] = 2 * width
        elif key in _DEPTHS and isinstance(value, int):
            out[key] = len(keep)
        elif key in _HEADS and isinstance(value, int):
            out[key] = 4
        elif key in _SMALL and isinstance(value, (int, float)):
            out[key] = _SMALL[key]
        elif key in _LAYER_LISTS and isinstance(value, list) and value:
            out[key] = [value[i] for i in keep if i < len(value)]
        elif key == "rope_parameters" and isinstance(value, dict) and "mrope_section" in value:
            out[key] = {**value, "mrope_section": [1, 1, 2]}
        else:
            out[key] = value
    return out


def _one_of_each(types: list[Any], layers: int) -> list[int]:
    """Indices of at most max(`layers`, distinct types) layers with every type of `types` among them."""
    first: dict[str, int] = {}
    for i, kind in enumerate(types):
        first.setdefault(str(kind), i)
    chosen = sorted(first.values())
    extra = [i for i in range(len(types)) if i not in chosen][: max(0, layers - len(chosen))]
    return sorted(chosen + extra)


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`base` with `changes` written over it, nested dictionaries merged key by key."""
    out = dict(base)
    for key, value in changes.items():
        out[key] = merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def tiny_config(config_class: Any, changes: dict[str, Any], **shrink: Any) -> Any:
    """`config_class`'s defaults made tiny (`shrunk`), then `changes` written over them; twice, so that sub-configs
    the defaults leave out and `changes` bring in (Gemma 4's vision tower) are made tiny too."""
    settings: dict[str, Any] = config_class().to_dict()
    for _ in range(2):
        settings = shrunk(settings, **shrink)
        for key in ("transformers_version", "architectures", "_name_or_path", "id2label", "label2id", "dtype"):
            settings.pop(key, None)
        config = config_class(**merged(settings, changes))
        settings = config.to_dict()
    return config


def qwen_image_processor(class_name: str = "Qwen2VLImageProcessor", *, patch: int = 16, merge: int = 2,
                         temporal: int = 2, **settings: Any) -> Any:
    """A Qwen2-VL-style image processor whose images are 1 to 4 merged tokens of `merge` x `merge` patches."""
    import transformers

    side = patch * merge
    return getattr(transformers, class_name)(patch_size=patch, merge_size=merge, temporal_patch_size=temporal,
                                             size={"shortest_edge": side * side, "longest_edge": 4 * side * side},
                                             **settings)


def assemble(model_class: str, config: Any, made: Any, processor: Any, eos: list[str]) -> tuple[Any, Any]:
    """The family's model of `config` (class named `model_class`), greedy, stopping at `eos`, with its processor."""
    import transformers

    model = getattr(transformers, model_class)(config)
    return greedy(model, made, token_ids(made, *eos)), processor


def processor_of(class_name: str, **parts: Any) -> Any:
    """The family's processor (named `class_name`) without its video part, built from `parts`."""
    import transformers

    from pytest_mllm.models.hf_inputs import image_only

    return image_only(getattr(transformers, class_name))(**parts)
