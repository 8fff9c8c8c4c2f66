"""Runs compared: `pytest-mllm-compare base.json head.json [more.json] --html report.html`.

The first run is the base: every metric of every later run gets its delta against it, and the
samples whose verdict flipped (correct → not correct, and back) are listed. `--max-drop` limits
are the regression gate's (`--mllm-max-drop`), evaluated on the same metrics.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from markupsafe import Markup

import pytest_mllm.sections as sections
from pytest_mllm.echo import markup_text
from pytest_mllm.report.html import (
    CHARTS_MISSING,
    Card,
    Section,
    Series,
    bar_chart,
    charts_available,
    format_created,
    format_delta,
    format_value,
    is_rate,
    render,
    render_page,
    sample_view,
    task_options,
    write_page,
)
from pytest_mllm.report.results import shortfalls_of
from pytest_mllm.scoring.gates import EXAMPLE_DROP, Gate, GateSyntaxError, evaluate_regressions, parse_max_drop, withhold

Document = Mapping[str, Any]


class CompareError(ValueError):
    """A results file that cannot be compared; the message names the file."""


def load_results(path: Path) -> dict[str, Any]:
    """A `--mllm-json` document; CompareError says what is wrong with the file."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:  # RecursionError: nested too deeply to decode
        raise CompareError(f"{path}: not a pytest-mllm results file (not JSON: {exc})") from None
    problem = _shape_problem(document)
    if problem:
        raise CompareError(f"{path}: not a pytest-mllm results file ({problem}; write one with --mllm-json)")
    return document


def _shape_problem(document: Any) -> str | None:
    """Why `document` is not a results document, or None."""
    if not isinstance(document, dict):
        return "not a JSON object"
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, dict):
        return "no 'benchmarks' object"
    for name, bench in benchmarks.items():
        if not isinstance(bench, dict) or not isinstance(bench.get("metrics"), dict):
            return f"benchmark {name!r} has no 'metrics' object"
    if not isinstance(document.get("records", []), list):
        return "'records' is not a list"
    return None


def compare(documents: Sequence[Document], labels: Sequence[str], max_drops: Sequence[Gate] = ()) -> dict[str, Any]:
    """Runs side by side: flat metrics per benchmark, deltas against the first run, flipped samples.

    Per benchmark, `metrics[key]`, `deltas[key]`, `versions`, `scopes` and `data` (the digest of the data
    read) have one entry per run (None where a run lacks the metric; the base's delta is None), and
    `data_changed` says for each later run whether it read other data than the first (its deltas are
    then a data change, not the model's). Flips are matched by benchmark and sample id, among the samples
    whose inputs are equal in both runs (`record.same_input`). `max_drops` are regression limits checked
    for each later run against the first; on changed data they are "not run" and say so.
    """
    if len(documents) != len(labels) or len(documents) < 2:
        raise ValueError("compare needs two or more documents and one label each")
    base = documents[0]
    names = list(dict.fromkeys(name for doc in documents for name in doc["benchmarks"]))
    benchmarks: dict[str, Any] = {}
    for name in names:
        runs = [doc["benchmarks"].get(name) or {} for doc in documents]
        keys = list(dict.fromkeys(key for run in runs for key in run.get("metrics", {})))
        metrics = {key: [run.get("metrics", {}).get(key) for run in runs] for key in keys}
        benchmarks[name] = {
            "headline": next((run["headline"] for run in runs if run.get("headline")), "accuracy"),
            "versions": [run.get("version") for run in runs],
            "metrics": metrics,
            "deltas": {key: [None, *(_delta(values[0], v) for v in values[1:])] for key, values in metrics.items()},
            "scopes": [run.get("scopes") or {} for run in runs],
            "intervals": [run.get("intervals") or {} for run in runs],
            "data": [(run.get("data") or {}).get("digest") for run in runs],
        }
        digests = benchmarks[name]["data"]
        benchmarks[name]["data_changed"] = [None, *(bool(digests[0] and d and d != digests[0]) for d in digests[1:])]
    flips: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    pairings = {label: _pairing(base, doc) for label, doc in zip(labels[1:], documents[1:])}
    for name in names:
        benchmarks[name]["paired"] = {label: _paired_summary(pairing(name)) for label, pairing in pairings.items()}
    for label, doc in zip(labels[1:], documents[1:]):
        run_flips, compared, changed = _flips(base, doc, label)
        flips += run_flips
        counts[label] = {"compared": compared, "changed_inputs": changed,
                         "regressed": sum(1 for f in run_flips if f["change"] == "regressed"),
                         "fixed": sum(1 for f in run_flips if f["change"] == "fixed")}
    return {
        "labels": list(labels),
        "runs": [_run_summary(doc, label) for doc, label in zip(documents, labels)],
        "benchmarks": benchmarks,
        "flips": flips,
        "flip_counts": counts,
        "gates": _regressions(documents, labels, max_drops, pairings, benchmarks),
    }


