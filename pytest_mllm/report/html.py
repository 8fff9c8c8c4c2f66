"""The `--mllm-html` report: one self-contained HTML page a person opens.

Everything is inline (CSS, SVG charts drawn by matplotlib, one small filtering script allowed by
the page's Content-Security-Policy by its hash), so the page needs no network. Every value from
the document is escaped by Jinja2's autoescaping.

Each part of the page is built by one function that returns None when the document has no data for
it (REPORT_SECTIONS); a method's part comes from its registered section (`pytest_mllm.sections`).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import io
import math
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import jinja2
from markupsafe import Markup

import pytest_mllm.sections as sections
from pytest_mllm import __version__

TEMPLATES = Path(__file__).parent.parent / "templates"
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f")
CHARTS_MISSING = "Charts need matplotlib: pip install 'pytest-mllm[html]'."
METHOD_NAMES = {"wilson": "Wilson score interval", "bootstrap": "percentile bootstrap over units"}
_THUMBNAIL = re.compile(r"data:image/(?:jpeg|png);base64,[A-Za-z0-9+/]+={0,2}")
_SETTING_LABELS = {"model": "model", "batch_size": "batch size", "cache": "response cache", "strict": "strict",
                   "gates": "gates", "baseline": "baseline"}

Document = Mapping[str, Any]


@dataclass(frozen=True)
class Section:
    """One titled part of a page; `body` is HTML whose values are already escaped."""

    id: str
    title: str
    body: Markup


@dataclass(frozen=True)
class Card:
    """A headline number at the top of a page."""

    label: str
    value: str
    note: str = ""
    tone: str = ""  # "", "good" or "bad"


Builder = Callable[[Document], "Section | list[Section] | None"]


# -- formatting ---------------------------------------------------------------------------


def is_rate(key: str, value: Any, headline: str) -> bool:
    """Whether a flat metric is a 0–1 rate (shown in %): by its last part, else as the headline metric."""
    last = key.rsplit(".", 1)[-1]
    if sections.is_rate_key(last):
        return True
    if sections.column(last) is not None or (last in ("count", "errors") and isinstance(value, int)):
        return False
    return sections.is_rate_key(headline)


def format_value(value: Any, rate: bool) -> str:
    """Counts as integers, rates in percent, other numbers with two decimals, missing as a dash."""
    if value is None or isinstance(value, bool):
        return "–" if value is None else str(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{100 * value:.2f}" if rate else f"{value:.2f}"
    return str(value)


def format_delta(delta: float | None, rate: bool) -> str:
    """A signed change; rates in percentage points."""
    if delta is None:
        return ""
    if isinstance(delta, int):
        return f"{delta:+d}"
    return f"{100 * delta:+.2f}" if rate else f"{delta:+.2f}"


def _number(value: Any) -> float | None:
    """A finite number from the document, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def interval_view(interval: Any, rate: bool, methods: Any = None) -> dict[str, str] | None:
    """A score's uncertainty as shown next to it: "±3.1", half its interval's width in the score's unit
    (percentage points for rates), and a tooltip with the bounds, the standard error and the method
    (from the document's `intervals_method`); None where the document has no readable interval."""
    if not isinstance(interval, Mapping):
        return None
    ci = interval.get("ci")
    bounds = [_number(x) for x in ci] if isinstance(ci, (list, tuple)) and len(ci) == 2 else [None]
    if None in bounds:
        return None
    low, high = bounds
    methods = methods if isinstance(methods, Mapping) else {}
    unit = " %" if rate else ""
    title = f"{_level(methods)} interval: {format_value(low, rate)} to {format_value(high, rate)}{unit}"
    se = _number(interval.get("se"))
    if se is not None:
        title += f"; standard error {format_value(se, rate)}{' pp' if rate else ''}"
    method = interval.get("method")
    if method == "bootstrap" and isinstance(methods.get("other"), str):
        described = methods["other"]
    else:
        described = METHOD_NAMES.get(str(method), str(method or "method not stated"))
    return {"text": f"±{(high - low) / 2 * (100 if rate else 1):.1f}", "title": f"{title} ({described})"}


