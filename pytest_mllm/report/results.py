"""The controller's view of a run: records gathered from reports → per-benchmark metrics → JSON."""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_mllm import __version__
from pytest_mllm.sections import derived_parts, is_derived_key, stands_in
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.record import Record
from pytest_mllm.scoring.gates import GateSettings, Verdict, flatten
from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.shortfall import Shortfall


@dataclass
class BenchmarkResult:
    """Metrics of one benchmark in this run."""

    spec: BenchmarkSpec
    records: list[Record]
    scopes: dict[str, Any]
    metrics: dict[str, float]  # flat, the namespace of gates
    data: dict[str, Any] | None = None  # the digest of the data read (`engine/data_identity.py`)

    @property
    def duration_s(self) -> float:
        return sum(r.get("duration_s") or 0.0 for r in self.records)

    @property
    def setup(self) -> Any:
        """What recomputing these metrics needs (`scoring.uncertainty.MetricSetup`)."""
        from pytest_mllm.scoring.uncertainty import MetricSetup

        return MetricSetup.from_spec(self.spec)

    @cached_property
    def intervals(self) -> dict[str, dict[str, Any]]:
        """{flat key: {value, se, ci, method}}, computed on first use; {} without scipy (see `intervals_note`)."""
        from pytest_mllm.scoring.uncertainty import intervals, stats_missing

        if stats_missing() or not self.records:
            return {}
        return intervals(self.records, self.setup, self.resampled_metrics)

    @property
    def resampled_metrics(self) -> dict[str, float]:
        """The flat metrics the records' bootstrap recomputes: a derived section's values carry their own
        uncertainty (`sections.Section.derive`)."""
        return {k: v for k, v in self.metrics.items() if not is_derived_key(k)}

    def headline_intervals(self) -> dict[str, dict[str, Any]]:
        """The intervals of the headline metric of each scope (overall, groups, tasks): what the terminal
        and the Markdown summary show (computed once)."""
        from pytest_mllm.scoring.uncertainty import intervals, stats_missing

        if "intervals" in self.__dict__:
            return self.intervals
        if stats_missing() or not self.records:
            return {}
        if "_headline_intervals" not in self.__dict__:
            headline = self.spec.headline
            keys = [headline, *(f"{name}.{headline}" for kind in ("groups", "tasks")
                                for name in self.scopes.get(kind, {}))]
            self.__dict__["_headline_intervals"] = intervals(self.records, self.setup, self.resampled_metrics,
                                                             keys=keys)
        return self.__dict__["_headline_intervals"]  # type: ignore[no-any-return]

    @property
    def answer_counts(self) -> tuple[int, int]:
        """(answers the model generated in this run, answers read from the response cache)."""
        cached = sum(1 for r in self.records if r.get("cached"))
        generated = sum(1 for r in self.records if not r.get("cached") and r.get("response") is not None)
        return generated, cached

    @property
    def intervals_note(self) -> str | None:
        """Why there are no intervals (scipy missing), or None."""
        from pytest_mllm.scoring.uncertainty import stats_missing

        return stats_missing()


def compute_results(specs: Mapping[str, BenchmarkSpec], records: Iterable[Record]) -> dict[str, BenchmarkResult]:
    """Metrics per benchmark (by name, sorted), over its records in collection order (identical under xdist)."""
    by_benchmark: dict[str, list[Record]] = {}
    for record in records:
        by_benchmark.setdefault(record["benchmark"], []).append(record)
    results: dict[str, BenchmarkResult] = {}
    for name in sorted(by_benchmark):
        spec = specs[name]
        ordered = sorted(by_benchmark[name], key=lambda r: r["order"])
        scopes = benchmark_metrics(ordered, spec.metrics, spec.groups, spec.task_order)
        if ordered:
            from pytest_mllm.scoring.uncertainty import MetricSetup

            scopes.update(derived_parts(ordered, MetricSetup.from_spec(spec)))
        results[name] = BenchmarkResult(spec, ordered, scopes, flatten(scopes, spec.headline))
    return results