def data_change_lines(comparison: Mapping[str, Any]) -> list[str]:
    """One line per benchmark and later run that read other data than the first run."""
    lines = []
    for name, bench in comparison["benchmarks"].items():
        for label, digest, changed in zip(comparison["labels"], bench.get("data") or (), bench.get("data_changed") or ()):
            if changed:
                lines.append(f"{name}: {label} ran on other data than {comparison['labels'][0]} (data digest {digest} "
                             f"vs {bench['data'][0]}): its deltas are a data change, not the model's")
    return lines


def _pairing(base: Document, head: Document) -> Any:
    """Paired comparisons of `head` against `base` per benchmark, on the samples both ran (built on demand)."""
    from pytest_mllm.scoring.significance import BaselinePairing
    from pytest_mllm.scoring.uncertainty import MetricSetup

    current = {}
    for name, bench in head["benchmarks"].items():
        records = [r for r in head.get("records") or () if r.get("benchmark") == name]
        current[name] = (records, MetricSetup.from_document(bench, records))
    return BaselinePairing(base, current)


def _paired_summary(comparison: Any) -> dict[str, Any]:
    """A comparison's JSON (shared samples, per metric difference, interval and p), or {"note": why none}."""
    if isinstance(comparison, str):
        return {"note": comparison}
    return comparison.summary()


def _delta(before: Any, after: Any) -> float | None:
    numbers = (int, float)
    if isinstance(before, numbers) and isinstance(after, numbers) and not isinstance(before, bool):
        return after - before
    return None


def _run_summary(document: Document, label: str) -> dict[str, Any]:
    settings = document.get("settings") or {}
    return {"label": label, "model": settings.get("model"), "created": document.get("created"),
            "pytest_mllm": document.get("pytest_mllm"), "python": document.get("python"),
            "benchmarks": {name: b.get("version") for name, b in document["benchmarks"].items()}}


def _flips(base: Document, head: Document, label: str) -> tuple[list[dict[str, Any]], int, int]:
    """Samples (by benchmark and id, their inputs equal in both runs) correct in one run and not in the other;
    how many were compared; how many were in both runs with other inputs (left out)."""
    from pytest_mllm.record import same_input

    before = {(r.get("benchmark"), r.get("id")): r for r in base.get("records") or ()}
    flips = []
    compared = changed = 0
    for record in head.get("records") or ():
        old = before.get((record.get("benchmark"), record.get("id")))
        if old is None:
            continue
        if not same_input(old, record):
            changed += 1
            continue
        compared += 1
        was, now = old.get("status") == "correct", record.get("status") == "correct"
        if was == now:
            continue
        flips.append({
            "run": label, "change": "fixed" if now else "regressed",
            "benchmark": record.get("benchmark"), "id": record.get("id"), "task": record.get("task"),
            "question": record.get("question"), "prompt": record.get("prompt"), "answer": record.get("answer"),
            "thumbnail": record.get("thumbnail") or old.get("thumbnail"),
            "before": {k: old.get(k) for k in ("status", "response", "parsed")},
            "after": {k: record.get(k) for k in ("status", "response", "parsed")},
        })
    return flips, compared, changed


