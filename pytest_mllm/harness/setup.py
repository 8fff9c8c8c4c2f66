"""Starting a run: options read, workers bound to GPUs, the evaluation core and its hooks registered;
the samples of `@pytest.mark.mllm_bench` tests."""

from __future__ import annotations

import importlib.util
import sqlite3
import warnings

import pytest

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.collector import lighter_exit
from pytest_mllm.harness.gpus import GpuSpecError, configured_groups, worker_specs
from pytest_mllm.harness.hooks import MllmHooks
from pytest_mllm.harness.model_handle import ModelHandle
from pytest_mllm.harness.options import Options
from pytest_mllm.harness.stash import RUN_KEY
from pytest_mllm.sample import Sample


def start_run(config: pytest.Config) -> None:
    """Check the options, then register the run's hooks (UsageError on any problem)."""
    options = Options.from_config(config)
    model = options.evaluation.model
    if options.benchmarks and not model:
        raise pytest.UsageError("--mllm-bench needs a model: pass --mllm=NAME (e.g. --mllm=tiny-llava)")
    if not config.pluginmanager.hook.pytest_mllm_make_model.get_hookimpls():
        from pytest_mllm.models.registry import known_names, recognizes

        if not recognizes(model):
            raise pytest.UsageError(f"unknown model {model!r} in --mllm; known models: {', '.join(known_names())}")
    if model.startswith("replay:"):  # an unreadable recording is one usage error, not one error per sample
        from pytest_mllm.models.replay import ReplayFileError, check_recording

        try:
            check_recording(model.partition(":")[2])
        except ReplayFileError as exc:
            raise pytest.UsageError(f"--mllm={model}: {exc}") from None
    bind_workers_to_gpus(config)
    lighter_exit()
    from pytest_mllm.tpeval.prompts_file import PromptsFileError

    try:
        with warnings.catch_warnings(record=True) as caught:  # the cache set aside: shown in the warnings summary
            warnings.simplefilter("always")
            evaluation = Evaluation(options.evaluation, make_model=lambda: config.hook.pytest_mllm_make_model(
                spec=model, config=config))
    except PromptsFileError as exc:
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
    hooks = MllmHooks(config, options, evaluation)
    config.stash[RUN_KEY] = hooks
    config.pluginmanager.register(hooks, "mllm-session")
    if importlib.util.find_spec("xdist") is not None:
        from pytest_mllm.harness.xdist import XdistHooks

        config.pluginmanager.register(XdistHooks(hooks.workers_collected), "mllm-xdist")
    if options.benchmarks:
        spec_args = [str(p) for p in options.benchmarks]
        explicit = config.args_source == pytest.Config.ArgsSource.ARGS
        config.args = [*config.args, *spec_args] if explicit else spec_args


def gpu_groups(config: pytest.Config) -> list[str]:
    """The GPU groups workers are spread over (UsageError for a bad --mllm-gpus)."""
    try:
        return configured_groups(config.getoption("mllm_gpus"), config.getoption("mllm_gpus_per_worker"))
    except GpuSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


def bind_workers_to_gpus(config: pytest.Config) -> None:
    """One xdist worker per GPU group, bound through the worker spec (survives restarts)."""
    if hasattr(config, "workerinput"):
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
