"""One benchmark run over an official fixture folder, answered by its recorded responses (replay), in
process: what the `test_official_*` modules compare with their reference's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation, EvaluationSettings
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult, compute_results
from pytest_mllm.sample import BadSample, Sample


class ReplayRun(NamedTuple):
    samples: list[Sample | BadSample]  # as the loader gave them
    records: list[Record]  # the samples' records, then one per unreadable row
    result: BenchmarkResult


def replay_run(spec_name: str, folder: Path, answers: Path | None = None, spec_path: Path | None = None) -> ReplayRun:
    """Spec `spec_name` (or the file `spec_path`) over `folder`, answered from `answers` (default
    `folder/responses.jsonl`), no cache; every sample scored, every unreadable row an error record."""
    evaluation = Evaluation(EvaluationSettings(model=f"replay:{answers or folder / 'responses.jsonl'}",
                                               cache_mode="off", data={"": str(folder)}))
    spec = evaluation.spec(spec_path or find_spec(spec_name))
    samples = evaluation.samples_for(spec)
    records = evaluation.answer([(s, spec) for s in samples if isinstance(s, Sample)])
    records += [Evaluation.unreadable(s, spec) for s in samples if not isinstance(s, Sample)]
    for order, record in enumerate(records):
        record["order"] = order
    return ReplayRun(samples, records, compute_results({spec.name: spec}, records)[spec.name])
