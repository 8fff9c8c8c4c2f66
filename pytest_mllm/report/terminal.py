"""The terminal summary: rich tables of scores per benchmark, group and task, the sections' tables, and
the gates."""

from __future__ import annotations

import io
from typing import Any, Iterable, Mapping, Sequence

import pytest_mllm.sections as sections
from pytest_mllm.echo import markup_text, printable
from pytest_mllm.report.results import BenchmarkResult
from pytest_mllm.scoring.gates import Verdict
from pytest_mllm.sections import Column


def _fmt(value: Any, percent: bool = True) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{100 * value:.2f}" if percent else f"{value:.2f}"
    return str(value)


def _in_percent(key: str) -> bool:
    """Whether the score table shows a value in %: a rate, or a value no section's column gives a unit (points,
    a number) to."""
    found = sections.column(key)
    return found is None or found.unit == "rate"


def _present(result: BenchmarkResult) -> list[Column]:
    """The sections' columns some scope of this benchmark holds."""
    return [c for c in sections.columns() if any(c.key in scope for _, _, scope in _scopes(result))]


def _columns(result: BenchmarkResult) -> list[str]:
    """The score table's values: accuracy, the sections' score columns, and the headline."""
    cols = ["accuracy", *(c.key for c in _present(result) if c.shown and c.table is None)]
    if result.spec.headline not in cols and any(result.spec.headline in scope for _, _, scope in _scopes(result)):
        cols.append(result.spec.headline)  # a value shown in a table of its own, or in none
    return cols


def _scopes(result: BenchmarkResult) -> Iterable[tuple[str, str, dict[str, Any]]]:
    """(label, key, scope): overall, then groups, then tasks."""
    yield "overall", "overall", result.scopes["overall"]
    for name, scope in result.scopes["groups"].items():
        yield f"[{printable(name)}]", name, scope
    for name, scope in result.scopes["tasks"].items():
        yield f"  {printable(name)}", name, scope


def _durations(result: BenchmarkResult) -> dict[str, float]:
    times: dict[str, float] = {}
    for record in result.records:
        for key in (record["task"], record.get("group"), "overall"):
            if key:
                times[key] = times.get(key, 0.0) + (record.get("duration_s") or 0.0)
    return times


def header(key: str) -> str:
    """A score column's header, naming its unit: rates (0–1 in the JSON, gates and limits) in percent,
    a section's points (`Column.unit_note`) in points."""
    found = sections.column(key)
    return "acc %" if key == "accuracy" else found.header if found is not None else key


def _table(title: str, cols: list[str], rows: Sequence[tuple[str, dict[str, Any], str | None]],
           extra: dict[str, dict[str, str]]) -> Any:
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("scope", no_wrap=True)
    table.add_column("n", justify="right")
    table.add_column("err", justify="right", min_width=3)
    for col in cols:
        table.add_column(header(col), justify="right", no_wrap=True)
    for col in extra:
        table.add_column(col, justify="right", no_wrap=True)
    for label, scope, key in rows:
        cells = [_fmt(scope.get(c), percent=_in_percent(c)) for c in cols]
        more = [values.get(key or "", "") for values in extra.values()]
        table.add_row(Text(label), str(scope.get("count", 0)), str(scope.get("errors", 0)), *cells, *more,
                      style="bold" if not label.startswith(" ") else None)
    return table


def _uncertainty_column(result: BenchmarkResult) -> dict[str, dict[str, str]]:
    """"±95%" of the headline per scope: half the width of its 95 % interval (Wilson or bootstrap)."""
    from pytest_mllm.scoring.uncertainty import half_width

    headline = result.spec.headline
    found = result.headline_intervals()
    if not found:
        return {}
    column = {}
    for key in ("overall", *result.scopes["groups"], *result.scopes["tasks"]):
        interval = found.get(headline if key == "overall" else f"{key}.{headline}")
        if interval:
            width = half_width(interval) * (100 if _in_percent(headline) else 1)
            column[key] = f"±{width:.1f}"
    return {f"{header(headline).split()[0]} ±95%": column}


