"""One benchmark run over an official fixture folder, answered by its recorded responses (replay), in
process: what the `test_official_*` modules compare with their reference's numbers."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

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


def assert_one_run_exits_0(pytester: pytest.Pytester, benches: list[str], data: dict[str, Path], answers: Path,
                           rows: int) -> None:
    """One pytest-mllm run over `benches` (bundled names or spec files) on `data` ({name: folder}), every row
    answered from `answers` (replay JSON Lines keyed "<benchmark>::<sample id>"): exit 0, no ERROR, each of
    the `rows` rows a test that passed or was answered wrong."""
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--mllm-bench={','.join(benches)}",
        *(f"--mllm-data={name}={folder}" for name, folder in data.items()), f"--mllm=replay:{answers}",
        "--mllm-cache=off")
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.OK, result.outlines[-30:]
    assert "error" not in outcomes and "errors" not in outcomes
    assert outcomes.get("passed", 0) + outcomes.get("incorrect", 0) == rows
