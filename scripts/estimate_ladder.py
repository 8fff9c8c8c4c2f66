#!/usr/bin/env python
"""The subset estimate checked on a trained ladder: calibration, and a planted regression's power.

    python scripts/estimate_ladder.py records --ladder DIR [DIR …] --out RECORDS [--scale 5] [--bench NAME_OR_SPEC …]
    python scripts/estimate_ladder.py check --records RECORDS [--seeds 200] [--json OUT]
    python scripts/estimate_ladder.py regression --records RECORDS [--seeds 100] [--size 20%] [--only NAME …] [--json OUT]

`records`: every checkpoint folder of the ladders (`scripts/train_shapes_llava.py --out DIR --save-every K`
writes DIR/stepN and DIR/stageK folders) answers the bundled shapes and vrp_shapes suites (and any spec files
given with --bench; `--scale 5` adds the same generators drawn five times larger, shapes_x5 and vrp_shapes_x5)
through pytest (`--mllm=hf:<folder> --mllm-json`, one thread, a response cache under RECORDS shared by a
model's benchmarks); files already there are kept, and RECORDS/index.json says which run and step each file is.

`check`: each checkpoint held out in turn, the others grading difficulty, its full score estimated at 10 %,
20 % and 50 % under `--seeds` draws, stratified and plain random (`pytest-mllm-estimate-check`'s report).

`regression`: pairs of checkpoints of one training run, the later one the full baseline and the earlier one
the pull request, as the shipped stages make a regression: planted where the earlier checkpoint's full
headline is 2.5–3.5 points below the later one's, null where the two lie within 0.5 points of each other.
For each pair and seed the earlier checkpoint is held out of the panel, its subset at `--size` is drawn
and scored from its own records, and the regression limits are evaluated as a pytest run evaluates them
(`report.results.compute_results`, `scoring.gates.evaluate_regressions`, the estimate's paired comparison):
`BENCH.accuracy=0` (fails when the whole 95 % interval of the drop lies above 0), `BENCH.accuracy=0@0.05`
(when the one-sided 95 % lower bound does) and `BENCH.accuracy=significant`. Reported: the share of planted
pairs × seeds that fail (power) and of null pairs × seeds that fail (false alarms); beside them, for
reference, the same limits on the full runs
(`scoring.significance.PairedComparison`: the whole benchmark, every sample paired; no seed).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mllm.engine.spec import load_spec  # noqa: E402
from pytest_mllm.estimate.check import Layout, check, lines  # noqa: E402
from pytest_mllm.estimate.design import STRATIFIED, parse_size  # noqa: E402
from pytest_mllm.estimate.panel import Member, read_panel  # noqa: E402
from pytest_mllm.estimate.plan import EstimateSettings, draws  # noqa: E402
from pytest_mllm.report.results import compute_results  # noqa: E402
from pytest_mllm.scoring.gates import evaluate_regressions, parse_max_drop  # noqa: E402
from pytest_mllm.scoring.significance import PairedComparison  # noqa: E402
from pytest_mllm.scoring.uncertainty import unit_of  # noqa: E402
from pytest_mllm.sections import paired as section_paired  # noqa: E402

BENCHMARKS = ("shapes", "vrp_shapes")
BUNDLED = Path(__file__).resolve().parents[1] / "benchmarks"


SCALED = {"shapes": ("images_per_task", 40), "vrp_shapes": ("sources", 24)}  # the generators' sizes


def scaled_specs(out: Path, scale: int) -> list[str]:
    """Spec files of the bundled generated suites drawn `scale` times larger (`shapes_x5`: 200 images per task
    instead of 40; `vrp_shapes_x5`: 120 sources instead of 24), written under OUT/specs."""
    import yaml

    folder = out / "specs"
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, (option, size) in SCALED.items():
        spec = yaml.safe_load((BUNDLED / f"{name}.yaml").read_text())
        spec["name"] = f"{name}_x{scale}"
        spec["loader_options"] = {**(spec.get("loader_options") or {}), option: size * scale}
        spec.setdefault("about", {})["samples"] = spec["about"]["samples"] * scale
        path = folder / f"{spec['name']}.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        written.append(str(path.resolve()))
    return written


def make_records(ladders: list[Path], out: Path, benchmarks: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    index_path = out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.is_file() else {}
    for ladder in ladders:
        folders = sorted(p for p in ladder.iterdir() if (p / "card.json").is_file()) if ladder.is_dir() else []
        for folder in folders:
            card = json.loads((folder / "card.json").read_text())
            name = f"{ladder.name}-{folder.name}.json"
            index[name] = {"run": ladder.name, "folder": folder.name, "steps": card["training"]["steps"],
                           "seed": card["training"]["seed"]}
            target = (out / name).resolve()
            if target.is_file():
                continue
            started = time.perf_counter()
            cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm=hf:{folder.resolve()}",
                   *(f"--mllm-bench={b}" for b in benchmarks), f"--mllm-json={target}",
                   f"--mllm-cache-dir={out.resolve() / 'cache'}"]
            result = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
            if not target.is_file():
                raise RuntimeError(f"{' '.join(cmd)} failed:\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}")
            print(f"{name}: {time.perf_counter() - started:.0f} s", flush=True)
            index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")


def record_files(records: Path) -> tuple[list[Path], dict[str, Any]]:
    index = json.loads((records / "index.json").read_text())
    files = [records / name for name in sorted(index, key=lambda n: (index[n]["run"], index[n]["steps"]))]
    return [f for f in files if f.is_file()], index


def run_check(records: Path, seeds: int, out: Path | None) -> None:
    files, _ = record_files(records)
    started = time.perf_counter()
    report = check(files, [parse_size(s) for s in ("10%", "20%", "50%")], range(seeds))
    text, ok = lines(report)
    print("\n".join(text))
    print(f"({len(files)} panel files, {time.perf_counter() - started:.0f} s; coverage ≥ 93 % at every size: {ok})")
    if out:
        out.write_text(json.dumps(report, indent=1) + "\n")


def regression(records: Path, seeds: int, size_text: str, out: Path | None, only: list[str] | None = None) -> None:
    files, index = record_files(records)
    panel = read_panel(files, keep_records=True)
    size = parse_size(size_text)
    limits = {"=0 (whole 95 % interval)": "{b}.accuracy=0", "=0@0.05 (one-sided 95 %)": "{b}.accuracy=0@0.05",
              "=significant": "{b}.accuracy=significant"}
    report: dict[str, Any] = {"size": size_text, "seeds": seeds, "panel": panel.digest, "benchmarks": {}}
    started = time.perf_counter()
    for bench in sorted(panel.benchmarks):
        if only and bench not in only:
            continue
        members = {m.source.name: m for m in panel.benchmark(bench).members}
        spec = load_spec(Path(next(iter(members.values())).entry["spec"]))
        full = {name: compute_results({bench: spec}, _ordered(m.records))[bench] for name, m in members.items()}
        headline = {name: r.metrics[spec.headline] for name, r in full.items()}
        pairs: dict[str, list[tuple[str, str]]] = {"planted": [], "null": []}
        for base in members:
            for head in members:
                same_run = index[base]["run"] == index[head]["run"]
                if base == head or not same_run or index[head]["steps"] >= index[base]["steps"]:
                    continue
                gap = 100 * (headline[base] - headline[head])
                if 2.5 <= gap <= 3.5:
                    pairs["planted"].append((base, head))
                elif abs(gap) <= 0.5:
                    pairs["null"].append((base, head))
        layout = Layout.of(next(iter(members.values())).records)
        units = list(layout.units)
        ids = {u.key: list(i) for u, i in zip(layout.units, layout.ids)}
        found: dict[str, Any] = {}
        for kind, chosen in pairs.items():
            fails = {name: 0 for name in limits}
            full_fails = {name: 0 for name in limits}
            drops: list[float] = []
            for base, head in chosen:
                baseline = {bench: full[base].metrics}
                head_member: Member = members[head]
                whole = PairedComparison(full[base].records, full[head].records, full[head].setup)
                for name, limit in limits.items():
                    verdicts = evaluate_regressions([parse_max_drop(limit.format(b=bench))], {bench: full[head].metrics},
                                                    baseline, {bench: spec.headline}, lambda _, whole=whole: whole)
                    full_fails[name] += verdicts[0].verdict == "fail"
                for seed in range(seeds):
                    settings = EstimateSettings(size, panel, STRATIFIED, seed)
                    drawn = draws(settings, bench, units, ids, leave_out=head_member.label)
                    subset = [{**r, "estimate": drawn[unit_of(r)]} for r in _ordered(head_member.records)
                              if unit_of(r) in drawn]
                    result = compute_results({bench: spec}, subset)[bench]
                    drops.append(headline[base] - result.metrics[f"estimate.{spec.headline}"])

                    def paired(_: str, result: Any = result, base_member: Member = members[base]) -> Any:
                        return section_paired(base_member.records, result.records, result.setup)

                    for name, limit in limits.items():
                        verdicts = evaluate_regressions([parse_max_drop(limit.format(b=bench))], {bench: result.metrics},
                                                        baseline, {bench: spec.headline}, paired)
                        fails[name] += verdicts[0].verdict == "fail"
            trials = len(chosen) * seeds
            found[kind] = {"pairs": [[index[b]["folder"], index[h]["folder"], round(100 * (headline[b] - headline[h]), 2)]
                                     for b, h in chosen],
                           "trials": trials, "fail_rate": {n: (f / trials if trials else None) for n, f in fails.items()},
                           "full_run_fail_rate": {n: (f / len(chosen) if chosen else None) for n, f in full_fails.items()},
                           "mean_estimated_drop": sum(drops) / len(drops) if drops else None}
        report["benchmarks"][bench] = found
        for kind in ("planted", "null"):
            f = found[kind]
            rates = ", ".join(f"{n}: {100 * r:.1f} %" if r is not None else f"{n}: –" for n, r in f["fail_rate"].items())
            what = "power (planted 2.5–3.5 pt drops)" if kind == "planted" else "false alarms (|gap| ≤ 0.5 pt)"
            whole = ", ".join(f"{n}: {100 * r:.1f} %" if r is not None else f"{n}: –"
                              for n, r in f["full_run_fail_rate"].items())
            print(f"{bench} at {size_text}: {what}: {len(f['pairs'])} pairs × {seeds} seeds = {f['trials']} trials; "
                  f"gate fails — {rates}; on the full runs — {whole}", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")
    if out:
        out.write_text(json.dumps(report, indent=1) + "\n")


def _ordered(records: Any) -> list[dict[str, Any]]:
    return [{**r, "order": n} for n, r in enumerate(records)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("records")
    rec.add_argument("--ladder", type=Path, nargs="+", required=True)
    rec.add_argument("--out", type=Path, required=True)
    rec.add_argument("--bench", nargs="+", default=list(BENCHMARKS), help="bundled names or spec files")
    rec.add_argument("--scale", type=int, default=0, metavar="K",
                     help="also the bundled generated suites drawn K times larger (shapes_xK, vrp_shapes_xK)")
    chk = commands.add_parser("check")
    chk.add_argument("--records", type=Path, required=True)
    chk.add_argument("--seeds", type=int, default=200)
    chk.add_argument("--json", type=Path)
    reg = commands.add_parser("regression")
    reg.add_argument("--records", type=Path, required=True)
    reg.add_argument("--seeds", type=int, default=100)
    reg.add_argument("--size", default="20%")
    reg.add_argument("--json", type=Path)
    reg.add_argument("--only", nargs="+", help="these benchmarks of the records only")
    args = parser.parse_args(argv)
    if args.command == "records":
        benches = [str(Path(b).resolve()) if b.endswith(".yaml") else b for b in args.bench]
        make_records(args.ladder, args.out, benches + (scaled_specs(args.out, args.scale) if args.scale else []))
    elif args.command == "check":
        run_check(args.records, args.seeds, args.json)
    else:
        regression(args.records, args.seeds, args.size, args.json, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