def _units_note(cols: list[str]) -> str:
    """The table's units in words: rates in %, a section's points as it says, ± in the column's unit."""
    notes = [found.unit_note for col in cols if (found := sections.column(col)) is not None and found.unit_note]
    return ", ".join(["rates in %", *dict.fromkeys(notes)])


def benchmark_tables(result: BenchmarkResult) -> list[Any]:
    """Scores per scope (overall, groups, tasks), the tables of the sections' own columns, the values left
    undefined, and each section's tables."""
    spec = result.spec
    title = (spec.name + (f" (v{spec.version.removeprefix('v')})" if spec.version else "")
             + f" · headline: {spec.headline} · {_units_note(_columns(result))}")
    rows = [(label, scope, key) for label, key, scope in _scopes(result)]
    times = {**_uncertainty_column(result), "time s": {k: f"{v:.1f}" for k, v in _durations(result).items()}}
    tables: list[Any] = [_table(title, _columns(result), rows, times)]
    tables += [f"{spec.name}: {c.note}" for c in _present(result) if c.shown and c.table is None and c.note]
    if result.records and result.intervals_note:
        from rich.text import Text

        tables.append(Text(f"{spec.name}: no uncertainty shown; {result.intervals_note}"))
    present = _present(result)
    for title in dict.fromkeys(c.table for c in present if c.shown and c.table):
        own = [c for c in present if c.shown and c.table == title]
        own_rows = [(label, scope, None) for label, scope, _ in rows if any(c.key in scope for c in own)]
        tables.append(_table(f"{spec.name} · {title}", [c.key for c in own], own_rows, {}))
        tables += [f"{spec.name}: {c.note}" for c in own if c.note]
    keys_by_reason: dict[str, list[str]] = {}
    for key, why in (result.scopes.get("undefined") or {}).items():
        keys_by_reason.setdefault(why, []).append(key)
    for why, keys in keys_by_reason.items():  # one line per reason, however many scopes share it
        from rich.text import Text

        verb = "is" if len(keys) == 1 else "are"
        tables.append(Text(f"{spec.name}: {', '.join(keys)} {verb} undefined (shown –, not 0): {why}"))
    categories = category_table(result)
    if categories is not None:
        tables.append(categories)
    for section, part in sections.with_parts(result.scopes):
        tables += section.terminal(spec.name, part)
    return tables


def category_table(result: BenchmarkResult) -> Any | None:
    """Accuracy per category and l2-category (multiple-choice benchmarks)."""
    from rich.table import Table

    rows = [(kind, name, scope) for kind in ("l2_categories", "categories")
            for name, scope in result.scopes.get(kind, {}).items()]
    if not rows:
        return None
    table = Table(title=f"{result.spec.name} by category", title_justify="left", show_edge=False)
    more = [c.key for c in sections.columns() if c.categories and any(c.key in scope for _, _, scope in rows)]
    for col, justify in (("level", "left"), ("category", "left"), ("n", "right"), ("acc %", "right"),
                         *((header(c), "right") for c in more)):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for kind, name, scope in rows:
        table.add_row("l2" if kind == "l2_categories" else "category", markup_text(name), str(scope.get("count", 0)),
                      _fmt(scope.get("accuracy")), *(_fmt(scope.get(c)) for c in more))
    return table


def gates_table(verdicts: list[Verdict]) -> Any:
    """Each gate with its value, limit and verdict."""
    from rich.table import Table

    table = Table(title=GATES_TITLE.format(units=sections.gate_units()), title_justify="left", show_edge=False)
    table.add_column("gate", no_wrap=True)
    for col in ("value", "limit", "verdict"):
        table.add_column(col, no_wrap=True)
    table.add_column("note", overflow="fold")
    styles = {"pass": "green", "fail": "bold red", "not run": "yellow"}
    for v in verdicts:
        table.add_row(markup_text(v.gate.text), gate_number(v.value), "–" if v.limit is None else f"{v.limit:.6g}",
                      v.verdict, markup_text(_gate_note(v)),
                      style=styles.get(v.verdict))
    return table


