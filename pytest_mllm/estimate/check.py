"""`pytest-mllm-estimate-check`: is the estimator right on your panel? Each member held out in turn.

    pytest-mllm-estimate-check RUN.json [RUN.json …] [--sizes 10% 20% 50%] [--seeds 100] [--json OUT]

For every benchmark the panel files hold and every member with a record of each of its units: the other
members grade the units' difficulty, subsets of each size are drawn under `--seeds` seeds, both by the
stratified design and by a plain random draw of as many units, and the member's full-run headline is
estimated from its own records of each subset. Reported per benchmark and size: the mean absolute error of
each method, their ratio, the share of 95 % intervals holding the full-run value (coverage) and the mean
half-width. Exit status 1 when the stratified intervals' coverage falls below `--min-coverage` (0.93) at
some size: the gate should not be trusted on that panel (a panel too small, too unlike the model, or too
few units drawn).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mllm.estimate.design import METHODS, RANDOM, STRATIFIED, DesignError, Size, Unit, draw, parse_size, strata
from pytest_mllm.estimate.estimator import Estimate, count_path, design_rows, estimate_column, is_rate
from pytest_mllm.estimate.panel import Member, PanelBenchmark, PanelError, read_panel
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import LEVEL, MetricSetup, unit_of

DEFAULT_SIZES = ("10%", "20%", "50%")
MIN_COVERAGE = 0.93


@dataclass(frozen=True)
class Layout:
    """A benchmark's units, grouped by task (in order of first appearance), with their sample ids."""

    units: tuple[Unit, ...]
    ids: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, records: Sequence[Record]) -> Layout:
        grouped: dict[str, list[Record]] = {}
        for record in records:
            grouped.setdefault(unit_of(record), []).append(record)
        by_task: dict[str, list[str]] = {}
        for key, unit in grouped.items():
            by_task.setdefault(unit[0]["task"], []).append(key)
        keys = [key for keys in by_task.values() for key in keys]
        return cls(tuple(Unit(k, grouped[k][0]["task"], len(grouped[k])) for k in keys),
                   tuple(tuple(r["id"] for r in grouped[k]) for k in keys))

    @property
    def samples(self) -> int:
        return sum(u.size for u in self.units)

    def layers(self, records: Sequence[Record]) -> list[list[list[Record]]] | None:
        """A member's records laid out as these units (None when it lacks one of the samples)."""
        by_id = {r["id"]: r for r in records}
        if not all(i in by_id for ids in self.ids for i in ids):
            return None
        layers: dict[str, list[list[Record]]] = {}
        for unit, ids in zip(self.units, self.ids):
            layers.setdefault(unit.task, []).append([by_id[i] for i in ids])
        return list(layers.values())


@dataclass
class Tally:
    """Errors and coverage of one method at one size, over held-out members and seeds."""

    errors: list[float] = field(default_factory=list)
    covered: list[bool] = field(default_factory=list)
    half_widths: list[float] = field(default_factory=list)

    def add(self, estimate: Estimate, truth: float) -> None:
        self.errors.append(abs(estimate.value - truth))
        covered = estimate.low is not None and estimate.low - 1e-12 <= truth <= estimate.high + 1e-12  # type: ignore[operator]
        self.covered.append(covered)
        if estimate.low is not None:
            self.half_widths.append((estimate.high - estimate.low) / 2)  # type: ignore[operator]

    def summary(self) -> dict[str, Any]:
        n = len(self.errors)
        return {"estimates": n, "mae": sum(self.errors) / n if n else None,
                "coverage": sum(self.covered) / n if n else None,
                "half_width": sum(self.half_widths) / len(self.half_widths) if self.half_widths else None}


def draws_of(layout: Layout, difficulty: Mapping[str, float], size: Size, method: str,
             seeds: Sequence[int]) -> list[tuple[list[str | None], dict[str, int]]]:
    """Per seed, each unit's stratum (None: not drawn) and each stratum's units in the benchmark."""
    units = size.units(len(layout.units), layout.samples)
    found = strata(layout.units, difficulty, units, method)
    population = {s.name: len(s.units) for s in found}
    out = []
    for seed in seeds:
        drawn = draw(found, seed)
        out.append(([drawn[u.key].stratum if u.key in drawn else None for u in layout.units], population))
    return out


def check_member(layout: Layout, member: Member, panel: PanelBenchmark, setup: MetricSetup, key: str,
                 sizes: Sequence[Size], seeds: Sequence[int], methods: Sequence[str],
                 tallies: dict[tuple[str, str], Tally], level: float = LEVEL) -> dict[str, Any] | None:
    """Hold `member` out: estimate its full-run `key` from subsets of its records; None when it cannot be held
    out (a sample missing, or the metric not on the count path)."""
    import numpy as np

    layers = layout.layers(member.records)
    counts = count_path(layers, setup) if layers is not None else None
    if counts is None:
        return None
    truth_values = counts.flat(np.ones((1, len(layout.units))))
    if key not in truth_values or np.isnan(truth_values[key][0]):
        return None
    truth = float(truth_values[key][0])
    units = {u.key: ids for u, ids in zip(layout.units, layout.ids)}
    difficulty = panel.difficulty(units, leave_out=member.label)
    row: dict[str, Any] = {"member": member.label, "truth": truth}
    for size in sizes:
        for method in methods:
            tally = tallies.setdefault((size.text, method), Tally())
            mine = Tally()
            designs = draws_of(layout, difficulty, size, method, seeds)
            blocks = [design_rows(st, population) for st, population in designs]
            values = counts.flat(np.vstack(blocks))[key]
            at = 0
            for (st, population), block in zip(designs, blocks):
                column = values[at:at + len(block)]
                at += len(block)
                found = estimate_column(column, st, population, is_rate(key), level)
                tally.add(found, truth)
                mine.add(found, truth)
            row[f"{size.text} {method}"] = mine.summary()
    return row


