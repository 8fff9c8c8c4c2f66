"""Benchmark loaders: each reads one real file format into Samples.

Each module here registers its loader with `@loader` (`engine/spec.py`'s `LOADERS`), which a spec names
in `loader:`; this module imports none of them. A loader returns `Sample`s, or `BadSample`s for entries
it could not read, so that one broken entry errors alone while the rest of the benchmark runs.

A released folder of recorded answers (a benchmark's own results format) registers its reader with
`@results_folder` (`RESULTS_FOLDERS`), which `replay:<folder>` tries; this module imports none of them either.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from pytest_mllm.echo import printable
from pytest_mllm.engine.spec import LOADERS, BenchmarkSpec, SpecError, read_subset
from pytest_mllm.registry import Registry
from pytest_mllm.sample import BadSample, Sample

Loaded = list[Sample | BadSample]
Answers = Mapping[tuple[str, str, str], str]  # (task, image, question) → the recorded response


@dataclass(frozen=True)
class ResultsFolder:
    """A registered results format of a folder: its recorded answers, keyed by task, image and question."""

    name: str
    about: str  # what it is, after "a folder in" (replay's messages)
    read: Callable[[Path], Answers]  # the folder → its answers; ValueError or OSError for a folder of another shape


RESULTS_FOLDERS: Registry[ResultsFolder] = Registry("results folder", "results_folder")


def results_folder(name: str, *, about: str) -> Callable[[Callable[[Path], Answers]], Callable[[Path], Answers]]:
    """Register the decorated folder → answers function as results format `name`."""
    def register(read: Callable[[Path], Answers]) -> Callable[[Path], Answers]:
        RESULTS_FOLDERS.add(name, ResultsFolder(name, about, read), read.__module__)
        return read

    return register


def check_loader_options(spec: BenchmarkSpec) -> None:
    """SpecError naming the first `loader_options` key the spec's loader does not read, with the key
    it most likely meant."""
    import difflib

    known = tuple(LOADERS.get(spec.loader).options)
    for key in spec.loader_options:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        takes = f"allowed: {', '.join(known)}" if known else "it takes none"
        raise SpecError(f"{spec.path}: field 'loader_options.{printable(str(key))[:60]}': unknown option of the "
                        f"{spec.loader} loader{hint} ({takes})")


def check_task_names(spec: BenchmarkSpec, samples: Loaded) -> None:
    """SpecError for a task name that could lead out of a folder (MME's results format writes `<task>.txt`);
    the reference's own task names (ScienceQA's end in a tab) stay as they are."""
    from pytest_mllm.echo import excerpt
    from pytest_mllm.engine.output_paths import path_component_problem

    seen: set[str] = set()
    for sample in samples:
        if sample.task in seen:
            continue
        seen.add(sample.task)
        problem = path_component_problem(sample.task)
        if problem is not None:
            raise SpecError(f"benchmark {spec.name!r}: task name {excerpt(sample.task)} (sample {excerpt(sample.id)}) "
                            f"{problem}; a task name must be able to name a file (a results folder holds one "
                            "<task>.txt per task): rename the task in the data")


def load_samples(spec: BenchmarkSpec, root: Path | None) -> Loaded:
    """All samples of a benchmark, in a deterministic order; duplicate ids and task names that cannot
    name a file are errors, and so is a `loader_options` key the loader does not read.

    A spec with a `subset` file keeps only the samples it lists, in the benchmark's order.
    """
    check_loader_options(spec)
    try:
        samples = LOADERS.get(spec.loader).load(spec, root)
    except UnicodeDecodeError as exc:
        where = root / spec.data_file if root is not None and spec.data_file else root or spec.path
        raise SpecError(f"benchmark {spec.name!r}: a data file under {where} is not UTF-8 text "
                        f"(byte {exc.start}: {exc.reason}); save it as UTF-8") from None
    if not samples:
        where = root / spec.data_file if root is not None and spec.data_file else root or spec.path
        raise SpecError(f"benchmark {spec.name!r}: no samples in {where}; check the spec's data.file and "
                        "the data root (--mllm-data)")
    check_task_names(spec, samples)
    dupes = [sid for sid, n in Counter(s.id for s in samples).items() if n > 1]
    if dupes:
        where = root if root is not None else spec.path
        raise SpecError(
            f"benchmark {spec.name!r}: duplicate sample id {printable(repr(dupes[0]))} in {where} "
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