def _incomparable(first: Document, later: Document, benchmark: str) -> str | None:
    """Why a benchmark's two runs cannot be compared, as a section says from their scopes (`sections.incomparable`)."""
    scopes = [(doc["benchmarks"].get(benchmark) or {}).get("scopes") or {} for doc in (first, later)]
    return sections.incomparable(*scopes)


def _regressions(documents: Sequence[Document], labels: Sequence[str], limits: Sequence[Gate],
                 pairings: Mapping[str, Any] | None = None,
                 benchmarks: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The regression gate's verdicts for each later run against the first (statistical limits on the paired
    samples); a limit on a benchmark whose data changed is "not run", marked `data_changed`; none passes for a
    later run that was not a full run (its `incomplete` reasons)."""
    if not limits:
        return []
    baseline = {name: dict(b["metrics"]) for name, b in documents[0]["benchmarks"].items()}
    verdicts = []
    for label, doc in zip(labels[1:], documents[1:]):
        current = {name: dict(b["metrics"]) for name, b in doc["benchmarks"].items()}
        headlines = {name: b.get("headline") or "accuracy" for name, b in doc["benchmarks"].items()}
        paired = (pairings or {}).get(label) or _pairing(documents[0], doc)
        run = labels.index(label)
        for v in withhold(evaluate_regressions(list(limits), current, baseline, headlines, paired), shortfalls_of(doc)):
            why = _incomparable(documents[0], doc, v.gate.benchmark)
            if why is not None:  # a section says the runs differ in a way no regression explains (their judges)
                verdicts.append({"run": label, "gate": v.gate.text, "value": v.value, "limit": v.limit,
                                 "verdict": "not run", "note": why})
                continue
            bench = (benchmarks or {}).get(v.gate.benchmark) or {}
            if (bench.get("data_changed") or [None] * (run + 1))[run]:
                verdicts.append({"run": label, "gate": v.gate.text, "value": v.value, "limit": v.limit,
                                 "verdict": "not run", "data_changed": True,
                                 "note": f"the data changed (digest {bench['data'][run]} vs {bench['data'][0]}): "
                                         "a data change, not a model's regression; compare runs on the same data"})
                continue
            verdicts.append({"run": label, "gate": v.gate.text, "value": v.value, "limit": v.limit,
                             "verdict": v.verdict, "note": v.note})
    return verdicts


# -- the HTML report ----------------------------------------------------------------------


def _runs_section(comparison: Mapping[str, Any]) -> Section:
    """The runs side by side: file, model, date, versions."""
    runs = comparison["runs"]
    names = list(comparison["benchmarks"])
    rows = [("model", [r["model"] or "–" for r in runs]),
            ("date", [format_created(r["created"]) if r["created"] else "–" for r in runs]),
            ("pytest-mllm", [r["pytest_mllm"] or "–" for r in runs]),
            ("Python", [r["python"] or "–" for r in runs])]
    rows += [(f"{name} version", [_version(r["benchmarks"], name) for r in runs]) for name in names]
    rows += [(f"{name} data", [digest or "–" for digest in comparison["benchmarks"][name].get("data") or ()])
             for name in names]
    return Section("runs", "Runs", render("compare_runs.html.j2", labels=comparison["labels"], rows=rows))


def _version(benchmarks: Mapping[str, Any], name: str) -> str:
    if name not in benchmarks:
        return "not run"
    return str(benchmarks[name]) if benchmarks[name] is not None else "–"


def _gates_section(comparison: Mapping[str, Any]) -> Section | None:
    """The regression limits' verdicts."""
    gates = comparison["gates"]
    if not gates:
        return None
    return Section("gates", "Regression limits", render("gates.html.j2", gates=gates, units=sections.gate_units()))