GATES_TITLE = "gates (in the gate's unit: {units})"


def gate_number(value: float | None) -> str:
    """A gate's value in the gate's unit (never rescaled to %): up to 4 decimals, at least 2."""
    if value is None:
        return "–"
    text = f"{value:.4f}".rstrip("0")
    whole, _, decimals = text.partition(".")
    return f"{whole}.{decimals.ljust(2, '0')}"


def _gate_note(verdict: Verdict) -> str:
    """The verdict's note, and a hint when a rate's gate looks written in percent (`accuracy>=60`)."""
    value, limit, gate = verdict.value, verdict.limit, verdict.gate
    rate = sections.is_rate_key(gate.key.rsplit(".", 1)[-1])
    if rate and gate.max_drop is not None and gate.max_drop >= 1:
        drop = gate.max_drop
        hint = f"this metric is a fraction 0–1: a drop of {drop:g} never fails; {drop:g} pp is {drop / 100:g}"
        return f"{verdict.note}; {hint}" if verdict.note else hint
    if (value is not None and limit is not None and gate.max_drop is None and 0 <= value <= 1 < abs(limit)
            and rate):
        hint = f"this metric is a fraction 0–1: {limit:g} % is {limit / 100:g}"
        return f"{verdict.note}; {hint}" if verdict.note else hint
    return verdict.note


def incorrect_lines(results: dict[str, BenchmarkResult], limit: int) -> list[str]:
    """Concise lines for wrong answers: id, question, expected, response, parsed."""
    lines = []
    wrong = [r for res in results.values() for r in res.records if r["status"] == "incorrect"]
    for record in wrong[:limit]:
        response = (record["response"] or "").replace("\n", " ")
        response = response if len(response) <= 80 else response[:77] + "..."
        score = f" (score {record['score']:.3f})" if record.get("score") is not None else ""
        lines.append(f"{record['benchmark']}::{printable(record['id'])}: Q {record['question']!r} "
                     f"expected {record['answer']!r}, got {response!r} → {record['parsed']!r}{score}")
    if len(wrong) > limit:
        lines.append(f"… and {len(wrong) - limit} more (all of them are in --mllm-json; -v lists each)")
    return lines


def render(renderables: Iterable[Any], width: int, color: bool, *, fit: bool = False) -> str:
    """Render rich objects to a string for pytest's terminal writer. `fit` (off a terminal, in CI): as
    wide as each table needs, so that no cell is cut or wrapped and no title wraps."""
    buffer = io.StringIO()
    console = log_console(buffer, color=color, fit=fit, width=width)
    for item in renderables:
        if item is not None:
            console.print(fitted(item) if fit else item)
            console.print()
    return buffer.getvalue()


UNBOUNDED = 100_000  # a console this wide never cuts a line: tables take the width their cells need


def off_terminal(isatty: bool, environ: Mapping[str, str]) -> bool:
    """True when output goes to a log (not a terminal, or a CI job sets $CI): lines are then never cut."""
    return not isatty or environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def log_console(file: Any, *, color: bool, fit: bool, width: int | None = None) -> Any:
    """A rich console writing to `file`; `fit`: unbounded width (nothing truncated, folded or wrapped)."""
    from rich.console import Console

    return Console(file=file, width=UNBOUNDED if fit else max(width or 80, 60), force_terminal=color,
                   color_system="standard" if color else None, soft_wrap=fit)


def fitted(item: Any) -> Any:
    """A table whose title is a line of its own above it: a title longer than the table never wraps."""
    from rich.table import Table

    if isinstance(item, Table) and isinstance(item.title, str):
        from rich.console import Group
        from rich.text import Text

        title, item.title = item.title, None
        return Group(Text(title, style="table.title"), item)
    return item
