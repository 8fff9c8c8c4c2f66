"""The command line and ini settings (declared in `plugin.py`), read and checked once into plain settings
when a run starts.

Every problem is a `pytest.UsageError` naming the option before anything runs.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_mllm.engine.endpoint import Endpoint, endpoint_from_options
from pytest_mllm.engine.spec import MAX_NEW_TOKENS, SpecError, find_spec, load_spec
from pytest_mllm.evaluation import EvaluationSettings
from pytest_mllm.harness.benchmark_names import gates_by_run_names, name_fix, run_name
from pytest_mllm.harness.data_fetch import fetch_run_data, read_data_cache
from pytest_mllm.harness.limit import read_limit
from pytest_mllm.models.model_args import ModelArgs, ModelArgsError, parse_model_args
from pytest_mllm.harness.xdist import worker_share
from pytest_mllm.models.ref import ModelRef
from pytest_mllm.pytest_compat import is_worker
from pytest_mllm.engine.output_paths import Output
from pytest_mllm.report.outputs import OutputError, Outputs
from pytest_mllm.scoring.gates import GateSettings, GateSyntaxError, load_baseline, parse_gate, parse_max_drop
from pytest_mllm.sections import OptionRange, check_ranges, output_files, run_outputs, run_settings, uses_cache

if TYPE_CHECKING:
    from pytest_mllm.estimate.plan import EstimateSettings

_DATA_OVERRIDE = re.compile(r"^([A-Za-z][\w\-]*)=(.+)$")


@dataclass(frozen=True)
class Options:
    """A run's settings: what to evaluate, what to write, which gates decide the exit status."""

    benchmarks: list[Path]  # spec files from --mllm-bench
    evaluation: EvaluationSettings
    outputs: Outputs
    gates: GateSettings
    strict: bool
    show_incorrect: int
    shard: tuple[int, int] | None = None  # --mllm-shard=I/N: (I, N), 1-based
    in_run: dict[str, Path] | None = None  # {name: spec path} when --mllm-bench names every benchmark of the run
    limit: int | None = None  # --mllm-limit=N: at most N samples per task

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """Read and check every option; a problem is a UsageError before anything runs."""
        opt = config.getoption
        _check_ranges(config)
        try:
            benchmarks = [find_spec(name.strip()) for value in opt("mllm_bench") or []
                          for name in value.split(",") if name.strip()]
            gates = _gates(config)
        except (SpecError, GateSyntaxError) as exc:
            raise pytest.UsageError(str(exc)) from None
        in_run = _benchmarks_in_run(config, benchmarks)
        data = _data_roots(opt("mllm_data") or [], in_run)
        gates = gates_by_run_names(gates, in_run)
        _check_data(data, in_run)
        if in_run is not None and not gates.skip_missing:
            _check_gate_benchmarks(gates, in_run)
        data_cache = read_data_cache(config)
        fetch_run_data(config, dict.fromkeys([*benchmarks, *(in_run or {}).values()]), data, data_cache)
        cache_dir = opt("mllm_cache_dir") or config.getini("mllm_cache_dir") or str(config.rootpath / ".mllm_cache")
        model = ModelRef.parse(opt("mllm") or "")
        evaluation = EvaluationSettings(
            model=opt("mllm") or "", data=data,
            max_pixels=opt("mllm_max_image_pixels"), batch_size=opt("mllm_batch_size"), cache_mode=opt("mllm_cache"),
            cache_path=Path(cache_dir).expanduser() / "responses.sqlite3",
            no_image=opt("mllm_no_image"),
            hf_options={"device": opt("mllm_device"), "dtype": opt("mllm_dtype"),
                        "trust_remote_code": opt("mllm_trust_remote_code"), "model_args": _model_args(config),
                        "gpus_per_worker": opt("mllm_gpus_per_worker")},
            endpoint=_with_model_revision(config, _endpoint(config, "mllm_base_url", "mllm_api_key_env"), model),
            worker=is_worker(config), workers=worker_share(config), max_new_tokens=_max_new_tokens(config),
            replay_min_match=_replay_min_match(config), data_cache=data_cache, estimate=_estimate(config),
            sections=_section_settings(config, benchmarks))
        _check_cache_dir(config, evaluation.cache_path.parent, model, uses_cache(evaluation.sections))
        outputs = Outputs(json_path=_path(opt("mllm_json")), html_path=_path(opt("mllm_html")),
                          section_files={option: _path(opt(option)) for option in output_files()},
                          markdown_path=_path(opt("mllm_markdown")), step_summary=_path(os.environ.get(
                              "GITHUB_STEP_SUMMARY")))
        if not is_worker(config):  # the controller writes them
            from pytest_mllm.harness.run_inputs import pytest_outputs, run_inputs, spec_files_in_args

            spec_paths = [*benchmarks, *spec_files_in_args(config.args, config.invocation_params.dir)]
            inputs = run_inputs(spec_paths, data, data_cache=data_cache, model=model, files={
                "the --mllm-baseline file": gates.baseline,
                **{what: path for settings in evaluation.sections.values() for what, path in settings.inputs().items()},
                "the response cache": evaluation.cache_path if opt("mllm_cache") != "off" else None,
                **{f"the --mllm-estimate-panel file {p}": p
                   for p in (evaluation.estimate.panel.files if evaluation.estimate else ())}})
            try:
                outputs = outputs.check(inputs, also=[*pytest_outputs(config), *(
                    Output(option, path) for option, path in run_outputs(evaluation.sections).items())])
            except OutputError as exc:
                raise pytest.UsageError(str(exc)) from None
        return cls(benchmarks=benchmarks, evaluation=evaluation, outputs=outputs, gates=gates,
                   strict=opt("mllm_strict"), show_incorrect=opt("mllm_show_incorrect"), shard=_shard(opt("mllm_shard")),
                   in_run=in_run, limit=read_limit(config))


