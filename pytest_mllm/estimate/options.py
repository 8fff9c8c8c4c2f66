"""`--mllm-estimate` and its companions (declared in the plugin): read and checked into `EstimateSettings`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_mllm.estimate.plan import EstimateSettings


class EstimateOptionError(ValueError):
    """An --mllm-estimate option that cannot be used; the message names the option and the fix."""


def read(option: Callable[[str], Any]) -> EstimateSettings | None:
    """The run's estimate settings from `option(name)` (pytest's `config.getoption`), or None without
    --mllm-estimate; EstimateOptionError for a bad size, a missing or unreadable panel."""
    size_text = option("mllm_estimate")
    panel_values = option("mllm_estimate_panel") or []
    if size_text is None:
        if panel_values:
            raise EstimateOptionError("--mllm-estimate-panel is given without --mllm-estimate=SIZE (20% or 100): "
                                      "name the subset's size, or leave the panel out for a full run")
        return None
    from pytest_mllm.estimate.design import DesignError, parse_size
    from pytest_mllm.estimate.panel import PanelError, read_panel
    from pytest_mllm.estimate.plan import EstimateSettings

    try:
        size = parse_size(str(size_text))
        paths = [Path(p.strip()).expanduser() for value in panel_values for p in value.split(",") if p.strip()]
        if not paths:
            raise EstimateOptionError("--mllm-estimate needs --mllm-estimate-panel=FILE: earlier runs' --mllm-json "
                                      "results files (their per-sample records grade each sample's difficulty)")
        panel = read_panel(paths)
    except (DesignError, PanelError) as exc:
        raise EstimateOptionError(str(exc)) from None
    return EstimateSettings(size, panel, method=option("mllm_estimate_method") or "stratified",
                            seed=int(option("mllm_estimate_seed") or 0))
