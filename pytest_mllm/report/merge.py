"""`pytest-mllm-merge OUT.json SHARD1.json SHARD2.json …`: the `--mllm-json` files of a run split with
`--mllm-shard=I/N` joined into the results document one machine would have written.

The metrics are recomputed from the union of the shards' records in collection order (each record
carries its `order`), so they are those of a single run, intervals included. Before that the shards
are checked: one results file per shard 1…N of the same N, the same pytest-mllm version, model,
benchmarks (spec, version and the digest of the data read) and settings, every sample once (none in two
files, none missing: each shard knows how many records the whole selection makes). A shard may hold no
sample at all (a small benchmark split over many machines). Gates given here decide the exit
status as they would at the end of a run (`scoring/gates.py`): 0 all passed, 1 a gate failed,
2 the shards cannot be merged (the message names the file). A shard that was not a full run (limited, or
interrupted yet whole) makes the merged run not one either: its reasons are carried over, and no gate passes.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Settings that may differ between shards: they do not change the answers or the scores.
_PER_SHARD = ("shard", "gates", "baseline", "few_deselected", "cache", "model_loads")  # model_loads: each machine's own


class MergeError(ValueError):
    """Shards that cannot be merged; the message names the file and what is wrong."""


def _read(path: Path) -> dict[str, Any]:
    from pytest_mllm.report.compare import CompareError, load_results

    try:
        document = load_results(path)
    except CompareError as exc:
        raise MergeError(str(exc)) from None
    if not isinstance(document.get("records"), list) or not isinstance(document.get("settings"), dict):
        raise MergeError(f"{path}: not a --mllm-json results file (no settings and records)")
    shard = document["settings"].get("shard")
    if not isinstance(shard, dict) or not isinstance(shard.get("index"), int) or not isinstance(shard.get("count"), int):
        raise MergeError(f"{path}: not a shard's results: it was written without --mllm-shard=I/N")
    return document


def _comparable(document: dict[str, Any]) -> dict[str, Any]:
    settings = {k: v for k, v in document["settings"].items() if k not in _PER_SHARD}
    if isinstance(settings.get("benchmarks"), list):  # spec files by name: machines install them in other folders
        settings["benchmarks"] = [Path(str(p)).name for p in settings["benchmarks"]]
    return {"pytest_mllm": document.get("pytest_mllm"), "settings": settings}


def _benchmark_view(entry: dict[str, Any]) -> dict[str, Any]:
    """What two shards holding one benchmark must agree on: its spec file's name and version (a shard with
    none of its samples holds no entry for it)."""
    return {"spec": Path(str(entry.get("spec"))).name, "version": entry.get("version")}


def _data_digest(entry: dict[str, Any]) -> str | None:
    data = entry.get("data")
    return data.get("digest") if isinstance(data, dict) else None


def _difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The first setting in which two comparable views differ, as 'key: A vs B'."""
    for section in ("pytest_mllm", "settings"):
        x, y = a[section], b[section]
        if not isinstance(x, dict) or not isinstance(y, dict):
            if x != y:
                return f"{section}: {x!r} vs {y!r}"
            continue
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                return f"{section}.{key}: {x.get(key, '(absent)')!r} vs {y.get(key, '(absent)')!r}"
    return "?"


def check_shards(paths: Sequence[Path], documents: Sequence[dict[str, Any]]) -> None:
    """MergeError unless the documents are the N shards of one run, each once, with every sample once."""
    first, first_view = paths[0], _comparable(documents[0])
    count = documents[0]["settings"]["shard"]["count"]
    seen: dict[int, Path] = {}
    for path, document in zip(paths, documents):
        shard = document["settings"]["shard"]
        if shard["count"] != count:
            raise MergeError(f"{path}: shard {shard['index']}/{shard['count']}, but {first} is one of {count} shards")
        if shard["index"] in seen:
            raise MergeError(f"{path}: shard {shard['index']}/{count} is given twice (also {seen[shard['index']]})")
        seen[shard["index"]] = path
        view = _comparable(document)
        if view != first_view:
            raise MergeError(f"{path}: not the same run as {first}: {_difference(first_view, view)}")
        _check_benchmarks(path, document, paths, documents)
        if shard.get("expected_records") != documents[0]["settings"]["shard"].get("expected_records"):
            raise MergeError(f"{path}: its run selected other tests than {first}'s ("
                             f"{shard.get('expected_records')} vs {documents[0]['settings']['shard'].get('expected_records')} "
                             "records per benchmark): run every shard with the same -k, -m and test paths")
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise MergeError(f"shard{'s' if len(missing) > 1 else ''} {', '.join(f'{i}/{count}' for i in missing)} "
                         f"missing: give the --mllm-json file of every one of the {count} shards")
    where: dict[tuple[str, str], Path] = {}
    for path, document in zip(paths, documents):
        for record in document["records"]:
            key = (record.get("benchmark"), record.get("id"))
            if key in where:
                raise MergeError(f"{path}: sample {key[0]}::{key[1]} is also in {where[key]}: a sample must be in "
                                 "one shard only (were the shards run with different --mllm-shard counts?)")
            where[key] = path
    expected = documents[0]["settings"]["shard"].get("expected_records") or {}
    got = Counter(benchmark for benchmark, _ in where)
    for benchmark, wanted in sorted(expected.items()):
        if wanted >= 0 and got.get(benchmark, 0) != wanted:
            short = {str(p): sum(1 for r in d["records"] if r.get("benchmark") == benchmark)
                     for p, d in zip(paths, documents)}
            raise MergeError(f"benchmark {benchmark!r}: {wanted - got.get(benchmark, 0)} sample(s) missing: the run "
                             f"selected {wanted}, the shards hold {got.get(benchmark, 0)} ({short}); re-run the shard "
                             "that was interrupted")


