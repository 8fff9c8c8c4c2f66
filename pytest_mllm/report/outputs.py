"""The files a run writes at its end: results JSON, HTML report, the sections' own files (each asked for by
its option), the Markdown summary, and the job summary it appends to ($GITHUB_STEP_SUMMARY); one policy for
all of them (`engine/output_paths.py`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest_mllm.sections as sections
from pytest_mllm.engine.output_paths import (
    Input,
    Output,
    OutputError,
    OutputWriteError,
    append_atomically,
    append_problem,
    check_outputs,
    write_atomically,
)
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
    step_summary_problem: str | None = None  # why the job summary is left out (a warning, never an error)

    def check(self, inputs: Iterable[Input] = (), also: Iterable[Output] = ()) -> Outputs:
        """Before anything runs: each output (these and `also`) is distinct from the run's inputs and from
        the other outputs, a regular file or a new path, and writable (parent folders are created now; a
        probe file is created and removed). OutputError names the option, the path and the fix.

        The job summary is a convenience: when it cannot be appended to (it is an input or another output,
        no regular file, in a missing or read-only folder) these outputs come back without it and with
        `step_summary_problem` set, for a warning; the run and its other outputs go on.
        """
        inputs = list(inputs)
        declared = sections.output_files()
        files = [(option, path, declared[option][1].folder, declared[option][1].suffix)
                 for option, path in self.section_files.items()]
        outputs = [Output(option, path, folder, suffix) for option, path, folder, suffix in (
            ("--mllm-json", self.json_path, False, ""), ("--mllm-html", self.html_path, False, ""), *files,
            ("--mllm-markdown", self.markdown_path, False, ""))
            if path is not None] + list(also)
        check_outputs(outputs, inputs)
        problem = self.step_summary and append_problem(self.step_summary, "$GITHUB_STEP_SUMMARY", inputs, outputs)
        if not problem:
            return self
        return replace(self, step_summary=None, step_summary_problem=f"{problem}: the job summary is left out "
                       "(the run and its other outputs are not affected)")

    def write_summary(self, text: str) -> tuple[list[tuple[str, Path]], str | None]:
        """The Markdown summary written (replaced atomically) and appended to the job summary: (what, where) of
        each file written, and a warning when the job summary could not be (an error for --mllm-markdown)."""
        written: list[tuple[str, Path]] = []
        if self.markdown_path is not None:
            write_atomically(self.markdown_path, text, what="the Markdown summary")
            written.append(("Markdown summary", self.markdown_path))
        warning = self.step_summary_problem
        if self.step_summary is not None:
            try:
                append_atomically(self.step_summary, text + "\n", what="the job summary $GITHUB_STEP_SUMMARY")
                written.append(("job summary", self.step_summary))
            except OutputWriteError as exc:
                warning = f"{exc}: the job summary is left out (the run and its other outputs are not affected)"
        return written, warning

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