def _metrics_section(comparison: Mapping[str, Any]) -> Section:
    """Per benchmark: a chart of each run's per-task headline metric, and every metric with its deltas."""
    charts = charts_available()
    blocks = []
    for name, bench in comparison["benchmarks"].items():
        headline = bench["headline"]
        rows = []
        for key, values in bench["metrics"].items():
            if key.endswith((".count", ".errors")) and len({v for v in values if v is not None}) <= 1:
                continue  # unchanged sample counts of each scope: noise in this table
            rate = is_rate(key, next((v for v in values if v is not None), None), headline)
            cells = [(value, delta, _tone(delta, key)) for value, delta in zip(values, bench["deltas"][key])]
            pm = [_plus_minus(intervals.get(key), rate).strip() for intervals in bench.get("intervals") or []]
            rows.append({"key": key, "rate": rate, "cells": cells, "headline": key == headline, "pm": pm,
                         "unit": unit_label(key, values, headline)})
        found = sections.column(headline)
        blocks.append({"name": name, "headline": headline, "rows": rows,
                       "units": found.unit_note if found is not None else "",
                       "chart": _compare_chart(comparison["labels"], bench) if charts else None})
    return Section("metrics", "Metrics", render("compare_metrics.html.j2", labels=comparison["labels"],
                                                benchmarks=blocks, note="" if charts else CHARTS_MISSING))


def _tone(delta: float | None, key: str) -> str:
    """"good" for a rise, "bad" for a fall; the other way round for error counts."""
    if not delta:
        return ""
    better = delta < 0 if key.split(".")[-1] == "errors" else delta > 0
    return "good" if better else "bad"


def _compare_chart(labels: Sequence[str], bench: Mapping[str, Any]) -> Markup | None:
    """Each run's headline metric per task (or per scope when there is one task), as grouped bars."""
    headline = bench["headline"]
    task_names = list(dict.fromkeys(t for scopes in bench["scopes"] for t in scopes.get("tasks") or {}))
    scale = 100 if sections.is_rate_key(headline) else 1
    if len(task_names) >= 2:
        rows = task_names
        values = [[(s.get("tasks") or {}).get(t, {}).get(headline) for t in rows] for s in bench["scopes"]]
    else:
        rows = ["overall"]
        values = [[bench["metrics"].get(headline, [None] * len(labels))[i]] for i in range(len(labels))]
    series = [Series(label, [None if v is None else v * scale for v in run]) for label, run in zip(labels, values)
              if any(v is not None for v in run)]
    if not series:
        return None
    axis_label = f"{headline} %" if scale == 100 else headline
    return bar_chart(rows, series, axis_label=axis_label, axis_max=100 if scale == 100 else None)


def _flips_section(comparison: Mapping[str, Any]) -> Section | None:
    """Samples whose verdict flipped, filterable by task, change and run."""
    flips = comparison["flips"]
    if not flips:
        return None
    views = [{**sample_view(f), "change": f["change"], "run": f["run"], "before": f["before"], "after": f["after"]}
             for f in flips]
    filters = [("task", "task", task_options(views)),
               ("change", "change", _options(views, "change"))]
    if len(comparison["labels"]) > 2:
        filters.append(("run", "run", _options(views, "run")))
    body = render("flips.html.j2", samples=views, filters=filters, base=comparison["labels"][0],
                  counts=comparison["flip_counts"])
    return Section("flips", f"Flipped samples ({len(flips)})", body)


def _options(views: Sequence[Mapping[str, Any]], key: str) -> list[tuple[str, str, int]]:
    counts: dict[str, int] = {}
    for view in views:
        counts[view[key]] = counts.get(view[key], 0) + 1
    return [(value, value, count) for value, count in counts.items()]


def _paired_section(comparison: Mapping[str, Any]) -> Section | None:
    """Paired differences on the shared samples: interval and p-value per headline and group metric."""
    rows = paired_rows(comparison)
    if not rows:
        return None
    return Section("paired", "Paired differences", render("compare_paired.html.j2", rows=rows,
                                                          units=sections.units_notes()))


COMPARE_SECTIONS = (_runs_section, _gates_section, _metrics_section, _paired_section, _flips_section)


