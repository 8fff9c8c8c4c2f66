"""The panel: earlier runs' per-sample verdicts, from which each unit's difficulty is read.

A panel file is either a `--mllm-json` results file (one model's records of one or more benchmarks: a
member of the panel) or a curation manifest (`pytest-mllm-curate`'s manifest.json): its panel's results
files when they can still be read, else the count of judges that answered each sample correctly.

A record "correct" is right, "incorrect" wrong, "error" unknown (never wrong). A unit's difficulty is the
share of the panel answering its questions right: per member, the share of the unit's scored questions
it got right; averaged over the members that scored any. The digest names the panel's content (members,
their verdicts, the manifest's counts), whatever the files' names, order or layout.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mllm.record import Record

Verdict = bool | None  # True right, False wrong, None unknown (errored)


class PanelError(ValueError):
    """A panel file that cannot be read as one; the message names the file and the fix."""


@dataclass(frozen=True)
class Member:
    """One model's verdicts on one benchmark."""

    label: str
    source: Path
    verdicts: Mapping[str, Verdict]  # sample id → verdict
    records: tuple[Record, ...] = ()  # the records themselves, kept only when asked (the calibration check)
    entry: Mapping[str, Any] = field(default_factory=dict)  # the results file's entry of the benchmark (idem)


@dataclass(frozen=True)
class PanelBenchmark:
    """What the panel knows of one benchmark: its members' verdicts, or a manifest's share of right judges."""

    name: str
    members: tuple[Member, ...] = ()
    shares: Mapping[str, float] = field(default_factory=dict)  # sample id → share of the panel right (manifests)

    @property
    def sample_ids(self) -> set[str]:
        return {i for m in self.members for i in m.verdicts} | set(self.shares)

    def difficulty(self, units: Mapping[str, Sequence[str]], leave_out: str | None = None) -> dict[str, float]:
        """{unit: share of the panel answering it right} for the units (unit → its sample ids) the panel knows;
        `leave_out`: a member's label left out (the calibration check's held-out model)."""
        members = [m for m in self.members if m.label != leave_out]
        found: dict[str, float] = {}
        for unit, ids in units.items():
            values = [value for m in members if (value := _share_right(m.verdicts, ids)) is not None]
            if not values:
                values = [self.shares[i] for i in ids if i in self.shares]
            if values:
                found[unit] = sum(values) / len(values)
        return found


@dataclass(frozen=True)
class Panel:
    """Every benchmark the panel files hold, and the digest of their content."""

    benchmarks: Mapping[str, PanelBenchmark]
    files: tuple[Path, ...]
    digest: str  # "sha256:<hex>"

    def benchmark(self, name: str) -> PanelBenchmark:
        """The panel's part for one benchmark; PanelError naming the files when it has none."""
        found = self.benchmarks.get(name)
        if found is None:
            held = ", ".join(sorted(self.benchmarks)) or "none"
            raise PanelError(f"the estimate panel ({', '.join(map(str, self.files))}) has no records of benchmark "
                             f"{name!r} (it holds: {held}); add a --mllm-json results file of a run on {name!r}")
        return found


def _share_right(verdicts: Mapping[str, Verdict], ids: Sequence[str]) -> float | None:
    known = [v for v in (verdicts.get(i) for i in ids) if v is not None]
    return sum(known) / len(known) if known else None


def verdict_of(record: Mapping[str, Any]) -> Verdict:
    status = record.get("status")
    return True if status == "correct" else False if status == "incorrect" else None


def read_panel(paths: Sequence[Path], keep_records: bool = False) -> Panel:
    """The panel in these files (results files and manifests, in any mix); PanelError names a bad file."""
    if not paths:
        raise PanelError("no panel file given: name earlier runs' --mllm-json results files (or a curation "
                         "manifest.json) with --mllm-estimate-panel")
    members: dict[str, list[Member]] = {}
    shares: dict[str, dict[str, float]] = {}
    for path in paths:
        document = _read_json(path)
        if _is_manifest(document):
            bench, found, runs = _manifest(path, document)
            readable = [run for run in runs if run.is_file()]
            if runs and len(readable) == len(runs):
                for run in readable:
                    _add_results(members, run, _read_json(run), keep_records)
            else:
                shares.setdefault(bench, {}).update(found)
        else:
            _add_results(members, path, document, keep_records)
    names = sorted(set(members) | set(shares))
    benchmarks = {name: PanelBenchmark(name, tuple(_labelled(members.get(name, []))), shares.get(name, {}))
                  for name in names}
    return Panel(benchmarks, tuple(paths), _digest(benchmarks))