def check(paths: Sequence[Path], sizes: Sequence[Size], seeds: Sequence[int], methods: Sequence[str] = METHODS,
          only: Sequence[str] = (), level: float = LEVEL) -> dict[str, Any]:
    """The calibration report over the panel in `paths` (see the module's docstring)."""
    panel = read_panel(paths, keep_records=True)
    report: dict[str, Any] = {"panel": panel.digest, "files": [str(p) for p in paths], "seeds": len(seeds),
                              "level": level, "benchmarks": {}}
    for name, bench in panel.benchmarks.items():
        if only and name not in only:
            continue
        complete = [m for m in bench.members if m.records]
        if len(complete) < 3:
            report["benchmarks"][name] = {"skipped": f"{len(complete)} members with records; hold-out needs 3 or more"}
            continue
        reference = max(complete, key=lambda m: len(m.records))
        layout = Layout.of(reference.records)
        setup = MetricSetup.from_document(reference.entry, reference.records)
        key = setup.headline
        tallies: dict[tuple[str, str], Tally] = {}
        members, left = [], []
        for member in complete:
            row = check_member(layout, member, bench, setup, key, sizes, seeds, methods, tallies, level)
            (members.append(row) if row is not None else left.append(member.label))
        if not members and key != "accuracy":
            key = "accuracy"
            for member in complete:
                row = check_member(layout, member, bench, setup, key, sizes, seeds, methods, tallies, level)
                if row is not None:
                    members.append(row)
        report["benchmarks"][name] = {
            "metric": key, "units": len(layout.units), "samples": layout.samples, "members": members,
            "left_out": left,
            "sizes": {size.text: {"units": size.units(len(layout.units), layout.samples),
                                  **{method: tallies[(size.text, method)].summary() for method in methods
                                     if (size.text, method) in tallies}}
                      for size in sizes},
        }
    return report


def lines(report: Mapping[str, Any], min_coverage: float = MIN_COVERAGE) -> tuple[list[str], bool]:
    """The report as text, and whether every stratified coverage reaches `min_coverage`."""
    out = [f"estimate check: panel {report['panel'][:19]}…, {report['seeds']} seeds per held-out member, "
           f"{report['level']:.0%} intervals"]
    ok = True
    for name, bench in report["benchmarks"].items():
        if "skipped" in bench:
            out.append(f"{name}: skipped ({bench['skipped']})")
            continue
        out.append(f"{name}: {bench['metric']}, {bench['units']} units ({bench['samples']} samples), "
                   f"{len(bench['members'])} members held out in turn"
                   + (f"; left out (incomplete records): {', '.join(bench['left_out'])}" if bench["left_out"] else ""))
        out.append(f"  {'size':>6} {'units':>5}  {'MAE strat':>9} {'MAE rand':>9} {'ratio':>6}  "
                   f"{'cover strat':>11} {'cover rand':>10}  {'±strat':>7} {'±rand':>7}")
        for size, found in bench["sizes"].items():
            strat, rand = found.get(STRATIFIED) or {}, found.get(RANDOM) or {}
            ratio = strat["mae"] / rand["mae"] if strat.get("mae") is not None and rand.get("mae") else None
            out.append(f"  {size:>6} {found['units']:>5}  {_num(strat.get('mae')):>9} {_num(rand.get('mae')):>9} "
                       f"{_num(ratio, 2):>6}  {_pct(strat.get('coverage')):>11} {_pct(rand.get('coverage')):>10}  "
                       f"{_num(strat.get('half_width')):>7} {_num(rand.get('half_width')):>7}")
            if strat.get("coverage") is not None and strat["coverage"] < min_coverage:
                ok = False
                out.append(f"  ! {name} at {size}: coverage {strat['coverage']:.1%} < {min_coverage:.0%}: do not trust "
                           "the gate at this size on this panel")
    return out, ok


def _num(value: float | None, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-mllm-estimate-check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("panel", nargs="+", type=Path, help="--mllm-json results files of earlier runs (the panel)")
    parser.add_argument("--sizes", nargs="+", default=list(DEFAULT_SIZES), help="subset sizes (default: 10%% 20%% 50%%)")
    parser.add_argument("--seeds", type=int, default=100, help="draws per held-out member and size (default 100)")
    parser.add_argument("--bench", action="append", default=[], help="check only this benchmark (repeatable)")
    parser.add_argument("--min-coverage", type=float, default=MIN_COVERAGE)
    parser.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        sizes = [parse_size(text) for text in args.sizes]
        report = check(args.panel, sizes, range(args.seeds), only=args.bench)
    except (DesignError, PanelError) as exc:
        print(f"pytest-mllm-estimate-check: error: {exc}", file=sys.stderr)
        return 2
    text, ok = lines(report, args.min_coverage)
    print("\n".join(text))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
