"""How each model family is prompted: its conventions as data, keyed by the `model_type` of the
checkpoint's config.json. `models/hf_inputs.py` applies them; nothing else branches on a family.

Defaults follow each family's documented transformers usage (its model card and the
transformers docs): the checkpoint's own chat template, its own system turn (none added here),
its own image budget (the processor settings saved with the checkpoint), images before the
question in one user turn. A family without a chat template (PaliGemma) is prompted with a task
prefix instead. Settings a user passes to the processor (e.g. Qwen's `max_pixels`) override the
saved ones; see README.md, "Your model".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Conventions:
    """How a family's prompt and images are put together."""

    chat_template: bool = True  # rendered with the processor's chat template; else prefix + prompt
    prompt_prefix: str = ""  # before the prompt when there is no chat template
    system_prompt: str | None = None  # a system turn of our own (None: the template's default, if any)
    images_before_text: bool = True  # where the images go in the user turn
    processor_kwargs: dict[str, Any] = field(default_factory=dict)  # over the checkpoint's saved settings
    source: str = "the checkpoint's chat template (transformers' documented usage)"

    def fingerprint(self) -> str:
        """A short hash of everything here that changes answers."""
        settings = {k: v for k, v in asdict(self).items() if k != "source"}
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


DEFAULT = Conventions()

FAMILIES: dict[str, Conventions] = {
    # google/paligemma-3b-mix-224 has no chat template: its model card prompts the mix checkpoints with a
    # task prefix ("caption en", "answer en <question>"); the processor adds the image tokens and BOS.
    "paligemma": Conventions(chat_template=False, prompt_prefix="answer en ",
                             source="google/paligemma-3b-mix-224's model card: the `answer en ` task prefix"),
    # Qwen2-VL, Qwen2.5-VL, Qwen3-VL: the image budget is the checkpoint's preprocessor_config.json
    # (min_pixels 3136 = 4 x 28 x 28, max_pixels 12845056 = 16384 x 28 x 28 for Qwen2/2.5-VL), which is what
    # the model cards' `AutoProcessor.from_pretrained(...)` uses; lmms-eval and VLMEvalKit set their own.
    "qwen2_vl": Conventions(source="Qwen/Qwen2-VL-7B-Instruct's chat template (a default system turn) and "
                                   "preprocessor_config.json image budget"),
    "qwen2_5_vl": Conventions(source="Qwen/Qwen2.5-VL-7B-Instruct's chat template (a default system turn) and "
                                     "preprocessor_config.json image budget"),
    "qwen3_vl": Conventions(source="Qwen/Qwen3-VL's chat template and preprocessor_config.json image budget"),
}


def conventions_for(model_type: str | None) -> Conventions:
    """The conventions of a `model_type` (the default for families not listed)."""
    return FAMILIES.get(model_type or "", DEFAULT)


def folder_model_type(folder: Path) -> str | None:
    """The `model_type` of a model folder's config.json (None when it has none)."""
    try:
        value = json.loads((folder / "config.json").read_text()).get("model_type")
    except (OSError, ValueError):
        return None
    return value if isinstance(value, str) else None
