"""Starting a run: options read, workers bound to GPUs, the evaluation core and its hooks registered;
the samples of `@pytest.mark.mllm_bench` tests."""

from __future__ import annotations

import importlib.util
import sqlite3
import warnings
from pathlib import Path

import pytest

from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, find_spec, load_spec
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.collector import lighter_exit
from pytest_mllm.harness.gpus import GpuSpecError, configured_groups, worker_specs
from pytest_mllm.harness.hooks import MllmHooks
from pytest_mllm.harness.junit import AtomicJunit
from pytest_mllm.harness.listing import register_markers
from pytest_mllm.harness.model_handle import ModelHandle
from pytest_mllm.harness.model_load import ModelLoadReport
from pytest_mllm.harness.options import Options
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.models.ref import ModelRef
from pytest_mllm.pytest_compat import is_worker
from pytest_mllm.record import MessageOnly
from pytest_mllm.sample import Sample


def start_run(config: pytest.Config) -> None:
    """Check the options, then register the run's hooks (UsageError on any problem)."""
    options = Options.from_config(config)
    model, ref = options.evaluation.model, options.evaluation.model_ref
    if options.benchmarks and not model:
        raise pytest.UsageError("--mllm-bench needs a model: pass --mllm=NAME (e.g. --mllm=tiny-llava)")
    own_models = bool(config.pluginmanager.hook.pytest_mllm_make_model.get_hookimpls())
    if not own_models:
        from pytest_mllm.models.registry import known_names

        if not ref.known:
            raise pytest.UsageError(f"unknown model {model!r} in --mllm; known models: {', '.join(known_names())}")
    if ref.entry is not None and ref.entry.check is not None:  # an unreadable recording: one usage error, not
        try:  # one error per sample
            ref.entry.check(ref)
        except ValueError as exc:
            raise pytest.UsageError(f"--mllm={model}: {exc}") from None
    if not is_worker(config) and not config.option.collectonly and not own_models:
        check_model_available(ref, options)
    bind_workers_to_gpus(config)
    lighter_exit()
    load_report = ModelLoadReport(config, announce=not ref.instant)
    try:
        with warnings.catch_warnings(record=True) as caught:  # the cache set aside: shown in the warnings summary
            warnings.simplefilter("always")
            evaluation = Evaluation(options.evaluation, make_model=lambda: config.hook.pytest_mllm_make_model(
                spec=model, config=config), on_load=load_report)
    except MessageOnly as exc:  # a file the settings name cannot be used (a prompts file): its message says why
        raise pytest.UsageError(str(exc)) from None
    except (OSError, sqlite3.Error) as exc:  # the response cache's folder or database
        raise pytest.UsageError(f"the response cache {options.evaluation.cache_path} cannot be opened ({exc}); "
                                "pass --mllm-cache-dir=DIR (a writable folder) or --mllm-cache=off") from None
    for warning in caught:
        if type(warning.message).__name__ == "CacheWarning":  # located at the cache file
            config.hook.pytest_warning_recorded.call_historic(
                kwargs={"warning_message": warning, "when": "config", "nodeid": "", "location": None})
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    if not is_worker(config):  # the controller checks them, once
        _check_gate_paths(options, evaluation)
    if not config.getoption("markers", False):  # `pytest --markers` has every bundled benchmark's
        register_markers(config, _readable_specs(options.benchmarks))
    hooks = MllmHooks(config, options, evaluation, load_report)
    config.stash[RUN_KEY] = hooks
    config.pluginmanager.register(hooks, "mllm-session")
    if not is_worker(config):  # the controller writes the JUnit XML
        config.pluginmanager.register(AtomicJunit(config), "mllm-junit")
    if importlib.util.find_spec("xdist") is not None:
        from pytest_mllm.harness.xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(hooks.tasks.workers_collected), "mllm-xdist")
    if options.benchmarks:
        spec_args = [str(p) for p in options.benchmarks]
        explicit = config.args_source == pytest.Config.ArgsSource.ARGS
        config.args = [*config.args, *spec_args] if explicit else spec_args


def _readable_specs(paths: list[Path]) -> list[BenchmarkSpec]:
    """The specs at `paths` that can be read (one that cannot is reported when its file collects)."""
    specs = []
    for path in paths:
        try:
            specs.append(load_spec(path))
        except SpecError:
            continue
    return specs


def _check_gate_paths(options: Options, evaluation: Evaluation) -> None:
    """Before the run: every gate and limit names a metric its benchmark can report (UsageError with the
    closest names). The spec says which; a task the data alone defines is looked up in the samples."""
    from pytest_mllm.scoring.gates import MetricSpace, gate_path_problems

    gates = [*options.gates.gates, *options.gates.max_drops]
    spaces = {}
    for name, path in (options.in_run or {}).items():
        named = [g for g in gates if g.benchmark == name and g.key != "*"]
        if not named:
            continue
        try:
            spec = load_spec(path)
        except SpecError:
            continue  # reported when the file collects
        scopes = {*spec.task_order, *spec.groups}
        space = MetricSpace.of(spec.metrics, scopes)
        if any(space.problem(g.key) for g in named):  # perhaps a task the loader names: read the samples
            try:
                scopes |= {s.task for s in evaluation.samples_for(spec)}
            except (SpecError, OSError, ValueError):
                continue  # the data's problem is reported when the file collects
            space = MetricSpace.of(spec.metrics, scopes)
        spaces[name] = space
    problems = gate_path_problems(gates, spaces)
    if problems:
        raise pytest.UsageError("; ".join(problems) + " (pytest --mllm-list shows each bundled benchmark's metric "
                                "paths)")
def check_model_available(model: ModelRef, options: Options) -> None:
    """The model can be had (packages, folder, endpoint): else one usage error with the fix, before any sample."""
    from pytest_mllm.models.preflight import ModelUnavailable, check_model

    try:
        check_model(model, options.evaluation.endpoint, options.evaluation.hf_options.get("model_args"))
    except ModelUnavailable as exc:
        raise pytest.UsageError(str(exc)) from None


def gpu_groups(config: pytest.Config) -> list[str]:
    """The GPU groups workers are spread over (UsageError for a bad --mllm-gpus)."""
    try:
        return configured_groups(config.getoption("mllm_gpus"), config.getoption("mllm_gpus_per_worker"))
    except GpuSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def bind_workers_to_gpus(config: pytest.Config) -> None:
    """One xdist worker per GPU group, bound through the worker spec (survives restarts)."""
    if is_worker(config):
        return
    groups = gpu_groups(config)
    workers = len(config.getoption("tx", None) or []) if config.getoption("dist", "no") != "no" else 0
    if groups and workers:
        try:
            config.option.tx = worker_specs(groups, workers)
        except GpuSpecError as exc:
            raise pytest.UsageError(str(exc)) from None


def marked_samples(config: pytest.Config, name: str, task: str | None) -> list[Sample]:
    """The samples of benchmark `name` (one task's, if given) for `@pytest.mark.mllm_bench`."""
    evaluation = config.stash[RUN_KEY].evaluation
    spec = evaluation.spec(find_spec(name))
    return [s for s in evaluation.samples_for(spec) if isinstance(s, Sample) and (task is None or s.task == task)]


def model_handle(config: pytest.Config) -> ModelHandle:
    """The `mllm` fixture's value."""
    return ModelHandle(config.stash[RUN_KEY].evaluation)