def _model_args(config: pytest.Config) -> ModelArgs:
    """--mllm-model-args (all of them), else ini mllm_model_args; checked for form and loading values."""
    given = config.getoption("mllm_model_args")
    source = "--mllm-model-args" if given else "mllm_model_args (ini)"
    try:
        model_args = parse_model_args(given or config.getini("mllm_model_args"), source)
    except ModelArgsError as exc:
        raise pytest.UsageError(str(exc)) from None
    if "dtype" in model_args.loading and config.getoption("mllm_dtype") != "auto":
        raise pytest.UsageError(f"{source}: dtype is also given by --mllm-dtype; keep one of them")
    return model_args


def _max_new_tokens(config: pytest.Config) -> int | None:
    """--mllm-max-new-tokens, else ini mllm_max_new_tokens, else None (each spec's own limit)."""
    value = config.getoption("mllm_max_new_tokens")
    source = "--mllm-max-new-tokens"
    if value is None:
        raw = str(config.getini("mllm_max_new_tokens") or "").strip()
        if not raw:
            return None
        source = "mllm_max_new_tokens (ini)"
        try:
            value = int(raw)
        except ValueError:
            raise pytest.UsageError(f"{source} must be a whole number of tokens, at least 1, got {raw!r}") from None
    if value < 1:
        raise pytest.UsageError(f"{source} must be at least 1, got {value}")
    if value > MAX_NEW_TOKENS:
        raise pytest.UsageError(f"{source} must be at most {MAX_NEW_TOKENS} tokens, got {value}")
    return value


def _shard(value: str | None) -> tuple[int, int] | None:
    """--mllm-shard=I/N as (I, N), 1 <= I <= N."""
    if value is None:
        return None
    from pytest_mllm.harness.shard import ShardError, parse_shard

    try:
        return parse_shard(value)
    except ShardError as exc:
        raise pytest.UsageError(f"--mllm-shard={value}: {exc}") from None