def _cards(comparison: Mapping[str, Any]) -> list[Card]:
    """Each benchmark's headline in the last run that has it, with its change; flips; the limits' outcome."""
    cards = []
    for name, bench in comparison["benchmarks"].items():
        headline = bench["headline"]
        values = bench["metrics"].get(headline, [])
        last = max((i for i, v in enumerate(values) if v is not None), default=None)
        if last is None:
            continue
        value, delta = values[last], bench["deltas"][headline][last]
        rate = is_rate(headline, value, headline)
        points = not rate and unit_label(headline, [value], headline) == "points"
        change = format_delta(delta, rate) + ((" pp" if rate else " pts" if points else "") if delta is not None else "")
        cards.append(Card(name, format_value(value, rate) + (" %" if rate else " pts" if points else ""),
                          f"{headline} in {comparison['labels'][last]}" + (f" · {change}" if change else ""),
                          _tone(delta, headline)))
    for label, count in comparison["flip_counts"].items():
        if not count["compared"]:
            continue
        cards.append(Card(f"flips in {label}", f"−{count['regressed']} / +{count['fixed']}",
                          f"regressed / fixed of {count['compared']} compared",
                          "bad" if count["regressed"] > count["fixed"] else ""))
    gates = comparison["gates"]
    if gates:
        failed = sum(1 for g in gates if g["verdict"] == "fail")
        cards.append(Card("regression limits", f"{len(gates) - failed}/{len(gates)} pass",
                          f"{failed} failed" if failed else "all pass", "bad" if failed else "good"))
    return cards


def write_compare_html(comparison: Mapping[str, Any], path: Path) -> None:
    """Write the comparison report (the look of the run report) to `path`."""
    sections = [s for s in (build(comparison) for build in COMPARE_SECTIONS) if s is not None]
    title = "pytest-mllm comparison · " + " → ".join(comparison["labels"])
    subtitle = ", ".join(comparison["benchmarks"]) or "no benchmark"
    write_page(render_page(title, subtitle, _cards(comparison), sections), path)


# -- the command --------------------------------------------------------------------------


def _labels(paths: Sequence[Path]) -> list[str]:
    """File names, or the paths as given where two names are alike."""
    names = [p.name for p in paths]
    labels = names if len(set(names)) == len(names) else [str(p) for p in paths]
    return labels if len(set(labels)) == len(labels) else [f"{label}#{n}" for n, label in enumerate(labels, 1)]


def terminal_table(comparison: Mapping[str, Any]) -> Any:
    """A short rich table: headline metrics of each benchmark and its groups, per run, with deltas."""
    from rich.table import Table

    labels = comparison["labels"]
    table = Table(title="pytest-mllm comparison (values and Δ in the row's unit; Δ of % in pp)",
                  title_justify="left", show_edge=False)
    table.add_column("metric", no_wrap=True)
    table.add_column("unit", no_wrap=True)
    for n, label in enumerate(labels):
        table.add_column(markup_text(label if n == 0 else f"{label} (Δ)"), justify="right", no_wrap=True)
    for name, bench in comparison["benchmarks"].items():
        headline = bench["headline"]
        groups = dict.fromkeys(g for scopes in bench["scopes"] for g in scopes.get("groups") or {})
        for key in [headline, *groups]:
            values, deltas = bench["metrics"].get(key), bench["deltas"].get(key)
            if values is None:
                continue
            rate = is_rate(key, next((v for v in values if v is not None), None), headline)
            cells = [format_value(v, rate) + _plus_minus(intervals.get(key), rate)
                     + (f" ({format_delta(d, rate)})" if d is not None else "")
                     for v, d, intervals in zip(values, deltas or [], bench.get("intervals") or [{}] * len(values))]
            table.add_row(markup_text(f"{name}.{key}"), unit_label(key, values, headline), *cells)
    return table


