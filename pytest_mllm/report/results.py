"""The controller's view of a run: records gathered from reports → per-benchmark metrics → JSON."""

from __future__ import annotations

import json
import platform
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_mllm import __version__
from pytest_mllm.scoring.gates import Verdict, flatten
from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.engine.spec import BenchmarkSpec, load_spec
from pytest_mllm.tpeval.report import tp_metrics
from pytest_mllm.record import Record



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


@dataclass
class RunResults:
    """Everything gathered from the test reports of one session."""

    records: dict[str, list[Record]] = field(default_factory=dict)
    spec_paths: dict[str, Path] = field(default_factory=dict)

    def add(self, record: Record, spec_path: str) -> None:
        """Keep one record (from any worker); the spec says how its benchmark is scored."""
        self.records.setdefault(record["benchmark"], []).append(record)
        self.spec_paths.setdefault(record["benchmark"], Path(spec_path))

    def compute(self) -> dict[str, BenchmarkResult]:
        """Metrics per benchmark, over records in collection order (identical under xdist)."""
        results: dict[str, BenchmarkResult] = {}
        for name in sorted(self.records):
            spec = load_spec(self.spec_paths[name])
            records = sorted(self.records[name], key=lambda r: r["order"])
            scopes = benchmark_metrics(records, spec.metrics, spec.groups, spec.task_order)
            tp_eval = tp_metrics(records)
            if tp_eval is not None:
                scopes["tp_eval"] = tp_eval
            results[name] = BenchmarkResult(spec, records, scopes, flatten(scopes, spec.headline))
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
