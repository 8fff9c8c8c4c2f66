"""The end-of-run terminal summary: TP-Eval's outcome, the score tables, gates, wrong answers."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_mllm.pytest_compat import terminal_width
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.scoring.gates import Verdict


def write_optimization(reporter: Any, outcomes: Sequence[dict[str, Any]], prompts_path: Path | None) -> None:
    """TP-Eval's table of optimized tasks and their warnings."""
    from pytest_mllm.report.terminal import render
    from pytest_mllm.tpeval.report import optimization_table, summarize_warnings

    reporter.section("pytest-mllm TP-Eval prompt customization")
    from pytest_mllm.report.terminal import off_terminal

    reporter.write(render([optimization_table(outcomes)], terminal_width(reporter), reporter.hasmarkup,
                          fit=off_terminal(reporter.isatty, os.environ)))
    for outcome in outcomes:
        for warning in summarize_warnings(outcome.get("warnings") or []):
            reporter.write_line(f"warning: {outcome['benchmark']}::{outcome['task']}: {warning}", yellow=True)
    reporter.write_line(f"pytest-mllm: prompts written to {prompts_path}")


def write_scores(reporter: Any, results: dict[str, BenchmarkResult], verdicts: list[Verdict], *,
                 incorrect_limit: int, written: Sequence[tuple[str, Path]]) -> None:
    """The score tables of every benchmark, the gates, the first wrong answers, the files written."""
    from pytest_mllm.report.terminal import (
        benchmark_tables,
        category_table,
        gates_table,
        incorrect_lines,
        judge_table,
        off_terminal,
        render,
        vrp_table,
    )
    from pytest_mllm.tpeval.report import tp_eval_table

    tables: list[Any] = []
    for result in results.values():
        tables += [*benchmark_tables(result), category_table(result), vrp_table(result), judge_table(result),
                   tp_eval_table(result)]
    if verdicts:
        tables.append(gates_table(verdicts))
    reporter.section("pytest-mllm scores")
    reporter.write(render(tables, terminal_width(reporter), reporter.hasmarkup,
                          fit=off_terminal(reporter.isatty, os.environ)))
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
