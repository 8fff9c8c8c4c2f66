"""VRPTEST's radar chart: accuracy on each axis (Base, colours, text positions, fonts, pointer shapes)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

from ..metrics import VRP_AXES


def write_radar(vrp_by_benchmark: Mapping[str, Mapping[str, Any]], path: Path) -> Path:
    """One polygon per benchmark over the paper's nine axes; PNG or SVG by the file's suffix."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_names = list(VRP_AXES)
    angles = [2 * math.pi * i / len(axes_names) for i in range(len(axes_names))]
    figure = plt.figure(figsize=(5.5, 5.5))
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
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, bbox_inches="tight", metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(figure)
    return path
