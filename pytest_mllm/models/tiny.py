"""A tiny random-weight LLaVA, built offline and deterministically (~1 MB).

It answers nonsense, but it exercises the whole transformers path (processor, chat
template, image tokens, batched greedy generation) in seconds on a CPU, so the plugin
can be tested end to end without downloading anything.

Its recipe (`bpe_tokenizer`, `llava_processor`, `llava_config`, `untrained_llava`) also
builds the scripts' bigger and trained LLaVAs. Heavy imports (torch, transformers,
tokenizers) happen inside those functions, so this module imports without them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

TINY_LLAVA_VERSION = "1"  # bump when the recipe below changes

_MARKER = ".pytest-mllm-complete"
_SEED = 0
_IMAGE_SIZE = 32
_PATCH_SIZE = 8
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", "<image>"]
_BUILD_LOCK = threading.Lock()  # the build seeds torch's global RNG
_CORPUS = [
    "yes no Yes No YES NO yes. no. Yes. No.",
    "Is there a red circle in the image? Answer yes or no.",
    "Is there a blue square in the image? Answer yes or no.",
    "Is there a green triangle in the image? Answer with a single word.",
    "What color is the shape? red blue green yellow black white",
    "What shape is it? circle square triangle",
    "A. red B. blue C. green D. yellow",
    "Answer with the option's letter from the given choices directly. A B C D",
    "How many objects are there? 0 1 2 3 4 5 6 7 8 9 10",
    "The answer is A. The answer is B. The answer is C. The answer is D.",
    "USER: ASSISTANT: Question: Options: Hint: the image shows a picture of an object",
    "left right top bottom above below next to on in of the a an is are there what which",
]
# LLaVA-1.5 style: "USER: <image>\n<question> ASSISTANT:".
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}USER: {% else %}ASSISTANT: {% endif %}"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for item in message['content'] %}"
    "{% if item['type'] == 'image' %}<image>{{ '\\n' }}"
    "{% elif item['type'] == 'text' %}{{ item['text'] }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% if message['role'] != 'user' %}</s>{% endif %}{{ ' ' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def default_tiny_llava_dir() -> Path:
    """Where the tiny model lives by default.

    `$PYTEST_MLLM_CACHE_DIR/tiny-llava-v{VERSION}` if set, else
    `$XDG_CACHE_HOME/pytest-mllm/...` (default `~/.cache/pytest-mllm/...`).
    """
    name = f"tiny-llava-v{TINY_LLAVA_VERSION}"
    cache_dir = os.environ.get("PYTEST_MLLM_CACHE_DIR")
    if cache_dir:
        return Path(cache_dir).expanduser() / name
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "pytest-mllm" / name


def is_complete(folder: Path, version: str = TINY_LLAVA_VERSION) -> bool:
    """True when `folder` holds a finished build of the recipe `version`."""
    marker = folder / _MARKER
    return marker.is_file() and marker.read_text().strip() == version


def ensure_tiny_llava(dest: Path | None = None) -> Path:
    """Return a folder holding the tiny LLaVA, building it only if it is not complete."""
    return ensure_built(Path(dest) if dest is not None else default_tiny_llava_dir(), lambda f: _build(f),
                        TINY_LLAVA_VERSION)


def ensure_built(dest: Path, build: Callable[[Path], None], version: str) -> Path:
    """Return `dest` once it holds a complete build of `version`, running `build(folder)` only if not.

    Safe when several processes call it at once: each builds into a temporary folder
    next to `dest` and renames it into place; a loser of the race uses the winner's.
    """
    if is_complete(dest, version):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.tmp-", dir=dest.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the cache may be shared
        with _BUILD_LOCK:
            build(tmp)
        (tmp / _MARKER).write_text(version + "\n")
        _move_into_place(tmp, dest, version)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _move_into_place(tmp: Path, dest: Path, version: str) -> None:
    """Rename the finished build `tmp` to `dest`, unless another process got there first."""
    for _ in range(3):
        try:
            os.replace(tmp, dest)  # atomic; fails if dest is a non-empty folder
            return
        except OSError:
            if is_complete(dest, version):
                return  # another process won the race: use theirs
            # dest is a stale or partial folder (e.g. an older recipe): move it aside.
            stale = Path(tempfile.mkdtemp(prefix=f".{dest.name}.stale-", dir=dest.parent))
            try:
                os.replace(dest, stale / "old")
            except FileNotFoundError:
                pass  # someone else moved it meanwhile
            finally:
                shutil.rmtree(stale, ignore_errors=True)
    raise OSError(f"could not move the tiny model's build into {dest}")


def _build(folder: Path) -> None:
    """Write the tiny LLaVA's processor and weights to `folder`."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        model, processor = tiny_llava_parts()
    model.save_pretrained(folder)
    processor.save_pretrained(folder)


