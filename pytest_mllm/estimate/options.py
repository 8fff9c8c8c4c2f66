"""`--mllm-estimate` and its companions: declared for pytest, read and checked into `EstimateSettings`.

Imports nothing but the standard library at module level: the plugin declares these options in every run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_mllm.estimate.plan import EstimateSettings


class EstimateOptionError(ValueError):
    """An --mllm-estimate option that cannot be used; the message names the option and the fix."""


def declare(group: Any) -> None:
    """Add the options to pytest's option group (anything with `addoption`)."""
    group.addoption("--mllm-estimate", metavar="SIZE",
                    help="run a subset of each benchmark and estimate its full scores with 95 %% intervals: a fraction "
                         "(20%% or 0.2) or a number of samples per benchmark (100); the subset is drawn stratified by "
                         "the difficulty the --mllm-estimate-panel runs show")
    group.addoption("--mllm-estimate-panel", action="append", metavar="FILE",
                    help="earlier runs' --mllm-json results files (or a pytest-mllm-curate manifest.json) grading each "
                         "sample's difficulty; repeat or comma-separate")
    group.addoption("--mllm-estimate-method", default="stratified", choices=("stratified", "random"),
                    help="how the subset is drawn: stratified by difficulty (default) or a plain random subset")
    group.addoption("--mllm-estimate-seed", type=int, default=0, metavar="N",
                    help="seed of the subset's draw (default 0; the same seed and panel draw the same subset)")


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