def _level(methods: Mapping[str, Any]) -> str:
    """The intervals' confidence level in words ("95 %"), 95 % when the document does not say."""
    level = _number(methods.get("level"))
    return f"{100 * (level if level is not None and 0 < level < 1 else 0.95):g} %"


def intervals_note(benchmarks: Mapping[str, Any]) -> str:
    """The line under the score tables saying what "±" means (or why no interval is shown); "" for a
    document older than intervals."""
    with_intervals = [b for b in benchmarks.values() if isinstance(b, Mapping) and b.get("intervals")]
    missing = next((b["intervals_note"] for b in benchmarks.values()
                    if isinstance(b, Mapping) and isinstance(b.get("intervals_note"), str)), None)
    if not with_intervals:
        return f"No uncertainty shown: {missing}." if missing else ""
    methods = with_intervals[0].get("intervals_method")
    methods = methods if isinstance(methods, Mapping) else {}
    other = methods.get("other") if isinstance(methods.get("other"), str) else "percentile bootstrap over units"
    return (f"± is half the width of the score's {_level(methods)} interval, in the score's unit (percentage points "
            f"for rates); hover over it for the bounds and the method: Wilson for accuracies, otherwise a {other}."
            + (f" Some benchmarks have none: {missing}." if missing else ""))


def safe_thumbnail(value: Any) -> str | None:
    """The value if it is a base64 JPEG or PNG data URL, else None (never a link to elsewhere)."""
    return value if isinstance(value, str) and _THUMBNAIL.fullmatch(value) else None


def format_created(value: Any) -> str:
    """An ISO timestamp as `YYYY-MM-DD HH:MM:SS UTC`, anything else as given."""
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    zone = moment.tzname() or ""
    return moment.strftime("%Y-%m-%d %H:%M:%S") + (" UTC" if zone in ("UTC", "UTC+00:00") else f" {zone}").rstrip()


# -- charts -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Series:
    """One set of bars: a name for the legend and a value per label (None: no bar)."""

    name: str
    values: Sequence[float | None]


def charts_available() -> bool:
    """Whether matplotlib (the `html` extra) is installed; a broken install fails loudly when charts are drawn."""
    return importlib.util.find_spec("matplotlib") is not None


def bar_chart(labels: Sequence[str], series: Sequence[Series], *, axis_label: str, axis_max: float | None = None,
              bar_groups: Sequence[str | None] | None = None) -> Markup:
    """Horizontal bars as inline SVG: one row per label, one bar per series.

    With a single series, `bar_groups` colours each bar by its group (with a legend of groups).
    Text is drawn as SVG text (escaped by matplotlib), never parsed as mathtext.
    """
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows, n = len(labels), len(series)
    height = 0.8 / n
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "pytest-mllm", "text.parse_math": False,
                                "font.size": 9, "font.family": "sans-serif", "axes.spines.top": False,
                                "axes.spines.right": False}):
        figure = Figure(figsize=(7.2, 0.9 + rows * (0.16 + 0.2 * n)), layout="constrained")
        axes = figure.add_subplot()
        handles: list[Any] = []
        names: list[str] = []
        group_names = list(dict.fromkeys(g for g in bar_groups or () if g)) if n == 1 else []
        for index, one in enumerate(series):
            values = [math.nan if v is None else v for v in one.values]
            positions = [row + (index - (n - 1) / 2) * height for row in range(rows)]
            if group_names:
                colors = [PALETTE[group_names.index(g) % len(PALETTE)] if g else "#999999" for g in bar_groups or ()]
            else:
                colors = [PALETTE[index % len(PALETTE)]] * rows
            bars = axes.barh(positions, values, height=height * 0.9, color=colors)
            axes.bar_label(bars, labels=["" if v is None else f"{v:.1f}" for v in one.values], padding=2,
                           fontsize=7, color="#333333")
            handles.append(bars)
            names.append(one.name)
        if group_names:
            handles = [Patch(color=PALETTE[i % len(PALETTE)]) for i in range(len(group_names))]
            names = group_names
        axes.set_yticks(range(rows), labels=list(labels))
        axes.invert_yaxis()
        axes.set_xlim(0, axis_max or max([v for s in series for v in s.values if v is not None] + [1]) * 1.12)
        axes.set_xlabel(axis_label)
        axes.grid(axis="x", color="#dddddd", linewidth=0.6)
        axes.set_axisbelow(True)
        if len(names) > 1:
            axes.legend(handles, names, loc="lower right", fontsize=8, frameon=True)
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Format": None,
                                                       "Type": None})
    svg = buffer.getvalue()
    return Markup(svg[svg.index("<svg"):])


