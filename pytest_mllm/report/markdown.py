"""The Markdown summary for a CI page (`--mllm-markdown`, `$GITHUB_STEP_SUMMARY`): headline scores with
their intervals, the sections' lines, the gates with their verdicts, the regressions against a baseline,
where the reports are."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest_mllm.sections as sections
from pytest_mllm.echo import markdown_code, markdown_text
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.scoring.gates import Verdict, gates_headline
from pytest_mllm.shortfall import Shortfall, headline

_VERDICTS = {"pass": "✅ pass", "fail": "❌ **fail**", "not run": "⏭️ not run"}


def markdown_summary(results: Mapping[str, BenchmarkResult], verdicts: Sequence[Verdict], *, model: str,
                     written: Sequence[tuple[str, Path]] = (), run_url: str | None = None,
                     shortfalls: Sequence[Shortfall] = ()) -> str:
    """The summary as GitHub-flavoured Markdown; a run that is not a full run (`shortfalls`) says so first."""
    lines = [f"## pytest-mllm: {_text(model)}", ""]
    if shortfalls:
        lines += [f"**⚠️ {_text(headline(shortfalls))}**", ""]
    if verdicts:
        said = gates_headline(verdicts)
        lines += [said if said.startswith("All ") else f"**{said}**", ""]
    if results:
        lines += ["| benchmark | scope | headline | value | 95 % interval | samples | errors | answers |",
                  "|---|---|---|---:|---|---:|---:|---|"]
        for name, result in results.items():
            lines += _score_rows(name, result)
        lines.append("")
        more = [line for name, result in results.items() for section, part in sections.with_parts(result.scopes)
                for line in section.markdown(_text(name), part)]
        lines += [*more, ""] if more else []
    gates = [v for v in verdicts if v.gate.max_drop is None]
    limits = [v for v in verdicts if v.gate.max_drop is not None]
    if gates:
        lines += ["### Gates", "", "| gate | value | limit | verdict | note |", "|---|---:|---:|---|---|"]
        lines += [f"| `{_code(v.gate.text)}` | {_number(v.value)} | {_number(v.limit)} | {_VERDICTS[v.verdict]} | "
                  f"{_text(v.note)} |" for v in gates]
        lines += ["", f"Gates are in the metric's own unit: {sections.gate_units()}.", ""]
    if limits:
        lines += ["### Regressions against the baseline", "", "| limit | value | lowest allowed | verdict | note |",
                  "|---|---:|---:|---|---|"]
        lines += [f"| `{_code(v.gate.text)}` | {_number(v.value)} | {_number(v.limit)} | {_VERDICTS[v.verdict]} | "
                  f"{_text(v.note)} |" for v in limits]
        lines.append("")
    if written:
        lines += ["### Reports", ""]
        lines += [f"- {_text(kind)}: `{_code(str(path))}`" for kind, path in written]
        if run_url:
            lines.append(f"- uploaded with [this run's artifacts]({run_url})")
        lines.append("")
    return "\n".join(lines)


def github_run_url(environ: Mapping[str, str]) -> str | None:
    """The page of this GitHub Actions run (its artifacts are listed there), when running in one."""
    parts = [environ.get(k) for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")]
    if not all(parts):
        return None
    server, repository, run = parts
    return f"{server}/{repository}/actions/runs/{run}"


def _score_rows(name: str, result: BenchmarkResult) -> list[str]:
    """The headline of the benchmark, then of each group, with its interval."""
    headline = result.spec.headline
    intervals = result.headline_intervals()
    answers = _answers(result)
    rows = []
    scopes = [("overall", headline, result.scopes["overall"]),
              *((group, f"{group}.{headline}", scope) for group, scope in result.scopes["groups"].items())]
    for label, key, scope in scopes:
        interval = intervals.get(key) or {}
        low_high = interval.get("ci")
        shown = (f"[{_scaled(low_high[0], headline)}, {_scaled(low_high[1], headline)}]"
                 if low_high and None not in low_high else "–")
        rows.append(f"| {_text(name) if label == 'overall' else ''} | {_text(label)} | {_text(headline)} | "
                    f"{_scaled(scope.get(headline), headline)} | {shown} | {scope.get('count', 0)} | "
                    f"{scope.get('errors', 0)} | {answers if label == 'overall' else ''} |")
    return rows


def _answers(result: BenchmarkResult) -> str:
    generated, cached = result.answer_counts
    return f"{generated} generated, {cached} from the cache"


def _scaled(value: object, metric: str) -> str:
    """A headline value as the terminal shows it: rates in %, points and other numbers as they are."""
    if not isinstance(value, (int, float)):
        return "–"
    if sections.is_rate_key(metric):
        return f"{100 * value:.2f} %"
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.6g}"


def _text(value: str) -> str:
    """Free text in a table cell or a heading: plain text on one line (`echo.markdown_text`)."""
    return markdown_text(value)


def _code(value: str) -> str:
    """Text in a code span inside a table cell (`echo.markdown_code`)."""
    return markdown_code(value)
