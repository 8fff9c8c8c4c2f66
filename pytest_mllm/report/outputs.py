"""The files a run writes at its end: results JSON, HTML report, VRPTEST's radar chart, MME's results format."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mllm.engine.output_paths import Input, Output, OutputError, check_outputs
from pytest_mllm.report.results import BenchmarkResult

__all__ = ["Input", "OutputError", "Outputs"]


@dataclass(frozen=True)
class Outputs:
    """Where each output goes (None: not written)."""

    json_path: Path | None = None
    html_path: Path | None = None
    mme_results: Path | None = None
    vrp_radar: Path | None = None
    markdown_path: Path | None = None  # --mllm-markdown
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY: the summary is appended to it

    def check(self, inputs: Iterable[Input] = (), also: Iterable[Output] = ()) -> None:
        """Before anything runs: each output (these and `also`) is distinct from the run's inputs and from
        the other outputs, and writable (parent folders are created now; a probe file is created and removed).

        OutputError names the option, the path and the fix.
        """
        check_outputs([Output(option, path, folder) for option, path, folder in (
            ("--mllm-json", self.json_path, False), ("--mllm-html", self.html_path, False),
            ("--mllm-vrp-radar", self.vrp_radar, False), ("--mllm-markdown", self.markdown_path, False),
            ("--mllm-mme-results", self.mme_results, True))
            if path is not None] + list(also), inputs)

    def write(self, document: dict[str, Any], results: dict[str, BenchmarkResult]) -> list[tuple[str, Path]]:
        """Write every requested output; (what, where) of the ones written."""
        written: list[tuple[str, Path]] = []
        if self.json_path:
            from pytest_mllm.report.results import write_json

            write_json(self.json_path, document)
            written.append(("results", self.json_path))
        if self.html_path:
            from pytest_mllm.report.html import write_html

            write_html(document, self.html_path)
            written.append(("HTML report", self.html_path))
        if self.vrp_radar:
            from pytest_mllm.vrp.radar import write_radar

            write_radar({name: r.scopes.get("vrp") or {} for name, r in results.items()}, self.vrp_radar)
        if self.mme_results:
            from pytest_mllm.loaders.mme_results import write_mme_results

            write_mme_results([r for res in results.values() for r in res.records], self.mme_results)
        return written
