"""The CEE judge's settings for a run (Tiny LVLM-eHub): the LLM at an OpenAI-compatible endpoint that grades
open answers and reads the multiple-choice answers the rules cannot, read from `--mllm-judge*` and checked
before anything runs (`JudgeSection.read_options`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_mllm.engine.endpoint import Endpoint, endpoint_from_options
from pytest_mllm.engine.spec import MAX_NEW_TOKENS
from pytest_mllm.judge.prompts import Prompt
from pytest_mllm.judge.verdicts import Mode
from pytest_mllm.models.ref import ModelRef
from pytest_mllm.sections import OptionRange, check_ranges

# option, lowest value, highest value, what it must be
_RANGES = (OptionRange("mllm_judge_max_tokens", 1, MAX_NEW_TOKENS, "at least 1"),
           OptionRange("mllm_judge_temperature", 0, 2, "0 or more"))


@dataclass(frozen=True)
class JudgeSettings:
    """The CEE judge for open answers: an LLM at an OpenAI-compatible endpoint."""

    model: str  # "openai:<name>" (or a judged file's "replay:FILE", which only the graded benchmarks read)
    endpoint: Endpoint
    mode: Mode = "strict"
    temperature: float = 0.0
    max_tokens: int = 512
    prompts: tuple[Prompt, ...] | None = None  # --mllm-judge-prompts, checked; None: the built-in five
    prompts_path: Path | None = None  # the file they were read from

    @cached_property
    def model_ref(self) -> ModelRef:
        return ModelRef.parse(self.model)

    def describe(self) -> dict[str, Any]:
        return {"judge": self.model, "judge_mode": self.mode}

    def inputs(self) -> dict[str, Path | None]:
        return {"the --mllm-judge-prompts file": self.prompts_path}


def read_settings(option: Callable[[str], Any]) -> JudgeSettings | None:
    """The judge's settings from `--mllm-judge*` (None without `--mllm-judge`); ValueError names the option and
    the fix."""
    check_ranges(option, _RANGES)
    if not option("mllm_judge"):
        if option("mllm_judge_prompts"):
            raise ValueError("--mllm-judge-prompts needs a judge: pass --mllm-judge=openai:MODEL too")
        return None
    endpoint = endpoint_from_options(option, "mllm_judge_base_url", "mllm_judge_api_key_env")
    path = Path(option("mllm_judge_prompts")).expanduser() if option("mllm_judge_prompts") else None
    return JudgeSettings(model=option("mllm_judge"), endpoint=endpoint, mode=option("mllm_judge_mode"),
                         temperature=option("mllm_judge_temperature"), max_tokens=option("mllm_judge_max_tokens") or 512,
                         prompts=_prompts(path), prompts_path=path)


def _prompts(path: Path | None) -> tuple[Prompt, ...] | None:
    """The prompts of --mllm-judge-prompts=FILE, checked before anything runs (None: the built-in five)."""
    if path is None:
        return None
    from pytest_mllm.judge.prompts import PromptsFileError, load_prompts

    try:
        return load_prompts(path)
    except PromptsFileError as exc:
        raise ValueError(f"--mllm-judge-prompts: {exc}") from None
