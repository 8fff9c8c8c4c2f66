"""The end of a run, free of pytest: the scores of the gathered records, the gates' verdicts, the model's
failed load and the output files (results JSON, HTML report, the sections' own files, the Markdown and job
summaries), in one call (`conclude`) whose answer the harness shows and writes (terminal summary, JUnit XML,
exit status)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mllm.engine.evaluator import load_failure_line
from pytest_mllm.engine.output_paths import OutputError, OutputWriteError
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.report.outputs import Outputs
from pytest_mllm.report.results import BenchmarkResult, baseline_pairing, results_document
from pytest_mllm.scoring.gates import GateSettings, Verdict
from pytest_mllm.shortfall import Shortfall


@dataclass(frozen=True)
class Conclusion:
    """What a run ends with (empty until it ends, and in an xdist worker)."""

    results: dict[str, BenchmarkResult] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    written: list[tuple[str, Path]] = field(default_factory=list)  # (what, where) of each file written
    failed_load: str | None = None  # the line to show once when the model could not be loaded
    write_failure: str | None = None  # the line to show when an output could not be written
    summary_warning: str | None = None  # why the job summary ($GITHUB_STEP_SUMMARY) is left out
    shortfalls: list[Shortfall] = field(default_factory=list)  # why the run is not a full run (no gate passes)

    @property
    def failed_gates(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict == "fail"]

    @property
    def usage_error(self) -> bool:
        """Nothing was evaluated (the model could not be loaded), or an output could not be written."""
        return bool(self.failed_load or self.write_failure)


def conclude(evaluation: Evaluation, gates: GateSettings, outputs: Outputs, settings: Mapping[str, Any],
             shortfalls: Sequence[Shortfall] = ()) -> Conclusion:
    """Score what `evaluation` gathered, decide the gates and write the outputs; `settings` are the run's
    own (beside the evaluation's) for the results file; `shortfalls` why the run is not a full run (interrupted,
    limited, …): no gate passes, and every output says so. A file that cannot be written is a line, not a
    traceback: the others are kept."""
    results = evaluation.results()
    shortfalls = list(shortfalls)
    verdicts = gates.verdicts(
        {name: r.metrics for name, r in results.items()},
        {name: [*r.spec.task_order, *r.spec.groups] for name, r in results.items()},
        {name: r.spec.headline for name, r in results.items()}, paired=baseline_pairing(gates, results),
        parts={name: r.scopes for name, r in results.items()}, shortfalls=shortfalls,
        data={name: (r.data or {}).get("digest") for name, r in results.items()})
    failed_load = load_failure_line([r for result in results.values() for r in result.records])
    # Only the results JSON and the HTML report read the document: building it computes every metric's
    # interval (a bootstrap over the records), which a run writing neither would pay for nothing.
    needed = outputs.json_path is not None or outputs.html_path is not None
    document = (results_document(results, verdicts, {**evaluation.describe(), **settings}, shortfalls)
                if needed else {})
    written: list[tuple[str, Path]] = []
    summary_warning = outputs.step_summary_problem
    try:
        written = outputs.write(document, results)
        if outputs.markdown_path or outputs.step_summary:
            more, summary_warning = outputs.write_summary(
                _markdown(evaluation.settings.model, results, verdicts, written, shortfalls))
            written += more
    except (OutputWriteError, OutputError) as exc:  # a full disk, a folder gone
        return Conclusion(results, verdicts, written, failed_load, f"pytest-mllm: error: {exc}", summary_warning,
                          shortfalls)
    return Conclusion(results, verdicts, written, failed_load, summary_warning=summary_warning, shortfalls=shortfalls)


def _markdown(model: str, results: dict[str, BenchmarkResult], verdicts: list[Verdict],
              written: list[tuple[str, Path]], shortfalls: Sequence[Shortfall]) -> str:
    """The Markdown summary (--mllm-markdown, $GITHUB_STEP_SUMMARY), naming the files written before it."""
    from pytest_mllm.report.markdown import github_run_url, markdown_summary

    return markdown_summary(results, verdicts, model=model, written=written, run_url=github_run_url(os.environ),
                            shortfalls=shortfalls)
