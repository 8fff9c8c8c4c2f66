"""A subset run's plan: which of a benchmark's samples it asks, each marked with how its unit was drawn.

Every process of a run (xdist workers, the controller) reads the same panel and draws under the same seed,
so each keeps the same samples, whatever it loads first. The marks (`parts.DRAW`) ride on the samples'
metadata into their records, from which the estimate is computed at the end (`section`), by a merge of
shards, or by anyone reading the results file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_mllm.engine.evaluator import sample_record
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.estimate.design import STRATIFIED, Size, Unit, draw, strata
from pytest_mllm.estimate.panel import Panel, PanelError
from pytest_mllm.estimate.parts import DRAW, DrawInfo
from pytest_mllm.record import new_record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.uncertainty import unit_of


@dataclass(frozen=True)
class EstimateSettings:
    """`--mllm-estimate`: the size of each benchmark's subset, the panel grading difficulty, the method, the seed."""

    size: Size
    panel: Panel
    method: str = STRATIFIED
    seed: int = 0

    def describe(self) -> dict[str, Any]:
        """For the results file's settings: what makes these estimates (and says the run is not a full one)."""
        return {"label": "estimate", "method": self.method, "size": self.size.text, "seed": self.seed,
                "panel": self.panel.digest, "panel_files": [str(p) for p in self.panel.files],
                "panel_members": {name: len(b.members) for name, b in self.panel.benchmarks.items()}}


def subset(settings: EstimateSettings, spec: BenchmarkSpec, samples: Sequence[Any]) -> list[Any]:
    """The samples a subset run of this benchmark asks, in their order, each with its draw in its metadata;
    PanelError when the panel does not know the benchmark or shares none of its samples."""
    keys = [_unit_key(sample, spec) for sample in samples]
    ids: dict[str, list[str]] = {}
    tasks: dict[str, str] = {}
    for sample, key in zip(samples, keys):
        ids.setdefault(key, []).append(sample.id)
        tasks.setdefault(key, sample.task)
    drawn = draws(settings, spec.name, [Unit(key, tasks[key], len(members)) for key, members in ids.items()], ids)
    kept = []
    for sample, key in zip(samples, keys):
        info = drawn.get(key)
        if info is None:
            continue
        if isinstance(sample, Sample):
            sample = dataclasses.replace(sample, metadata={**sample.metadata, DRAW.key: info})
        kept.append(sample)
    return kept


def draws(settings: EstimateSettings, benchmark: str, units: Sequence[Unit], ids: Mapping[str, Sequence[str]],
          leave_out: str | None = None) -> dict[str, DrawInfo]:
    """{unit key: its draw} of the units a subset run of `benchmark` asks (`units` in benchmark order, `ids`
    each unit's sample ids); `leave_out`: a panel member not to grade difficulty with (the calibration's
    held-out model)."""
    difficulty = settings.panel.benchmark(benchmark).difficulty(ids, leave_out=leave_out)
    samples = sum(u.size for u in units)
    if not difficulty:
        raise PanelError(f"the estimate panel's records of {benchmark!r} share no sample id with the benchmark "
                         f"({samples} samples): was the panel run on another version of it? Give results files of "
                         "runs on this one")
    found = strata(units, difficulty, settings.size.units(len(units), samples), settings.method)
    return {key: DrawInfo(method=settings.method, size=settings.size.text, seed=settings.seed,
                          panel=settings.panel.digest, stratum=unit.stratum, stratum_units=unit.stratum_units,
                          stratum_draws=unit.stratum_draws, strata=len(found), units=len(units), samples=samples)
            for key, unit in draw(found, settings.seed).items()}


def _unit_key(sample: Any, spec: BenchmarkSpec) -> str:
    """The unit a sample belongs to, as its record will name it (`scoring.uncertainty.unit_of`)."""
    if isinstance(sample, Sample):
        return unit_of(sample_record(sample, spec, ""))
    return unit_of(new_record(id=sample.id, benchmark=spec.name, task=sample.task,
                              pair_group=getattr(sample, "pair_group", None)))
