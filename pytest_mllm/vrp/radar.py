"""VRPTEST's radar chart: accuracy on each axis (Base, colours, text positions, fonts, pointer shapes)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from pytest_mllm.vrp.metrics import VRP_AXES


def radar_figure(vrp_by_benchmark: Mapping[str, Mapping[str, Any]]) -> Any:
    """One polygon per benchmark over the paper's nine axes, as a matplotlib Figure (no pyplot state)."""
    from matplotlib.figure import Figure

    axes_names = list(VRP_AXES)
    angles = [2 * math.pi * i / len(axes_names) for i in range(len(axes_names))]
    figure = Figure(figsize=(5.5, 5.5))
    ax = figure.add_subplot(polar=True)
    for name, vrp in vrp_by_benchmark.items():
        axes = vrp.get("axes", {})
        values = [100 * axes[a]["accuracy"] if a in axes else 0.0 for a in axes_names]
        ax.plot([*angles, angles[0]], [*values, values[0]], label=name)
        ax.fill([*angles, angles[0]], [*values, values[0]], alpha=0.15)
    ax.set_xticks(angles)
    ax.set_xticklabels(axes_names)
    ax.set_ylim(0, 100)
    ax.set_title("accuracy % per visual-referring-prompt option")
    ax.legend(loc="lower right", fontsize="small")
    return figure


def write_radar(vrp_by_benchmark: Mapping[str, Mapping[str, Any]], path: Path) -> Path:
    """The radar chart as a file: PNG or SVG by the file's suffix."""
    import io

    from pytest_mllm.engine.output_paths import write_atomically

    buffer = io.BytesIO()
    radar_figure(vrp_by_benchmark).savefig(buffer, format=path.suffix.lstrip(".").lower() or "png",
                                           bbox_inches="tight",
                                           metadata={"Date": None} if path.suffix == ".svg" else None)
    write_atomically(path, buffer.getvalue(), what="the radar chart")
    return path


def radar_svg(vrp_by_benchmark: Mapping[str, Mapping[str, Any]]) -> str:
    """The radar chart as inline SVG markup (text as SVG text, escaped by matplotlib)."""
    import io

    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "pytest-mllm", "text.parse_math": False}):
        radar_figure(vrp_by_benchmark).savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    return svg[svg.index("<svg"):]