def unit_label(key: str, values: Sequence[Any], headline: str) -> str:
    """The unit a compared metric is shown in: "%" for rates, "points" for a section's points, "count", or
    "fraction" for other 0–1 figures shown as they are."""
    value = next((v for v in values if v is not None), None)
    if is_rate(key, value, headline):
        return "%"
    if isinstance(value, int) and not isinstance(value, bool):
        return "count"
    if sections.is_points_key(key.rsplit(".", 1)[-1]) or sections.is_points_key(headline):
        return "points"
    if isinstance(value, float) and -1 <= value <= 1:
        return "fraction"
    return ""


def _plus_minus(interval: Mapping[str, Any] | None, rate: bool) -> str:
    """" ±3.1": half the 95 % interval's width, in the value's unit (percentage points for rates)."""
    if not interval or not interval.get("ci"):
        return ""
    low, high = interval["ci"]
    return f" ±{(high - low) / 2 * (100 if rate else 1):.1f}"


def paired_rows(comparison: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Headline and group metrics of each later run against the base on their shared samples:
    difference, 95 % interval, p-value and test; or a note where no paired comparison was possible."""
    rows = []
    for name, bench in comparison["benchmarks"].items():
        headline = bench["headline"]
        groups = dict.fromkeys(g for scopes in bench["scopes"] for g in scopes.get("groups") or {})
        for label, paired in (bench.get("paired") or {}).items():
            if "note" in paired:
                rows.append({"run": label, "metric": name, "note": paired["note"]})
                continue
            shared = f"{paired['shared']} shared"
            if paired["only_base"] or paired["only_head"]:
                shared += f"; left out: {len(paired['only_base'])} only in base, {len(paired['only_head'])} only in {label}"
            if paired.get("changed_inputs"):
                shared += f"; {len(paired['changed_inputs'])} left out: their inputs changed"
            for key in dict.fromkeys([headline, *groups, *(k for k in ("accuracy", "accuracy_plus", "score", "f1")
                                                            if k in paired["metrics"])]):
                stat = paired["metrics"].get(key)
                if stat is None:
                    continue
                rate = is_rate(key, stat["after"], headline)
                scale = 100 if rate else 1
                unit = " pp" if rate else (" pts" if unit_label(key, [stat["after"]], headline) == "points" else "")
                ci = stat["ci"]
                rows.append({"run": label, "metric": f"{name}.{key}", "rate": rate,
                             "diff": format_delta(stat["diff"], rate) + unit,
                             "ci": "–" if ci is None else f"[{ci[0] * scale:+.2f}, {ci[1] * scale:+.2f}]",
                             "p": "–" if stat["p"] is None else f"{stat['p']:.3g}", "method": stat["method"],
                             "significant": stat["p"] is not None and stat["p"] < 0.05,
                             "tone": _tone(stat["diff"], key) if stat["p"] is not None and stat["p"] < 0.05 else "",
                             "note": shared})
    return rows


def _paired_table(rows: Sequence[Mapping[str, Any]]) -> Any:
    """The paired differences, significant ones coloured."""
    from rich.table import Table

    units = "".join(f"; {note}" for note in sections.units_notes())
    table = Table(title=f"paired differences (shared samples; Δ and its 95 % interval in pp for rates{units}; "
                        "two-sided p)", title_justify="left", show_edge=False)
    for column in ("run", "metric", "Δ", "95 % CI", "p", "test", "samples"):
        table.add_column(column, overflow="fold" if column == "samples" else "ellipsis", no_wrap=column != "samples",
                         justify="right" if column in ("Δ", "95 % CI", "p") else "left")
    styles = {"good": "green", "bad": "bold red"}
    for row in rows:
        if "diff" not in row:
            table.add_row(markup_text(row["run"]), markup_text(row["metric"]), "–", "–", "–", "–", markup_text(row["note"]))
            continue
        table.add_row(markup_text(row["run"]), markup_text(row["metric"]), row["diff"], row["ci"], row["p"],
                      row["method"], markup_text(row["note"]),
                      style=styles.get(row["tone"]))
    return table


def _gates_table(gates: Sequence[Mapping[str, Any]]) -> Any:
    """The regression limits' verdicts, coloured."""
    from rich.table import Table

    table = Table(title=f"regression limits (in the metric's unit: {sections.gate_units()})", title_justify="left",
                  show_edge=False)
    for column in ("run", "gate", "value", "limit", "verdict", "note"):
        table.add_column(column, overflow="fold" if column == "note" else "ellipsis")
    styles = {"pass": "green", "fail": "bold red", "not run": "yellow"}
    for g in gates:
        table.add_row(markup_text(g["run"]), markup_text(g["gate"]),
                      *("–" if g[k] is None else f"{g[k]:.4g}" for k in ("value", "limit")),
                      g["verdict"], markup_text(g["note"]), style=styles.get(g["verdict"]))
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """The console command; exit status 1 when a --max-drop limit is broken or cannot be decided because the
    data changed, 2 for bad input."""
    parser = argparse.ArgumentParser(
        prog="pytest-mllm-compare",
        description="Compare pytest-mllm runs (--mllm-json files); the first one is the base.")
    parser.add_argument("results", nargs="+", type=Path, help="results files written with --mllm-json")
    parser.add_argument("--html", type=Path, help="write the comparison report here")
    parser.add_argument("--json", type=Path, help="write the comparison as JSON here")
    parser.add_argument("--max-drop", action="append", default=[], metavar="METRIC=DROP",
                        help=f"regression limit, as --mllm-max-drop: '{EXAMPLE_DROP}', or a bare DROP for "
                             "every headline metric; 'BENCH.METRIC=significant[@0.05]' fails only on a "
                             f"significant drop, '{EXAMPLE_DROP}@0.05' only when the drop exceeds it with "
                             "95%% confidence (paired on the shared samples); may be repeated")
    args = parser.parse_args(argv)
    if len(args.results) < 2:
        parser.error("give two or more results files: the base first, then the runs to compare with it")
    from pytest_mllm.engine.output_paths import Input, Output, OutputError, OutputWriteError, check_outputs

    try:
        check_outputs([Output(f"--{name}", path) for name, path in (("json", args.json), ("html", args.html)) if path],
                      [Input(f"results file {n} ({path.name})", path) for n, path in enumerate(args.results, 1)])
        limits = [parse_max_drop(text) for text in args.max_drop]
        documents = [load_results(path) for path in args.results]
    except (GateSyntaxError, CompareError, OutputError) as exc:
        print(f"pytest-mllm-compare: error: {exc}", file=sys.stderr)
        return 2
    comparison = compare(documents, _labels(args.results), limits)
    import os

    from pytest_mllm.report.terminal import fitted, log_console, off_terminal

    fit = off_terminal(sys.stdout.isatty(), os.environ)
    console = log_console(sys.stdout, color=sys.stdout.isatty(), fit=fit)
    show = fitted if fit else (lambda table: table)
    console.print(show(terminal_table(comparison)))
    for line in data_change_lines(comparison):
        console.print(line, style="yellow", highlight=False, markup=False)
    for label, count in comparison["flip_counts"].items():
        console.print(f"{label}: {count['regressed']} regressed, {count['fixed']} fixed "
                      f"of {count['compared']} samples in both runs"
                      + (f" ({count['changed_inputs']} left out: their inputs changed)" if count["changed_inputs"]
                         else ""), highlight=False, markup=False)
    rows = paired_rows(comparison)
    if rows:
        console.print(show(_paired_table(rows)))
    if comparison["gates"]:
        console.print(show(_gates_table(comparison["gates"])))
    try:
        if args.json:
            from pytest_mllm.report.results import write_json

            write_json(args.json, comparison)
        if args.html:
            write_compare_html(comparison, args.html)
            console.print(f"comparison report written to {args.html}", highlight=False)
    except OutputWriteError as exc:
        print(f"pytest-mllm-compare: error: {exc}", file=sys.stderr)
        return 2
    # a limit on changed data never passes: it decides nothing about the model
    return 1 if any(g["verdict"] == "fail" or g.get("data_changed") for g in comparison["gates"]) else 0


if __name__ == "__main__":
    sys.exit(main())
