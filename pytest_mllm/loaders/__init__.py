"""Benchmark loaders: each reads one real file format into Samples.

A loader returns `Sample`s, or `BadSample`s for entries it could not read, so that one
broken entry errors alone while the rest of the benchmark runs.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Callable

from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, read_subset
from pytest_mllm.sample import BadSample, Sample

Loaded = list[Sample | BadSample]
Loader = Callable[[BenchmarkSpec, "Path | None"], Loaded]


def _loader(name: str) -> Loader:
    if name == "mme":
        from pytest_mllm.loaders.mme import load_mme_folder

        return load_mme_folder
    if name == "mme_results":
        from pytest_mllm.loaders.mme import load_mme_results_folder

        return load_mme_results_folder
    if name == "tsv":
        from pytest_mllm.loaders.tsv import load_tsv

        return load_tsv
    if name == "jsonl":
        from pytest_mllm.loaders.jsonl import load_jsonl

        return load_jsonl
    if name == "parquet":
        from pytest_mllm.loaders.parquet import load_parquet

        return load_parquet
    if name == "vqa":
        from pytest_mllm.loaders.vqa import load_vqa

        return load_vqa
    if name == "shapes":
        from pytest_mllm.loaders.shapes import build_samples

        return lambda spec, root: list(build_samples(spec.name, **spec.loader_options))
    if name == "vrp_shapes":
        from pytest_mllm.loaders.vrp_shapes import build_vrp_samples

        return lambda spec, root: list(build_vrp_samples(spec.name, **spec.loader_options))
    raise SpecError(f"{name!r} is not a known loader")


def load_samples(spec: BenchmarkSpec, root: Path | None) -> Loaded:
    """All samples of a benchmark, in a deterministic order; duplicate ids are an error.

    A spec with a `subset` file keeps only the samples it lists, in the benchmark's order.
    """
    try:
        samples = _loader(spec.loader)(spec, root)
    except UnicodeDecodeError as exc:
        where = root / spec.data_file if root is not None and spec.data_file else root or spec.path
        raise SpecError(f"benchmark {spec.name!r}: a data file under {where} is not UTF-8 text "
                        f"(byte {exc.start}: {exc.reason}); save it as UTF-8") from None
    if not samples:
        where = root / spec.data_file if root is not None and spec.data_file else root or spec.path
        raise SpecError(f"benchmark {spec.name!r}: no samples in {where}; check the spec's data.file and "
                        "the data root (--mllm-data)")
    dupes = [sid for sid, n in Counter(s.id for s in samples).items() if n > 1]
    if dupes:
        where = root if root is not None else spec.path
        raise SpecError(
            f"benchmark {spec.name!r}: duplicate sample id {dupes[0]!r} in {where} "
            f"({len(dupes)} duplicated id(s)); every sample needs a unique id"
        )
    if spec.subset is not None:
        samples = _subset(spec, samples)
    return samples


def _subset(spec: BenchmarkSpec, samples: Loaded) -> Loaded:
    """The samples the spec's subset file lists; an id the benchmark lacks names its line."""
    wanted = read_subset(spec)
    present = {s.id for s in samples}
    for number, sample_id in wanted:
        if sample_id not in present:
            raise SpecError(
                f"{spec.subset_path}:{number}: sample id {sample_id!r} is not in benchmark {spec.name!r} "
                f"(the subset file of {spec.path}); list ids as the benchmark's test ids show them, "
                "without the benchmark name"
            )
    keep = {sample_id for _, sample_id in wanted}
    return [s for s in samples if s.id in keep]