# -- rendering ----------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """The Jinja2 environment of the report templates (autoescaping everything)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(value=format_value, delta=format_delta)
    env.globals.update(interval_view=interval_view)
    return env


def render(template: str, **context: Any) -> Markup:
    """One template rendered with `context`, as markup to place in a page."""
    return Markup(environment().get_template(template).render(**context))


def render_page(title: str, subtitle: str, cards: Sequence[Card], parts: Sequence[Section]) -> str:
    """A whole page around `parts`; its policy allows only inline styles, data images and our script."""
    script = (TEMPLATES / "filter.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return environment().get_template("page.html.j2").render(
        title=title, subtitle=subtitle, cards=cards, sections=parts, version=__version__,
        css=Markup((TEMPLATES / "report.css").read_text(encoding="utf-8")),
        script=Markup(script), script_hash=f"sha256-{digest}")


def write_page(html: str, path: Path) -> None:
    """Write atomically, so an interrupted write never leaves half a page (OutputWriteError on failure)."""
    from pytest_mllm.engine.output_paths import write_atomically

    write_atomically(path, html, what="the HTML report")


# -- the run report's sections --------------------------------------------------------------


def _run_section(document: Document) -> Section:
    """The run's settings: model, benchmarks and versions, plugin, Python, date, other settings."""
    settings = dict(document.get("settings") or {})
    rows = [("model", settings.pop("model", None))]
    rows += [("pytest-mllm", document.get("pytest_mllm")), ("Python", document.get("python")),
             ("date", format_created(document["created"]) if document.get("created") else None)]
    settings.pop("benchmarks", None)  # listed with their versions below
    for key, value in settings.items():
        if isinstance(value, (list, tuple)):
            value = ", ".join(map(str, value))
        elif isinstance(value, Mapping):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        rows.append((_SETTING_LABELS.get(key, key.replace("_", " ")), value))
    rows = [(label, str(value)) for label, value in rows if value not in (None, "")]
    benchmarks = [{"name": name, "version": b.get("version"), "headline": b.get("headline"), "spec": b.get("spec")}
                  for name, b in (document.get("benchmarks") or {}).items()]
    return Section("run", "Run", render("run.html.j2", rows=rows, benchmarks=benchmarks))


def _gates_section(document: Document) -> Section | None:
    """Each gate with its value, limit and coloured verdict."""
    gates = document.get("gates") or []
    return Section("gates", "Gates", render("gates.html.j2", gates=gates, units=sections.gate_units())) if gates else None


