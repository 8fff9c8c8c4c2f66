"""The estimate's part of a benchmark's results: what was drawn, from which panel, and every estimated value
with its interval beside the subset's own (measured) value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_mllm.estimate.design import RANDOM
from pytest_mllm.estimate.parts import DRAW
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import LEVEL, MetricSetup

LABEL = "estimate"
METHOD_TEXT = {"stratified": "stratified by difficulty", RANDOM: "plain random subset"}
ASSUMPTION = ("the units were drawn at random within their strata (the panel only sets the strata), so the "
              "interval holds whatever the model under test; an unlike panel makes it wider, not wrong")


def estimate_part(records: Sequence[Record], setup: MetricSetup, level: float = LEVEL) -> dict[str, Any] | None:
    """The part of a subset run's benchmark (None for a full run: no record carries a draw); the estimator is
    imported only for a subset run."""
    import numpy as np

    from pytest_mllm.estimate.estimator import EstimateError, Subset, count_path, estimates

    drawn = [r for r in records if DRAW.get(r) is not None]
    if not drawn:
        return None
    subset = Subset.of(drawn)
    info = subset.info
    part: dict[str, Any] = {
        "label": LABEL, "method": info["method"], "method_text": METHOD_TEXT.get(info["method"], info["method"]),
        "size": info["size"], "seed": info["seed"], "panel": info["panel"], "level": level,
        "samples_run": len(drawn), "samples": info["samples"], "units_run": len(subset.units), "units": info["units"],
        "strata": len(subset.population), "headline": setup.headline, "values": {}, "notes": [],
        "assumption": ASSUMPTION,
    }
    undrawn = len(records) - len(drawn)
    if undrawn:
        part["notes"].append(f"{undrawn} records carry no draw and are left out")
    expected = {stratum: DRAW.get(unit[0])["stratum_draws"]  # type: ignore[index]
                for unit, stratum in zip(subset.units, subset.strata)}
    short = sorted(s for s, m in subset.run.items() if m < expected[s])
    missing = info["strata"] - len(subset.population)
    if missing > 0:
        part["notes"].append(f"{missing} of the design's {info['strata']} strata ran no unit (deselected with -k or "
                             "-m?): the estimates stand for the strata that ran")
    if short:
        part["notes"].append(f"{len(short)} strata ran fewer units than drawn (deselected or crashed): their units "
                             "stand for the missing ones")
    if subset.lone_units:
        part["notes"].append(f"{subset.lone_units} units run alone in their variance group: their variance is not "
                             "in the interval")
    counts = count_path(subset.layers(), setup)
    if counts is None:
        part["notes"].append("no estimate: the benchmark's metrics are not ratios of counts over whole units")
        return part
    measured = setup.flat([r for unit in subset.units for r in unit])
    once = counts.flat(np.ones((1, counts.units)))
    agree = [k for k, column in once.items() if k in measured and isinstance(measured[k], (int, float))
             and not np.isnan(column[0]) and abs(float(column[0]) - float(measured[k])) <= 1e-9]
    try:
        found = estimates(counts, subset.strata, subset.population, keys=agree, level=level)
    except EstimateError as exc:
        part["notes"].append(f"no estimate: {exc}")
        return part
    part["values"] = {key: {**e.json(), "measured": measured[key]} for key, e in found.items()}
    tasks = list(dict.fromkeys(subset.tasks))
    part["scopes"] = [*(g for g, members in setup.groups.items() if set(members) & set(tasks)), *tasks]
    if setup.headline not in found:
        part["notes"].append(f"the headline {setup.headline!r} is not a ratio of counts: not estimated here")
    return part


def shown_keys(part: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, key) of the values tables show: the headline and accuracy overall, each group's and task's
    headline (in the benchmark's order)."""
    values, headline = part["values"], part["headline"]
    rows = [("overall", key) for key in dict.fromkeys((headline, "accuracy")) if key in values]
    names = part.get("scopes") or sorted({k.split(".")[0] for k in values if "." in k})
    rows += [(name, f"{name}.{headline}") for name in names if f"{name}.{headline}" in values]
    return rows
