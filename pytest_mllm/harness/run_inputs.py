"""The files a run reads, named for the output check: an output path may be none of them
(`engine/output_paths.py`); and the files pytest itself writes, checked with the run's own outputs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_mllm.engine.fetch import DataCache
from pytest_mllm.engine.spec import SpecError, is_spec_file, load_spec
from pytest_mllm.engine.output_paths import Input, Output
from pytest_mllm.models.ref import ModelRef


def run_inputs(spec_paths: Iterable[Path], data: Mapping[str, str], *, data_cache: DataCache | None = None,
               model: ModelRef | None = None, files: Mapping[str, Path | None] | None = None) -> list[Input]:
    """The inputs of a run: each benchmark's spec, data folder, data file and subset file; the recording
    a `replay:` model plays; and `files` (what → path: a baseline, a prompts file, the cache database)."""
    inputs: list[Input] = []
    for path in dict.fromkeys(spec_paths):
        inputs.append(Input(f"the benchmark spec {path.name}", path))
        try:
            spec = load_spec(path)
            root = spec.resolve_data_root(spec.data_override(data), data_cache)
        except SpecError:  # reported where the spec is collected
            continue
        if spec.subset_path is not None:
            inputs.append(Input(f"the subset file of benchmark {spec.name!r}", spec.subset_path))
        if root is not None:
            inputs.append(Input(f"the data folder of benchmark {spec.name!r}", root, folder=True))
            if spec.data_file:
                inputs.append(Input(f"the data file of benchmark {spec.name!r}", root / spec.data_file))
    if model is not None and model.recording:
        recording = Path(model.arg).expanduser()
        inputs.append(Input(f"the recording --mllm={model} replays", recording, folder=recording.is_dir()))
    inputs.extend(Input(what, path) for what, path in (files or {}).items() if path is not None)
    return inputs


def spec_files_in_args(args: Iterable[str], invocation_dir: Path) -> list[Path]:
    """The benchmark spec files named on the command line as test paths (`pytest mine.yaml`)."""
    found = []
    for arg in args:
        path = Path(arg.split("::")[0])
        path = path if path.is_absolute() else invocation_dir / path
        if path.is_file() and is_spec_file(path):
            found.append(path.resolve())
    return found


def pytest_outputs(config: object) -> list[Output]:
    """The files pytest writes for the run that the output check covers too: the JUnit XML (`--junitxml`)."""
    xmlpath = getattr(getattr(config, "option", None), "xmlpath", None)
    return [Output("--junitxml", Path(xmlpath).expanduser())] if xmlpath else []