def _scores_section(document: Document) -> Section | None:
    """Per benchmark: scores per scope (overall, groups, tasks), categories, and charts."""
    benchmarks = document.get("benchmarks") or {}
    if not benchmarks:
        return None
    charts = charts_available()
    blocks = []
    for name, bench in benchmarks.items():
        group_of = {r.get("task"): r.get("group") for r in document.get("records") or ()
                    if r.get("benchmark") == name}
        scopes = bench.get("scopes") or {}
        rows = [("overall", "overall", scopes.get("overall") or {})]
        rows += [("group", group, scope) for group, scope in (scopes.get("groups") or {}).items()]
        rows += [("task", task, scope) for task, scope in (scopes.get("tasks") or {}).items()]
        categories = [(level, label, scope) for key, level in (("l2_categories", "l2"), ("categories", "category"))
                      for label, scope in (scopes.get(key) or {}).items()]
        undefined: Mapping[str, Any] = scopes["undefined"] if isinstance(scopes.get("undefined"), Mapping) else {}
        shown = [c for c in sections.columns() if c.shown
                 and (c.key in undefined or any(c.key in scope for _, _, scope in rows))]
        intervals = bench.get("intervals")
        blocks.append({
            "name": name, "version": bench.get("version"), "headline": bench.get("headline"),
            "rows": rows, "categories": categories,
            "columns": [ScoreColumn("accuracy", "acc %", True), *(_column(c) for c in shown)],
            "category_columns": [_column(c) for c in shown if c.categories],
            "charts": _benchmark_charts(scopes, group_of) if charts else [],
            "intervals": intervals if isinstance(intervals, Mapping) else {},
            "intervals_method": bench.get("intervals_method"),
            "undefined": undefined,
        })
    note = "" if charts else CHARTS_MISSING
    return Section("scores", "Scores", render("scores.html.j2", benchmarks=blocks, note=note,
                                              intervals_note=intervals_note(benchmarks)))


@dataclass(frozen=True)
class ScoreColumn:
    """A column of the score tables as the template shows it."""

    key: str
    header: str
    rate: bool


def _column(column: sections.Column) -> ScoreColumn:
    return ScoreColumn(column.key, column.header, column.unit == "rate")


@dataclass(frozen=True)
class Page:
    """What a section's part of the report may use (`sections.HtmlPage`)."""

    charts: bool
    settings: Mapping[str, Any]

    def render(self, template: str, **context: Any) -> Markup:
        return render(template, **context)

    def bar_chart(self, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], *,
                  axis_label: str, axis_max: float | None = None,
                  bar_groups: Sequence[str | None] | None = None) -> Markup:
        return bar_chart(labels, [Series(name, values) for name, values in series], axis_label=axis_label,
                         axis_max=axis_max, bar_groups=bar_groups)


def _benchmark_charts(scopes: Mapping[str, Any], group_of: Mapping[str, str | None]) -> list[tuple[str, Markup]]:
    """(caption, svg): per-task bars (a section's, else accuracy and the rates sections draw beside it), and
    accuracy per category, where 2+ bars."""
    charts = []
    tasks = scopes.get("tasks") or {}
    if len(tasks) >= 2:
        names = list(tasks)
        page = Page(charts=True, settings={})
        own = next((chart for section in sections.all_sections()
                    if (chart := section.html_task_chart(tasks, group_of, page)) is not None), None)
        if own is not None:
            charts.append(own)
        else:
            series = [Series("accuracy %", [_percent(tasks[t].get("accuracy")) for t in names])]
            series += [Series(c.chart_label, [_percent(tasks[t].get(c.key)) for t in names]) for c in sections.columns()
                       if c.chart_label and any(c.key in scope for scope in tasks.values())]
            charts.append(("Accuracy per task", bar_chart(names, series, axis_label="%", axis_max=100)))
    categories = scopes.get("categories") or {}
    if len(categories) >= 2:
        names = list(categories)
        series = [Series("accuracy %", [_percent(categories[c].get("accuracy")) for c in names])]
        charts.append(("Accuracy per category", bar_chart(names, series, axis_label="%", axis_max=100)))
    return charts


def _percent(value: float | None) -> float | None:
    return None if value is None else 100 * value