def _gates(config: pytest.Config) -> GateSettings:
    opt = config.getoption
    gates = [parse_gate(g) for g in [*config.getini("mllm_gates"), *(opt("mllm_gate") or [])]]
    drops = [parse_max_drop(d) for d in [*config.getini("mllm_max_drop"), *(opt("mllm_max_drop") or [])]]
    baseline = opt("mllm_baseline") or config.getini("mllm_baseline") or None
    if drops and not baseline:
        raise pytest.UsageError("--mllm-max-drop needs a baseline: pass --mllm-baseline=PATH (a --mllm-json file)")
    if baseline and not drops:
        drops = [parse_max_drop("0")]
    if baseline:
        try:
            load_baseline(Path(baseline).expanduser())
        except GateSyntaxError as exc:
            raise pytest.UsageError(f"--mllm-baseline: {exc}") from None
    skip = opt("mllm_gate_skip_missing")
    return GateSettings(gates=gates, max_drops=drops, baseline=_path(baseline),
                        skip_missing=bool(config.getini("mllm_gate_skip_missing") if skip is None else skip))


_RANGES = (
    OptionRange("mllm_batch_size", 1, 1 << 20, "at least 1"),
    OptionRange("mllm_max_image_pixels", 1, 1 << 40, "a number of pixels, at least 1"),
    OptionRange("mllm_show_incorrect", 0, None, "0 or more"),
    OptionRange("mllm_gpus_per_worker", 1, 1 << 10, "at least 1"),
    OptionRange("mllm_timeout", 0, 24 * 3600, "a number of seconds above 0", above=True),
    OptionRange("mllm_max_retries", 0, 100, "0 or more"),
    OptionRange("mllm_concurrency", 1, 1 << 12, "1 or more"),
)


def _section_settings(config: pytest.Config, benchmarks: list[Path]) -> dict[str, Any]:
    """Each section's settings for the run, read from its own options (`Section.read_options`), told the
    parsers of the --mllm-bench specs (one that cannot be read is reported where the run reads it)."""
    parsers = {}
    for path in benchmarks:
        try:
            spec = load_spec(path)
        except SpecError:
            continue
        parsers[spec.name] = tuple(dict.fromkeys([spec.parser, *(task.parser for task in spec.tasks.values())]))
    try:
        return run_settings(config.getoption, parsers)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _check_ranges(config: pytest.Config) -> None:
    """Every numeric option within its bounds, and a number (not nan, not inf)."""
    try:
        check_ranges(config.getoption, _RANGES)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _benchmarks_in_run(config: pytest.Config, benchmarks: list[Path]) -> dict[str, Path] | None:
    """{name: spec path} of the run's benchmarks when --mllm-bench names them all up front (no other
    test paths on the command line), else None. A spec that cannot be read is left to collection."""
    if not benchmarks:
        return None
    from pytest_mllm.engine.spec import is_spec_file, load_spec

    paths = list(benchmarks)
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        for arg in config.args:
            path = Path(arg.split("::")[0])
            path = path if path.is_absolute() else config.invocation_params.dir / path
            if not (path.is_file() and is_spec_file(path)):
                return None  # test files or folders: @pytest.mark.mllm_bench may run any benchmark
            paths.append(path.resolve())
    names: dict[str, Path] = {}
    for path in paths:
        try:
            names[load_spec(path).name] = path
        except SpecError:
            names[path.stem] = path
    return names


def _check_data(data: dict[str, str], in_run: dict[str, Path] | None) -> None:
    """--mllm-data names a benchmark of the run and an existing folder; $MLLM_DATA_<NAME> too."""
    from pytest_mllm.engine.spec import load_spec

    for name, raw in data.items():
        option = f"--mllm-data={name + '=' if name else ''}{raw}"
        if name and in_run is not None and name not in in_run:
            raise pytest.UsageError(f"{option}: no benchmark {name!r} in this run (benchmarks: "
                                    f"{', '.join(sorted(in_run))}); {name_fix(name, in_run)}")
        path = Path(raw).expanduser()
        if not path.exists():
            raise pytest.UsageError(f"{option}: {path} does not exist; give the benchmark's data folder")
        if not path.is_dir():
            raise pytest.UsageError(f"{option}: {path} is a file; give the folder that holds the benchmark's "
                                    "data (the spec's data.file names the file inside it)")
    for name, spec_path in (in_run or {}).items():
        try:
            spec = load_spec(spec_path)
        except SpecError:
            continue
        variable = next((v for v in spec.env_vars if os.environ.get(v)), None)
        if not spec.needs_data or variable is None or name in data or "" in data:
            continue
        raw = os.environ[variable]
        path = Path(raw).expanduser()
        if not path.is_dir():
            what = "does not exist" if not path.exists() else "is a file, not a folder"
            raise pytest.UsageError(f"${variable}={raw}: {path} {what}; point it at the data folder of "
                                    f"benchmark {name!r} or unset it")


