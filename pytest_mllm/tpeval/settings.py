"""TP-Eval's knobs, one frozen value per run, checked before any model is called.

The defaults are the paper's settings (N=16 rounds, 3 prompts a round, the top K=8 earlier
prompts in the meta-prompt, optimizer temperature 1.0, α=0.8 while optimizing, α*=0.6 when
re-ranking; §5.1). D_few is the paper's too: ``few=0`` takes the task's whole validation
split when it also has test samples (MMT-S: about 20 per task), half of dev+val when it has
no test samples (MMMU), and otherwise a seeded draw of 20 samples, at most half the task
(`tpeval.split`); ``few=N`` caps D_few at N samples (a draw takes N). ``max_words`` (no
command-line option) caps a proposed prompt's length: 0 means "4 × the original's words + 20".
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

MODES = ("auto", "prompt", "prefix")

OPTION = {
    "rounds": "--mllm-tp-rounds",
    "per_round": "--mllm-tp-per-round",
    "top_k": "--mllm-tp-top-k",
    "temperature": "--mllm-tp-temperature",
    "alpha": "--mllm-tp-alpha",
    "alpha_final": "--mllm-tp-alpha-final",
    "few": "--mllm-tp-few",
    "seed": "--mllm-tp-seed",
    "mode": "--mllm-tp-mode",
    "max_words": "TpSettings.max_words",
}


@dataclass(frozen=True)
class TpSettings:
    """How one prompt optimization runs; `validate()` says which option is wrong."""

    rounds: int = 16
    per_round: int = 3
    top_k: int = 8
    temperature: float = 1.0
    alpha: float = 0.8
    alpha_final: float = 0.6
    few: int = 0  # 0: the paper's D_few (see the module); N: at most N samples
    seed: int = 0
    mode: str = "auto"  # auto | prompt | prefix
    max_words: int = 0  # a proposal's word limit; 0: 4 × the original's words + 20

    def validate(self) -> TpSettings:
        """Raise ValueError naming the option of the first bad value; return self when all are fine."""
        for name, low in (("rounds", 1), ("per_round", 1), ("top_k", 1), ("few", 0), ("max_words", 0)):
            value = getattr(self, name)
            if not _is_int(value) or value < low:
                raise ValueError(f"{OPTION[name]} must be an integer >= {low}; got {value!r}")
        if not _is_int(self.seed):
            raise ValueError(f"{OPTION['seed']} must be an integer; got {self.seed!r}")
        if not _is_number(self.temperature) or not 0.0 <= self.temperature <= 2.0:
            raise ValueError(f"{OPTION['temperature']} must be a number from 0 to 2; got {self.temperature!r}")
        for name in ("alpha", "alpha_final"):
            value = getattr(self, name)
            if not _is_number(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{OPTION[name]} must be a number from 0 to 1; got {value!r}")
        if self.mode not in MODES:
            raise ValueError(f"{OPTION['mode']} must be one of {', '.join(MODES)}; got {self.mode!r}")
        return self

    def word_limit(self, original: str) -> int:
        """The most words a proposed prompt may have (see `max_words`)."""
        return self.max_words or 4 * len(original.split()) + 20

    def as_dict(self) -> dict[str, Any]:
        """Plain values, as written to a prompts file's `settings`."""
        return asdict(self)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