def sample_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a record a sample card shows, with only a safe thumbnail."""
    question = record.get("question")
    prompt = record.get("prompt")
    return {
        "benchmark": record.get("benchmark"), "task": record.get("task"), "id": record.get("id"),
        "filter_key": f"{record.get('benchmark')}::{record.get('task')}",
        "question": question, "prompt": prompt if prompt and prompt != question else None,
        "answer": record.get("answer"), "response": record.get("response"), "parsed": record.get("parsed"),
        "read_response": record.get("read_response"),  # the response as the reference's scorer received it
        "status": record.get("status"), "error": record.get("error"),
        "thumbnail": safe_thumbnail(record.get("thumbnail")),
    }


def task_options(views: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, int]]:
    """(value, label, count) of the task filter, in order of first appearance."""
    counts: dict[str, int] = {}
    labels: dict[str, str] = {}
    for view in views:
        counts[view["filter_key"]] = counts.get(view["filter_key"], 0) + 1
        labels[view["filter_key"]] = f"{view['benchmark']} · {view['task']}"
    return [(key, labels[key], count) for key, count in counts.items()]


def _incorrect_section(document: Document) -> Section | None:
    """Wrong answers with thumbnail, question, expected, response and parsed answer, filterable by task."""
    views = [sample_view(r) for r in document.get("records") or () if r.get("status") == "incorrect"]
    if not views:
        return None
    body = render("samples.html.j2", samples=views, filters=[("task", "task", task_options(views))])
    return Section("incorrect", f"Incorrect answers ({len(views)})", body)


def _errors_section(document: Document) -> Section | None:
    """Samples that could not be answered or read, with the error."""
    views = [sample_view(r) for r in document.get("records") or () if r.get("status") == "error"]
    if not views:
        return None
    return Section("errors", f"Errors ({len(views)})", render("errors.html.j2", samples=views))


def section_parts(document: Document) -> list[Section]:
    """Each registered section's part of the page, over the benchmarks whose scopes hold its part."""
    benchmarks = document.get("benchmarks") or {}
    page = Page(charts=charts_available(), settings=document.get("settings") or {})
    parts = []
    for section in sections.all_sections():
        found = {name: part for name, bench in benchmarks.items()
                 if isinstance(part := (bench.get("scopes") or {}).get(section.name), Mapping) and part}
        made = section.html(found, page) if found else None
        if made is not None:
            parts.append(Section(made.id, made.title, made.body))
    return parts


REPORT_SECTIONS: tuple[Builder, ...] = (_run_section, _gates_section, _scores_section, section_parts,
                                        _incorrect_section, _errors_section)


def _cards(document: Document) -> list[Card]:
    """Why the run is not a full run (first, when it is not), the headline score of each benchmark, and the gates'
    outcome."""
    records = document.get("records") or ()
    incomplete = [entry for entry in document.get("incomplete") or () if isinstance(entry, Mapping)]
    cards = [Card("incomplete run", ", ".join(dict.fromkeys(str(e.get("kind")) for e in incomplete)),
                  "; ".join(str(e.get("reason")) for e in incomplete), "bad")] if incomplete else []
    for name, bench in (document.get("benchmarks") or {}).items():
        headline = bench.get("headline") or "accuracy"
        value = (bench.get("metrics") or {}).get(headline)
        wrong = sum(1 for r in records if r.get("benchmark") == name and r.get("status") == "incorrect")
        errors = sum(1 for r in records if r.get("benchmark") == name and r.get("status") == "error")
        note = f"{headline} · {wrong} incorrect" + (f" · {errors} errors" if errors else "")
        rate = is_rate(headline, value, headline)
        unit = " %" if rate and value is not None else ""
        cards.append(Card(name, format_value(value, rate) + unit, note, "bad" if errors else ""))
    gates = document.get("gates") or []
    if gates:
        failed = sum(1 for g in gates if g.get("verdict") == "fail")
        passed = sum(1 for g in gates if g.get("verdict") == "pass")
        not_run = len(gates) - failed - passed
        note = f"{failed} failed" if failed else f"{not_run} did not run" if not_run else "all pass"
        cards.append(Card("gates", f"{passed}/{len(gates)} pass", note, "good" if passed == len(gates) else "bad"))
    return cards


def write_html(document: dict[str, Any], path: Path) -> None:
    """Write the report of one run (a `--mllm-json` document) to `path`."""
    model = (document.get("settings") or {}).get("model") or "no model"
    names = ", ".join(document.get("benchmarks") or {}) or "no benchmark"
    parts: list[Section] = []
    for build in REPORT_SECTIONS:
        made = build(document)
        parts += made if isinstance(made, list) else [made] if made is not None else []
    html = render_page(f"pytest-mllm · {model}", names, _cards(document), parts)
    write_page(html, Path(path))