def results_document(results: dict[str, BenchmarkResult], verdicts: list[Verdict],
                     settings: dict[str, Any], shortfalls: Sequence[Shortfall] = ()) -> dict[str, Any]:
    """The `--mllm-json` document: why the run is not a full run (`incomplete`: empty for a full run), settings,
    metrics per benchmark, gates, per-sample records."""
    return {
        "pytest_mllm": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "incomplete": [shortfall.to_json() for shortfall in shortfalls],
        "settings": settings,
        "benchmarks": {
            name: {
                "spec": str(r.spec.path),
                "version": r.spec.version,
                "reference": reference_entry(r.spec),
                "deviations": list(r.spec.deviations),
                "headline": r.spec.headline,
                "metrics": r.metrics,
                "scopes": r.scopes,
                **({"data": r.data} if r.data else {}),
                **_uncertainty(r),
            }
            for name, r in results.items()
        },
        "gates": [
            {"gate": v.gate.text, "value": v.value, "limit": v.limit, "verdict": v.verdict, "note": v.note,
             **({"withheld": v.withheld} if v.withheld else {})}
            for v in verdicts
        ],
        "records": [record for r in results.values() for record in r.records],
    }


def reference_entry(spec: BenchmarkSpec) -> dict[str, str] | None:
    """Which reference the benchmark's scores reproduce: its implementation, repository and pinned commit."""
    about = spec.about
    if not (about.reference or about.reference_repository or about.reference_commit):
        return None
    return {"implementation": about.reference, "repository": about.reference_repository, "commit": about.reference_commit}


def _uncertainty(result: BenchmarkResult) -> dict[str, Any]:
    """The keys added beside `metrics` and `scopes`: the metric setup (for paired comparisons later),
    and per flat metric its uncertainty, or the note saying why there is none."""
    from pytest_mllm.scoring.uncertainty import BOOTSTRAP_SAMPLES, LEVEL, SEED

    spec = result.spec
    out: dict[str, Any] = {"setup": {"metrics": list(spec.metrics), "groups": {g: list(m) for g, m in spec.groups.items()},
                                     "task_order": list(spec.task_order)}}
    note = result.intervals_note
    if note:
        out["intervals_note"] = note
    else:
        out["intervals"] = result.intervals
        out["intervals_method"] = {"level": LEVEL, "accuracy": "wilson",
                                   "other": f"percentile bootstrap over units, stratified by task, {BOOTSTRAP_SAMPLES} "
                                            f"resamples, seed {SEED}"}
    return out


def baseline_pairing(gates: GateSettings, results: Mapping[str, BenchmarkResult]) -> Any:
    """The paired comparisons statistical regression limits need (and any limit on a benchmark whose values
    a section's part stands in for: an estimate), or None when none needs one."""
    statistical = any(limit.alpha is not None for limit in gates.max_drops)
    if not gates.baseline or not gates.max_drops or not (
            statistical or any(stands_in(r.scopes) for r in results.values())):
        return None
    from pytest_mllm.scoring.significance import BaselinePairing

    return BaselinePairing.from_path(gates.baseline, {name: (r.records, r.setup) for name, r in results.items()})


def shortfalls_of(document: Mapping[str, Any]) -> list[Shortfall]:
    """The `incomplete` list of a results document (none in a file written before it was recorded; an entry that is
    not a reason is left out)."""
    entries = document.get("incomplete")
    return [Shortfall.from_json(entry) for entry in entries if isinstance(entry, Mapping) and "reason" in entry] \
        if isinstance(entries, list) else []


def document_text(document: Mapping[str, Any]) -> str:
    """The document as JSON, laid out as `json.dumps(indent=1)` lays it out, except that each item of a
    top-level list of objects (the records, the gates) takes one line: the same parsed content, written
    by Python's C encoder (the indenting one is pure Python: seconds for ten thousand records)."""
    line = json.JSONEncoder(ensure_ascii=False).encode
    entries = []
    for key, value in document.items():
        if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
            text = "[\n" + ",\n".join("  " + line(item) for item in value) + "\n ]"
        else:  # a JSON string never holds a raw line break: indenting by a space per line nests the value
            text = json.dumps(value, indent=1, ensure_ascii=False).replace("\n", "\n ")
        entries.append(f" {json.dumps(key, ensure_ascii=False)}: {text}")
    return "{\n" + ",\n".join(entries) + "\n}" if entries else "{}"


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Write atomically, so an interrupted write never leaves a half file (OutputWriteError on failure)."""
    from pytest_mllm.engine.output_paths import write_atomically

    write_atomically(path, document_text(document), what="the results")
