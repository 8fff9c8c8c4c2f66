"""`pytest-mllm-data`: benchmark data fetched ahead of a run, for machines that cannot download.

    pytest-mllm-data fetch MMStar POPE        # download and verify into the data cache
    pytest-mllm-data list                     # the benchmarks with released data, and which are cached

On a connected machine, `fetch` fills the data cache (`--cache DIR`, else $PYTEST_MLLM_DATA_CACHE, else
~/.cache/pytest-mllm/data); copy that folder to the air-gapped machine (or share it) and run there with
HF_HUB_OFFLINE=1 or --mllm-offline. Names are those --mllm-bench takes (bundled names, other tools'
names, spec files). Exit status: 0 when every benchmark's data is in the cache, 1 when one could not be
fetched, 2 for a name no benchmark answers to.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pytest_mllm.engine.fetch import DataCache, FetchError, FetchProgress, default_folder, describe, say_to_stderr
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, bundled_specs, find_spec, load_spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pytest-mllm-data", description=(
        "Fetch benchmarks' released data into pytest-mllm's data cache ahead of a run (for offline machines)."))
    parser.add_argument("--cache", metavar="DIR", type=Path,
                        help="the data cache folder (default $PYTEST_MLLM_DATA_CACHE, else ~/.cache/pytest-mllm/data)")
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download and verify the data of the named benchmarks")
    fetch.add_argument("names", nargs="+", metavar="NAME", help="benchmark names (as --mllm-bench takes) or spec files")
    commands.add_parser("list", help="the bundled benchmarks with released data: where from, and whether cached")
    args = parser.parse_args(argv)
    cache = DataCache(folder=(args.cache or default_folder()).expanduser(), offline=False)
    if args.command == "list":
        return _list(cache)
    try:
        specs = [_spec(name) for value in args.names for name in value.split(",") if name.strip()]
    except SpecError as exc:
        print(f"pytest-mllm-data: {str(exc).replace(' in --mllm-bench', '')}", file=sys.stderr)
        return 2
    progress = FetchProgress(say=say_to_stderr, terminal=sys.stderr)
    failed = 0
    for spec in specs:
        if spec.download is None:
            print(f"pytest-mllm-data: benchmark {spec.name!r} has no released data to fetch (its spec names no "
                  f"data.url or data.hub); give its folder with --mllm-data={spec.name}=DIR", file=sys.stderr)
            failed += 1
            continue
        try:
            folder = cache.fetch(spec.download, progress)
        except FetchError as exc:
            print(f"pytest-mllm-data: benchmark {spec.name!r}: {exc}", file=sys.stderr)
            failed += 1
            continue
        print(f"{spec.name}: {folder}")
    return 1 if failed else 0


def _spec(name: str) -> BenchmarkSpec:
    return load_spec(find_spec(name.strip()))


def _list(cache: DataCache) -> int:
    print(f"data cache: {cache.folder}")
    for key, path in sorted(bundled_specs().items()):
        try:
            spec = load_spec(path)
        except SpecError:
            continue
        if spec.download is None:
            continue
        state = "cached" if cache.has(spec.download) else "not cached"
        others = f" [{', '.join(spec.names[1:])}]" if spec.names[1:] else ""
        print(f"{key}{others}: {state}; {describe(spec.download)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
