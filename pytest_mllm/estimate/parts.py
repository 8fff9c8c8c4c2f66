"""The estimate's data in a record of a subset run: how its unit was drawn (record key "estimate")."""

from __future__ import annotations

from typing import TypedDict

from pytest_mllm.record import RecordPart


class DrawInfo(TypedDict):
    """How a record's unit came into the subset, and what the subset stands for."""

    method: str  # "stratified" (by difficulty) or "random"
    size: str  # as asked: "20%", "0.2", "100"
    seed: int
    panel: str  # the panel's digest, "sha256:…"
    stratum: str
    stratum_units: int  # the units of the benchmark in this stratum
    stratum_draws: int  # the units drawn from it
    strata: int  # the design's strata
    units: int  # the benchmark's units
    samples: int  # the benchmark's samples


DRAW: RecordPart[DrawInfo] = RecordPart("estimate", from_metadata="estimate", of_the_run=True)