def _check_gate_benchmarks(gates: GateSettings, in_run: dict[str, Path]) -> None:
    """A gate on a benchmark that no spec of the run has can only be misspelled or forgotten."""
    for gate in [*gates.gates, *gates.max_drops]:
        if gate.benchmark != "*" and gate.benchmark not in in_run:
            raise pytest.UsageError(
                f"gate {gate.text!r} names benchmark {gate.benchmark!r}, which is not in this run (benchmarks: "
                f"{', '.join(sorted(in_run))}): fix the name, add --mllm-bench={gate.benchmark}, or pass "
                "--mllm-gate-skip-missing to let it be 'not run'")


def _check_cache_dir(config: pytest.Config, folder: Path, model: ModelRef, sections_use_cache: bool) -> None:
    """The response cache's folder exists or can be created (when the cache will be used: by the model, or by a
    section's calls, `Section.uses_cache`)."""
    opt = config.getoption
    if opt("mllm_cache") == "off" or (model.instant and not sections_use_cache):
        return
    source = "--mllm-cache-dir" if opt("mllm_cache_dir") else "mllm_cache_dir (ini)" if config.getini(
        "mllm_cache_dir") else "the default cache folder"
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        what = "is a file" if existing == folder else f"cannot be created ({existing} is a file or not writable)"
        raise pytest.UsageError(f"{source}: the cache folder {folder} {what}; pass --mllm-cache-dir=DIR (a "
                                "writable folder) or --mllm-cache=off")


def _data_roots(values: list[str], in_run: dict[str, Path] | None) -> dict[str, str]:
    """--mllm-data values: NAME=PATH for one benchmark (any name it answers to), a bare PATH for any."""
    data: dict[str, str] = {}
    for value in values:
        match = _DATA_OVERRIDE.match(value)
        name, path = (match.group(1), match.group(2)) if match and not Path(value).exists() else ("", value)
        data[run_name(name, in_run) if name else name] = path
    return data


def _endpoint(config: pytest.Config, url_option: str, key_option: str) -> Endpoint:
    """An OpenAI-compatible endpoint from its URL and key-variable options and the shared limits."""
    try:
        return endpoint_from_options(config.getoption, url_option, key_option)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def _replay_min_match(config: pytest.Config) -> float:
    """--mllm-replay-min-match: a share from 0 to 1."""
    value = config.getoption("mllm_replay_min_match")
    if not 0 <= value <= 1:  # NaN fails too
        raise pytest.UsageError(f"--mllm-replay-min-match must be a share from 0 to 1 (e.g. 0.9), got {value}")
    return value


def _with_model_revision(config: pytest.Config, endpoint: Endpoint, model: ModelRef) -> Endpoint:
    """The model's endpoint with --mllm-model-revision, which only a served model takes."""
    revision = config.getoption("mllm_model_revision")
    if revision is None:
        return endpoint
    if not model.served:
        raise pytest.UsageError(f"--mllm-model-revision is for a served model (--mllm=openai:NAME), not {model.raw!r}: "
                                "a local model's identity is its files; leave the option out")
    if not revision.strip() or len(revision) > 200 or not revision.isprintable():
        raise pytest.UsageError("--mllm-model-revision must be 1 to 200 printable characters (a checkpoint name, "
                                f"a commit, a date), got {len(revision)} characters")
    return dataclasses.replace(endpoint, model_revision=revision.strip())


def _estimate(config: pytest.Config) -> EstimateSettings | None:
    """--mllm-estimate with its panel, method and seed (`pytest_mllm.estimate.options`)."""
    from pytest_mllm.estimate.options import EstimateOptionError, read

    try:
        return read(config.getoption)
    except EstimateOptionError as exc:
        raise pytest.UsageError(str(exc)) from None


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None
