"""TP-Eval's settings for a run, read from its options before anything runs: customized prompts to evaluate
with (--mllm-prompts, --mllm-prompts-transfer) or prompts to customize (--mllm-optimize, --mllm-optimizer*,
--mllm-tp-*). ValueError names the option or file and the fix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.engine.spec import MAX_NEW_TOKENS
from pytest_mllm.sections import OptionRange, check_ranges
from pytest_mllm.tpeval.settings import TpSettings

if TYPE_CHECKING:
    from pytest_mllm.tpeval.prompts_file import PromptsFile
    from pytest_mllm.tpeval.run import OptimizationSettings


@dataclass(frozen=True)
class TpEvalSettings:
    """A run's TP-Eval settings: customized prompts to evaluate with (--mllm-prompts), or prompts to customize
    (--mllm-optimize); and, per process, each benchmark's spec once checked against the prompts file."""

    prompts_path: Path | None = None
    transfer: bool = False  # --mllm-prompts-transfer: a file optimized for another model is accepted
    optimize: OptimizationSettings | None = None
    prompted: dict[str, Any] = field(default_factory=dict, compare=False)  # benchmark → its spec, customized

    @cached_property
    def prompts(self) -> PromptsFile | None:
        """The --mllm-prompts file, read and checked when the evaluation starts (`PromptsFileError`, a
        `record.MessageOnly`, names the file and the fix)."""
        if self.prompts_path is None:
            return None
        from pytest_mllm.tpeval.prompts_file import read_prompts

        return read_prompts(self.prompts_path)

    @cached_property
    def few_ids(self) -> dict[str, frozenset[str]]:
        """task → the ids of the samples its customized prompt was optimized on (D_few)."""
        return {task: frozenset(p.d_few) for task, p in self.prompts.tasks.items()} if self.prompts else {}

    def describe(self) -> dict[str, Any]:
        return {"prompts": str(self.prompts_path) if self.prompts_path else None,
                "prompts_model": self.prompts.model if self.prompts is not None else None}

    def inputs(self) -> dict[str, Path | None]:
        return {"the --mllm-prompts file": self.prompts_path}


def read_settings(option: Callable[[str], Any]) -> TpEvalSettings:
    """The run's settings from its options (`option("mllm_…")`); the search's are checked whether or not it
    optimizes. The prompts file is read when the evaluation starts (`TpEvalSettings.prompts`), after the outputs are
    checked against it."""
    check_ranges(option, (OptionRange("mllm_optimizer_max_tokens", 1, MAX_NEW_TOKENS, "at least 1"),))
    search = TpSettings(
        rounds=option("mllm_tp_rounds"), per_round=option("mllm_tp_per_round"), top_k=option("mllm_tp_top_k"),
        temperature=option("mllm_tp_temperature"), alpha=option("mllm_tp_alpha"),
        alpha_final=option("mllm_tp_alpha_final"), few=option("mllm_tp_few"), seed=option("mllm_tp_seed"),
        mode=option("mllm_tp_mode")).validate()
    path = Path(option("mllm_prompts")).expanduser() if option("mllm_prompts") else None
    optimize = _optimization(option, search) if option("mllm_optimize") else None
    return TpEvalSettings(path, bool(option("mllm_prompts_transfer")), optimize)


def _optimization(option: Callable[[str], Any], search: TpSettings) -> OptimizationSettings:
    """--mllm-optimize's settings: the optimizer LLM and its endpoint, the search; ValueError names the option."""
    from pytest_mllm.engine.endpoint import endpoint_from_options
    from pytest_mllm.models.ref import ModelRef
    from pytest_mllm.tpeval.run import OptimizationSettings

    if option("mllm_prompts"):
        raise ValueError("--mllm-optimize and --mllm-prompts do not go together: optimize first, then "
                         "evaluate with --mllm-prompts=FILE in another run")
    if not ModelRef.parse(option("mllm_optimizer") or "").served:
        raise ValueError("--mllm-optimize needs an optimizer LLM: pass --mllm-optimizer=openai:MODEL "
                         "(and --mllm-optimizer-base-url=URL for a local server)")
    return OptimizationSettings(
        path=Path(option("mllm_optimize")).expanduser(), optimizer=option("mllm_optimizer"),
        endpoint=endpoint_from_options(option, "mllm_optimizer_base_url", "mllm_optimizer_api_key_env"),
        search=search, max_tokens=option("mllm_optimizer_max_tokens"), split=option("mllm_tp_split"),
        zero_shot=option("mllm_tp_zero_shot"))