def _check_benchmarks(path: Path, document: dict[str, Any], paths: Sequence[Path],
                      documents: Sequence[dict[str, Any]]) -> None:
    """Each benchmark `document` holds is the one the earlier shards holding it ran: the same spec and
    version, and the same data (the digest of the files and rows read), else MergeError naming both files."""
    for name, entry in document["benchmarks"].items():
        for other_path, other in zip(paths, documents):
            if other is document:
                break
            earlier = other["benchmarks"].get(name)
            if earlier is None:
                continue
            if _benchmark_view(earlier) != _benchmark_view(entry):
                raise MergeError(f"{path}: not the same run as {other_path}: benchmarks.{name}: "
                                 f"{_benchmark_view(earlier)!r} vs {_benchmark_view(entry)!r}")
            before, now = _data_digest(earlier), _data_digest(entry)
            if before and now and before != now:
                raise MergeError(f"{path} and {other_path} ran benchmark {name!r} on different data (data digest "
                                 f"{now} vs {before}: {_data_files(entry)} vs {_data_files(earlier)}); run every "
                                 "shard on the same data")


def _data_files(entry: dict[str, Any]) -> str:
    data = entry.get("data") or {}
    files = ", ".join(f"{name} {digest}" for name, digest in (data.get("files") or {}).items())
    return f"{data.get('rows')} rows" + (f", {files}" if files else "")


def _spec(name: str, entry: dict[str, Any], path: Path) -> Any:
    """The spec a shard's benchmark ran with: its file, else the bundled one of that name and version."""
    from pytest_mllm.engine.spec import SpecError, find_spec, load_spec

    candidates = [Path(entry["spec"])] if entry.get("spec") else []
    try:
        candidates.append(find_spec(name))
    except SpecError:
        pass
    for candidate in candidates:
        try:
            spec = load_spec(candidate)
        except (SpecError, OSError):
            continue
        if spec.name == name and spec.version == entry.get("version"):
            return spec
    raise MergeError(f"{path}: the spec of benchmark {name!r} (version {entry.get('version')!r}) is not at "
                     f"{entry.get('spec')} nor bundled: run the merge where the spec file is")


