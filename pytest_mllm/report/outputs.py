"""The files a run writes at its end: results JSON, HTML report, and the sections' own files (each asked
for by its option)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mllm import sections
from pytest_mllm.engine.output_paths import Input, Output, OutputError, check_outputs
from pytest_mllm.report.results import BenchmarkResult

__all__ = ["Input", "OutputError", "Outputs"]


@dataclass(frozen=True)
class Outputs:
    """Where each output goes (None: not written)."""

    json_path: Path | None = None
    html_path: Path | None = None
    markdown_path: Path | None = None  # --mllm-markdown
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY: the summary is appended to it
    section_files: Mapping[str, Path | None] = field(default_factory=dict)  # a section's option → its path

    def check(self, inputs: Iterable[Input] = (), also: Iterable[Output] = ()) -> None:
        """Before anything runs: each output (these and `also`) is distinct from the run's inputs and from
        the other outputs, and writable (parent folders are created now; a probe file is created and removed).

        OutputError names the option, the path and the fix.
        """
        declared = sections.output_files()
        files = [(option, path, declared[option][1].folder) for option, path in self.section_files.items()]
        check_outputs([Output(option, path, folder) for option, path, folder in (
            ("--mllm-json", self.json_path, False), ("--mllm-html", self.html_path, False), *files,
            ("--mllm-markdown", self.markdown_path, False))
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
        declared = sections.output_files()
        for option, path in self.section_files.items():
            if path is not None:
                what = declared[option][0].write(option, path, results)
                if what:
                    written.append((what, path))
        return written
