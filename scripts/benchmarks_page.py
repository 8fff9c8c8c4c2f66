#!/usr/bin/env python
"""Write docs/benchmarks.md from the bundled spec files (benchmarks/*.yaml).

    python scripts/benchmarks_page.py           # rewrite docs/benchmarks.md
    python scripts/benchmarks_page.py --check   # exit 1 when docs/benchmarks.md is out of date

Everything on the page comes from the specs: the format the loader reads, the files, the
metrics and headline, the tasks and groups, and each spec's `about` section (where users get
the files, the reference implementation its scores reproduce, the released sample count).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pytest_mllm.engine.fetch import FileSource  # noqa: E402
from pytest_mllm.engine.spec import BenchmarkSpec, bundled_specs, load_spec  # noqa: E402

PAGE = REPO / "docs" / "benchmarks.md"
FORMATS = {
    "mme": "MME release folder (images + question files)",
    "mme_results": "MME official results folder",
    "tsv": "VLMEvalKit TSV (base64 images)",
    "parquet": "Hugging Face parquet dataset",
    "jsonl": "JSON Lines",
    "vqa": "Tiny LVLM-eHub VQA JSON",
    "shapes": "drawn on the spot (no files)",
    "vrp_shapes": "drawn on the spot (no files)",
}


def _files(spec: BenchmarkSpec) -> str:
    if spec.loader in ("shapes", "vrp_shapes"):
        return "none"
    found = f"`{spec.data_file}` in the data folder" if spec.data_file else "the data folder"
    return f"{found}; `--mllm-data={spec.name}=DIR` or `{spec.env_var}`"


def _fetched(spec: BenchmarkSpec) -> str:
    """Where the released data is fetched from when no data folder is given."""
    source = spec.download
    if source is None:
        return "—"
    if isinstance(source, FileSource):
        return f"{source.url} (MD5 `{source.md5}`)"
    return (f"the Hugging Face dataset `{source.repo}` at `{source.revision}`"
            + (f", split `{source.split}`" if source.split else "") + " (needs the extra `hub`)")


def _tasks(spec: BenchmarkSpec) -> str:
    tasks = spec.task_order
    if not tasks:
        return "as the data names them"
    listed = ", ".join(f"`{t}`" for t in tasks)
    groups = "; ".join(f"{g}: " + ", ".join(members) for g, members in spec.groups.items())
    return listed + (f" (groups — {groups})" if groups else "")


def render(specs: dict[str, BenchmarkSpec]) -> str:
    lines = [
        "# Bundled benchmarks",
        "",
        "Generated from `benchmarks/*.yaml` by `python scripts/benchmarks_page.py`; do not edit by hand.",
        "Run one with `pytest --mllm=MODEL --mllm-bench=NAME [--mllm-data=NAME=DIR]`, where NAME is the spec",
        "file's name below; without `--mllm-data` a benchmark with released data fetches it once into the data",
        "cache (docs/reference.md: Benchmark data). A spec file elsewhere runs the same way (`--mllm-bench=path/to/spec.yaml`);",
        "`benchmarks/spec.schema.json` describes the format.",
        "",
        "| spec | benchmark | format | headline | matches | samples |",
        "|---|---|---|---|---|---|",
    ]
    for key, spec in specs.items():
        samples = f"{spec.about.samples:,}" if spec.about.samples else "—"
        lines.append(f"| [`{key}`](#{key}) | {spec.name} {spec.version} | {FORMATS.get(spec.loader, spec.loader)} |"
                     f" {spec.headline} | {spec.about.reference or '—'} | {samples} |")
    for key, spec in specs.items():
        lines += [
            "",
            f"## {key}",
            "",
            spec.description,
            "",
            f"- format: {FORMATS.get(spec.loader, spec.loader)} (loader `{spec.loader}`)",
            f"- files: {_files(spec)}",
            f"- get them: {spec.about.source or '—'}",
            f"- fetched on first use (without a data folder): {_fetched(spec)}",
            f"- metrics: {', '.join(spec.metrics)}; headline `{spec.headline}`",
            f"- scored as: {spec.about.reference or '—'}",
            f"- samples: {spec.about.samples or '—'}",
            f"- tasks: {_tasks(spec)}",
        ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check that the page is up to date")
    args = parser.parse_args(argv)
    specs = {key: load_spec(path) for key, path in sorted(bundled_specs().items())}
    page = render(specs)
    if args.check:
        if not PAGE.is_file() or PAGE.read_text(encoding="utf-8") != page:
            print(f"{PAGE.relative_to(REPO)} is out of date: run python scripts/benchmarks_page.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {PAGE.relative_to(REPO)} ({len(specs)} benchmarks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