def merge(paths: Sequence[Path], gates: Any = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(document, results): the merged results document and its per-benchmark results."""
    from pytest_mllm.report.results import baseline_pairing, compute_results, results_document, shortfalls_of
    from pytest_mllm.scoring.gates import GateSettings

    if not paths:
        raise MergeError("no shard files given")
    documents = [_read(p) for p in paths]
    check_shards(paths, documents)
    entries: dict[str, tuple[dict[str, Any], Path]] = {}  # each benchmark as the first shard holding it ran it
    for path, document in zip(paths, documents):
        for name, entry in document["benchmarks"].items():
            entries.setdefault(name, (entry, path))
    specs = {name: _spec(name, entry, path) for name, (entry, path) in entries.items()}
    for path, document in zip(paths, documents):
        for record in document["records"]:
            if record.get("benchmark") not in specs:
                raise MergeError(f"{path}: a record of benchmark {record.get('benchmark')!r}, which no shard scored")
    records = [record for document in documents for record in document["records"]]
    results = compute_results(specs, records)
    for name, result in results.items():
        result.data = entries[name][0].get("data")
    gates = gates or GateSettings(gates=[], max_drops=[])
    shortfalls = list({s.reason: s for document in documents for s in shortfalls_of(document)}.values())
    verdicts = gates.verdicts({n: r.metrics for n, r in results.items()},
                              {n: [*r.spec.task_order, *r.spec.groups] for n, r in results.items()},
                              {n: r.spec.headline for n, r in results.items()},
                              paired=baseline_pairing(gates, results), shortfalls=shortfalls,
                              parts={n: r.scopes for n, r in results.items()},
                              data={n: (r.data or {}).get("digest") for n, r in results.items()})
    settings = {k: v for k, v in documents[0]["settings"].items() if k != "shard"}
    settings["few_deselected"] = sum(d["settings"].get("few_deselected") or 0 for d in documents)
    settings["model_loads"] = [load for d in documents for load in d["settings"].get("model_loads") or []]
    settings["gates"] = [g.text for g in gates.gates]
    settings["baseline"] = str(gates.baseline) if gates.baseline else None
    document = results_document(results, verdicts, settings, shortfalls)
    document["merged_from"] = [str(p) for p in paths]
    return document, results


def main(argv: Sequence[str] | None = None) -> int:
    """The `pytest-mllm-merge` command."""
    from pytest_mllm.scoring.gates import (EXAMPLE_GATES, GateSettings, GateSyntaxError, load_baseline, parse_gate,
                                          parse_max_drop)

    parser = argparse.ArgumentParser(
        prog="pytest-mllm-merge",
        description="Join the --mllm-json files of a run split with --mllm-shard=I/N into one results file, "
                    "with the metrics of a single run, and decide gates on it.")
    parser.add_argument("out", type=Path, help="the merged results file to write (JSON)")
    parser.add_argument("shards", nargs="+", type=Path, help="the shards' --mllm-json files, one per shard")
    parser.add_argument("--gate", action="append", default=[], metavar="EXPR", help=f"e.g. {EXAMPLE_GATES}")
    parser.add_argument("--gate-skip-missing", action="store_true",
                        help="a gate whose benchmark or task did not run is 'not run' instead of failed")
    parser.add_argument("--baseline", type=Path, help="earlier --mllm-json results for regression limits")
    parser.add_argument("--max-drop", action="append", default=[], metavar="[METRIC=]DROP",
                        help="largest allowed drop against --baseline, as --mllm-max-drop")
    parser.add_argument("--html", type=Path, help="also write the HTML report here")
    args = parser.parse_args(argv)
    from pytest_mllm.engine.output_paths import Input, Output, OutputError, OutputWriteError, check_outputs

    try:
        check_outputs([Output("OUT", args.out), *([Output("--html", args.html)] if args.html else [])],
                      [*(Input(f"shard file {n} ({path.name})", path) for n, path in enumerate(args.shards, 1)),
                       *([Input("the --baseline file", args.baseline)] if args.baseline else [])])
        drops = [parse_max_drop(d) for d in args.max_drop]
        if drops and not args.baseline:
            raise MergeError("--max-drop needs --baseline=PATH (a --mllm-json file)")
        if args.baseline:
            load_baseline(args.baseline)
            drops = drops or [parse_max_drop("0")]
        gates = GateSettings(gates=[parse_gate(g) for g in args.gate], max_drops=drops, baseline=args.baseline,
                             skip_missing=args.gate_skip_missing)
        document, results = merge(args.shards, gates)
    except (MergeError, GateSyntaxError, OutputError) as exc:
        print(f"pytest-mllm-merge: error: {exc}", file=sys.stderr)
        return 2
    from pytest_mllm.report.results import write_json

    try:
        write_json(args.out, document)
    except OutputWriteError as exc:
        print(f"pytest-mllm-merge: error: {exc}", file=sys.stderr)
        return 2
    for name, result in results.items():
        headline = result.spec.headline
        value = result.metrics.get(headline)
        shown = f"{value:.4g}" if isinstance(value, (int, float)) else "n/a"
        print(f"{name}: {headline} {shown} ({len(result.records)} samples from {len(args.shards)} shards)")
    for entry in document["incomplete"]:
        print(f"incomplete run: {entry['reason']}")
    for verdict in document["gates"]:
        print(f"gate {verdict['gate']}: {verdict['verdict']}" + (f" ({verdict['note']})" if verdict["note"] else ""))
    print(f"merged results written to {args.out}")
    if args.html:
        from pytest_mllm.report.html import write_html

        try:
            write_html(document, args.html)
        except OutputWriteError as exc:
            print(f"pytest-mllm-merge: error: {exc}", file=sys.stderr)
            return 2
        print(f"HTML report written to {args.html}")
    return 1 if any(v["verdict"] == "fail" for v in document["gates"]) else 0


if __name__ == "__main__":
    sys.exit(main())
