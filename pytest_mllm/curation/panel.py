"""Judges' answers: `--mllm-json` results files reduced to one verdict per sample.

A record with status "correct" is right, "incorrect" wrong; "error" (a model crash, a missing
recorded answer, an unreadable image) and a sample the file has no record of are unknown —
never wrong. VRP variant records are left out: curation works on the benchmark's own samples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, cast

from pytest_mllm.record import Record


class PanelError(ValueError):
    """A results file that cannot serve as a judge; the message names the file."""


@dataclass
class Run:
    """One model's answers to one benchmark."""

    label: str  # the model as the user named it
    source: Path  # the --mllm-json file
    records: dict[str, Record] = field(default_factory=dict)  # sample id → record
    images_withheld: bool = False

    def verdict(self, sample_id: str) -> bool | None:
        """True (correct), False (incorrect) or None (errored or not answered)."""
        record = self.records.get(sample_id)
        status = record.get("status") if record else None
        return True if status == "correct" else False if status == "incorrect" else None

    @property
    def verdicts(self) -> dict[str, bool | None]:
        return {sample_id: self.verdict(sample_id) for sample_id in self.records}

    def answer(self, sample_id: str) -> dict[str, Any]:
        """What this judge said about a sample, for the review list."""
        record: Mapping[str, Any] = self.records.get(sample_id) or {}
        return {"model": self.label, "status": record.get("status", "missing"), "response": record.get("response"),
                "parsed": record.get("parsed"), "error": record.get("error")}


def read_document(path: Path) -> dict[str, Any]:
    """A `--mllm-json` document; PanelError says what is wrong with the file."""
    from pytest_mllm.report.compare import CompareError, load_results

    try:
        return load_results(path)
    except CompareError as exc:
        raise PanelError(str(exc)) from None


def load_run(path: Path, benchmark: str, label: str | None = None) -> Run:
    """The records of `benchmark` in one results file, keyed by sample id."""
    document = read_document(path)
    settings = document.get("settings") or {}
    records = [r for r in document["records"] if isinstance(r, dict) and r.get("benchmark") == benchmark
               and r.get("variant") is None and isinstance(r.get("id"), str)]
    if not records:
        found = sorted({str(r.get("benchmark")) for r in document["records"] if isinstance(r, dict)})
        raise PanelError(f"{path}: no records of benchmark {benchmark!r} (it holds: {', '.join(found) or 'none'}); "
                         "run the model on this benchmark with --mllm-json")
    return Run(label or str(settings.get("model") or path.stem), path, {r["id"]: cast(Record, r) for r in records},
               bool(settings.get("images_withheld")))