def _read_json(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PanelError(f"estimate panel file {path}: cannot read it ({exc.strerror or exc})") from None
    except (ValueError, RecursionError) as exc:
        raise PanelError(f"estimate panel file {path}: not JSON ({exc}); give --mllm-json results files or a "
                         "curation manifest.json") from None
    if not isinstance(document, dict):
        raise PanelError(f"estimate panel file {path}: not a JSON object; give --mllm-json results files or a "
                         "curation manifest.json")
    return document


def _is_manifest(document: Mapping[str, Any]) -> bool:
    return isinstance(document.get("kept"), list) and isinstance(document.get("settings"), dict) \
        and "benchmark" in document["settings"]


def _manifest(path: Path, document: Mapping[str, Any]) -> tuple[str, dict[str, float], list[Path]]:
    """(benchmark, {sample id: share of the panel right}, the panel's results files) of a curation manifest."""
    settings = document["settings"]
    bench = settings.get("benchmark")
    panel_size = (settings.get("thresholds") or {}).get("panel")
    if not isinstance(bench, str) or not isinstance(panel_size, int) or panel_size < 1:
        raise PanelError(f"estimate panel file {path}: a curation manifest without its benchmark or panel size "
                         "(settings.benchmark, settings.thresholds.panel); write it again with pytest-mllm-curate")
    shares: dict[str, float] = {}
    for entry in [*(document.get("kept") or ()), *(document.get("dropped") or ())]:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        known = panel_size - int(entry.get("unknown") or 0)
        if isinstance(entry.get("correct"), int) and known > 0:
            shares[entry["id"]] = entry["correct"] / known
    runs = [Path(str(run["results"])) for run in settings.get("panel") or () if isinstance(run, dict)
            and run.get("results")]
    return bench, shares, [run if run.is_absolute() else path.parent / run for run in runs]


def _add_results(members: dict[str, list[Member]], path: Path, document: Mapping[str, Any], keep: bool) -> None:
    records = document.get("records")
    if not isinstance(records, list) or not isinstance(document.get("benchmarks"), dict):
        raise PanelError(f"estimate panel file {path}: not a --mllm-json results file (no 'benchmarks' and "
                         "'records'); write one with --mllm-json")
    label = str((document.get("settings") or {}).get("model") or path.stem)
    by_bench: dict[str, list[Record]] = {}
    for record in records:
        if isinstance(record, dict) and isinstance(record.get("id"), str) and isinstance(record.get("benchmark"), str):
            by_bench.setdefault(record["benchmark"], []).append(record)  # type: ignore[arg-type]
    if not by_bench:
        raise PanelError(f"estimate panel file {path}: no per-sample records; write it with --mllm-json (a run's "
                         "records are the panel's data)")
    entries = document["benchmarks"]
    for bench, found in by_bench.items():
        entry = entries.get(bench) if keep and isinstance(entries.get(bench), dict) else {}
        members.setdefault(bench, []).append(Member(label, path, {r["id"]: verdict_of(r) for r in found},
                                                     tuple(found) if keep else (), entry))


def _labelled(members: Iterable[Member]) -> list[Member]:
    """Members with distinct labels: a model named twice gets its file's name beside it."""
    members = list(members)
    labels = [m.label for m in members]
    return [m if labels.count(m.label) == 1 else Member(f"{m.label} ({m.source.name})", m.source, m.verdicts,
                                                        m.records, m.entry) for m in members]


def _digest(benchmarks: Mapping[str, PanelBenchmark]) -> str:
    content = {name: {"members": sorted([m.label, sorted(m.verdicts.items())] for m in b.members),
                      "shares": sorted(b.shares.items())} for name, b in sorted(benchmarks.items())}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
