"""The end-of-run terminal summary: a run's own report part (a task job's outcome), the score tables,
gates, wrong answers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_mllm.pytest_compat import terminal_width
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.scoring.gates import Verdict, gates_headline


def write_part(reporter: Any, heading: str, renderables: Sequence[Any], warnings: Sequence[str] = (),
               lines: Sequence[str] = ()) -> None:
    """A part of the summary under its own heading: tables, then warnings (yellow), then lines."""
    from pytest_mllm.report.terminal import off_terminal, render

    reporter.section(heading)
    reporter.write(render(renderables, terminal_width(reporter), reporter.hasmarkup,
                          fit=off_terminal(reporter.isatty, os.environ)))
    for warning in warnings:
        reporter.write_line(f"warning: {warning}", yellow=True)
    for line in lines:
        reporter.write_line(line)


def write_scores(reporter: Any, results: dict[str, BenchmarkResult], verdicts: list[Verdict], *,
                 incorrect_limit: int, written: Sequence[tuple[str, Path]]) -> None:
    """The score tables of every benchmark, the gates, the first wrong answers, the files written."""
    from pytest_mllm.report.terminal import benchmark_tables, gates_table, incorrect_lines, off_terminal, render

    tables: list[Any] = []
    for result in results.values():
        tables += benchmark_tables(result)
    if verdicts:
        tables.append(gates_table(verdicts))
    reporter.section("pytest-mllm scores")
    reporter.write(render(tables, terminal_width(reporter), reporter.hasmarkup,
                          fit=off_terminal(reporter.isatty, os.environ)))
    if verdicts:
        said = gates_headline(verdicts)
        reporter.write_line(f"pytest-mllm: {said}", green=said.startswith("All "), red=not said.startswith("All "))
    lines = incorrect_lines(results, incorrect_limit)
    if lines:
        reporter.section("incorrect answers", sep="-")
        for line in lines:
            reporter.write_line(line)
    for name, result in results.items():
        generated, cached = result.answer_counts
        reporter.write_line(f"pytest-mllm: {name}: {generated} answers generated, {cached} from the cache")
    for kind, path in written:
        reporter.write_line(f"pytest-mllm: {kind} written to {path}")