def tiny_llava_parts() -> tuple[Any, Any]:
    """The tiny LLaVA and its processor (seed torch first)."""
    tokenizer = bpe_tokenizer(_CORPUS)
    processor = llava_processor(tokenizer, image_size=_IMAGE_SIZE, patch_size=_PATCH_SIZE)
    config = llava_config(tokenizer, image_size=_IMAGE_SIZE, patch_size=_PATCH_SIZE,
                          vision={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                                  "num_attention_heads": 2},
                          text={"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                                "num_attention_heads": 4, "num_key_value_heads": 2})
    return untrained_llava(config, tokenizer).eval(), processor


# -- the recipe, shared with the scripts that build bigger or trained LLaVAs --------------------------

def tiny_corpus() -> list[str]:
    """The words the tiny tokenizers are trained on."""
    return list(_CORPUS)


def bpe_tokenizer(corpus: Sequence[str], vocab_size: int = 512, special_tokens: Sequence[str] = SPECIAL_TOKENS,
                  **named: Any) -> Any:
    """A byte-level BPE tokenizer trained on `corpus`, with the special tokens, left padding; `named`
    (bos_token, eos_token, pad_token, …) overrides LLaVA's <s>, </s>, <pad>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(special_tokens),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(corpus, trainer=trainer)
    names = {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", **named}
    return PreTrainedTokenizerFast(tokenizer_object=bpe, padding_side="left",
                                   **{k: v for k, v in names.items() if v is not None})


def llava_processor(tokenizer: Any, *, image_size: int, patch_size: int) -> Any:
    """A LlavaProcessor for square images of `image_size`, with the LLaVA-1.5 style chat template."""
    from transformers import CLIPImageProcessorPil, LlavaProcessor

    image_processor = CLIPImageProcessorPil(size={"shortest_edge": image_size},
                                            crop_size={"height": image_size, "width": image_size})
    return LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=patch_size,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=CHAT_TEMPLATE)


def llava_config(tokenizer: Any, *, image_size: int, patch_size: int, vision: Mapping[str, Any],
                 text: Mapping[str, Any], vision_feature_layer: int = -2) -> Any:
    """A LlavaConfig of a CLIP vision tower and a Llama text model of these sizes, for `tokenizer`'s
    special tokens; unless `vision` or `text` say otherwise, the projection is as wide as the tower,
    the vocabulary the tokenizer's, and 2048 positions."""
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in SPECIAL_TOKENS}
    return LlavaConfig(
        vision_config=CLIPVisionConfig(**{"image_size": image_size, "patch_size": patch_size,
                                          "projection_dim": vision["hidden_size"], **vision}),
        text_config=LlamaConfig(**{"vocab_size": len(tokenizer), "max_position_embeddings": 2048,
                                   "pad_token_id": ids["<pad>"], "bos_token_id": ids["<s>"],
                                   "eos_token_id": ids["</s>"], **text}),
        image_token_id=ids["<image>"],
        image_seq_length=(image_size // patch_size) ** 2,
        vision_feature_select_strategy="default",
        vision_feature_layer=vision_feature_layer,
    )


def untrained_llava(config: Any, tokenizer: Any) -> Any:
    """A LlavaForConditionalGeneration of `config` with fresh weights (seed torch first), greedy by default."""
    from transformers import LlavaForConditionalGeneration

    model = LlavaForConditionalGeneration(config)
    ids = {tok: tokenizer.convert_tokens_to_ids(tok) for tok in SPECIAL_TOKENS}
    generation = model.generation_config
    generation.pad_token_id = ids["<pad>"]
    generation.bos_token_id = ids["<s>"]
    generation.eos_token_id = ids["</s>"]
    generation.do_sample = False
    return model
