"""The controller's view of a run: records gathered from reports → per-benchmark metrics → JSON."""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_mllm import __version__
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.record import Record
from pytest_mllm.scoring.gates import Verdict, flatten
from pytest_mllm.scoring.metrics import benchmark_metrics


@dataclass
class BenchmarkResult:
    """Metrics of one benchmark in this run."""

    spec: BenchmarkSpec
    records: list[Record]
    scopes: dict[str, Any]
    metrics: dict[str, float]  # flat, the namespace of gates

    @property
    def duration_s(self) -> float:
        return sum(r.get("duration_s") or 0.0 for r in self.records)


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
        results[name] = BenchmarkResult(spec, ordered, scopes, flatten(scopes, spec.headline))
    return results


def results_document(results: dict[str, BenchmarkResult], verdicts: list[Verdict],
                     settings: dict[str, Any]) -> dict[str, Any]:
    """The `--mllm-json` document: settings, metrics per benchmark, gates, per-sample records."""
    return {
        "pytest_mllm": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "settings": settings,
        "benchmarks": {
            name: {
                "spec": str(r.spec.path),
                "version": r.spec.version,
                "headline": r.spec.headline,
                "metrics": r.metrics,
                "scopes": r.scopes,
            }
            for name, r in results.items()
        },
        "gates": [
            {"gate": v.gate.text, "value": v.value, "limit": v.limit, "verdict": v.verdict, "note": v.note}
            for v in verdicts
        ],
        "records": [record for r in results.values() for record in r.records],
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Write atomically, so an interrupted write never leaves a half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
