"""The curated benchmark: curated.yaml (the original spec + `subset:`) and curated_ids.txt.

The curated spec keeps every field of the original, renamed `<name>_curated`, with a
description of how it was made and `data.root` set to the original's resolved data root as an
absolute path, so it runs from any folder (generated benchmarks such as shapes have no root).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, load_spec

SPEC_FILE = "curated.yaml"
IDS_FILE = "curated_ids.txt"


def curated_name(spec: BenchmarkSpec) -> str:
    return f"{spec.name}_curated"


def write_curated(out: Path, spec: BenchmarkSpec, data_root: Path | None, kept_ids: Sequence[str],
                  description: str) -> Path:
    """Write curated_ids.txt and curated.yaml into `out`; returns the spec's path."""
    import yaml

    raw = yaml.safe_load(spec.path.read_text(encoding="utf-8"))
    curated = dict(raw)
    curated["name"] = curated_name(spec)
    curated["description"] = description
    curated["subset"] = IDS_FILE
    if spec.needs_data and data_root is not None:
        curated["data"] = {**(raw.get("data") or {}), "root": str(data_root.resolve())}
    order = ["name", "version", "description", "loader", "data", "subset"]
    curated = {**{k: curated[k] for k in order if k in curated}, **{k: v for k, v in curated.items() if k not in order}}
    from pytest_mllm.engine.output_paths import write_atomically

    ids_path = out / IDS_FILE
    write_atomically(ids_path, f"# {len(kept_ids)} sample ids of benchmark {spec.name!r} kept by pytest-mllm-curate; "
                     "see manifest.json\n" + "".join(f"{i}\n" for i in kept_ids), what="the curated ids")
    spec_path = out / SPEC_FILE
    header = (f"# Curated from {spec.path} by pytest-mllm-curate (see manifest.json and report.md).\n"
              f"# Run it: pytest --mllm=MODEL --mllm-bench={spec_path}\n")
    write_atomically(spec_path, header + yaml.safe_dump(curated, sort_keys=False, allow_unicode=True, width=110),
                     what="the curated spec")
    try:
        load_spec.__wrapped__(spec_path)  # the same checks a run makes, without the run's cache
    except SpecError as exc:
        raise SpecError(f"the curated spec does not validate: {exc}") from None
    return spec_path
