"""pytest-mllm's entry point: options, the marker and fixtures, and activation.

This module stays import-light: without a --mllm option nothing else of the package
(and nothing heavy) is imported and no hook does any work.
"""

from __future__ import annotations

from typing import Any

import pytest

MARKER = "mllm_bench"


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_mllm.harness import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mllm", "multimodal-LLM benchmarks (pytest-mllm)")
    group.addoption("--mllm", metavar="MODEL", help="model under test: an alias (llava-1.5-7b), hf:<repo or folder>, "
                    "tiny-llava, baseline:random|yes|no, replay:<path>, or a registered name")
    group.addoption("--mllm-bench", action="append", metavar="NAME", help="benchmark to run: a bundled name "
                    "(shapes, mme, pope, mmbench) or a spec file; repeat or comma-separate for several")
    group.addoption("--mllm-data", action="append", metavar="[NAME=]PATH",
                    help="data root of a benchmark (else $MLLM_DATA_<NAME>, else the spec's data.root)")
    group.addoption("--mllm-json", metavar="PATH", help="write per-sample records and scores as JSON")
    group.addoption("--mllm-html", metavar="PATH", help="write a self-contained HTML report (scores, charts, wrong answers)")
    group.addoption("--mllm-mme-results", metavar="DIR",
                    help="also write yes/no answers in MME's official results format (one file per subtask)")
    group.addoption("--mllm-gate", action="append", metavar="EXPR",
                    help="score gate such as 'mme.perception>=1400'; a failing gate fails the session")
    group.addoption("--mllm-baseline", metavar="PATH", help="earlier --mllm-json results for regression gates")
    group.addoption("--mllm-max-drop", action="append", metavar="[METRIC=]DROP",
                    help="largest allowed drop against the baseline, e.g. 'mme.perception=20' or '0.01'")
    group.addoption("--mllm-strict", action="store_true", help="incorrect answers fail (for must-pass suites)")
    group.addoption("--mllm-max-image-pixels", type=int, default=89_478_485, metavar="N",
                    help="refuse images with more pixels than this (default: Pillow's limit)")
    group.addoption("--mllm-show-incorrect", type=int, default=10, metavar="N",
                    help="wrong answers listed in the summary (all with -v)")
    group.addoption("--mllm-batch-size", type=int, default=8, metavar="N",
                    help="samples generated together (tests stay one per sample; default 8)")
    group.addoption("--mllm-cache", choices=("on", "off", "refresh"), default="on",
                    help="response cache: on (read and write), off, refresh (ignore old answers, store new)")
    group.addoption("--mllm-cache-dir", metavar="DIR", help="where the response cache lives (default .mllm_cache/)")
    group.addoption("--mllm-vrp", choices=("none", "grid", "full", "property"),
                    help="visual-referring-prompt variants of samples with a target region: the default grid "
                         "(VRPTEST: 4 partial + 8 full per source), the full product, or hypothesis property tests")
    group.addoption("--mllm-vrp-examples", type=int, default=8, metavar="N",
                    help="variants drawn per source sample in --mllm-vrp=property (each is a model call)")
    group.addoption("--mllm-vrp-radar", metavar="PATH", help="write VRPTEST's radar chart (PNG or SVG)")
    group.addoption("--mllm-no-image", action="store_true",
                    help="withhold every image: the model answers from the text alone (a leakage check; cached apart)")
    group.addoption("--mllm-base-url", metavar="URL",
                    help="OpenAI-compatible endpoint for openai:<model> (else $OPENAI_BASE_URL, else OpenAI)")
    group.addoption("--mllm-api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                    help="environment variable holding the API key (the key itself never goes on the command line)")
    group.addoption("--mllm-concurrency", type=int, default=8, metavar="N", help="requests in flight to an endpoint")
    group.addoption("--mllm-timeout", type=float, default=120.0, metavar="S", help="seconds per endpoint request")
    group.addoption("--mllm-max-retries", type=int, default=4, metavar="N",
                    help="retries (with backoff) on 429, 5xx and connection errors")
    group.addoption("--mllm-judge", metavar="MODEL",
                    help="judge LLM for open-ended answers (CEE: five prompts, majority vote), e.g. openai:gpt-4o-mini; "
                         "without it open answers are scored by word matching")
    group.addoption("--mllm-judge-base-url", metavar="URL", help="the judge's endpoint (else $OPENAI_BASE_URL)")
    group.addoption("--mllm-judge-api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                    help="environment variable holding the judge's API key")
    group.addoption("--mllm-judge-mode", choices=("strict", "compat"), default="strict",
                    help="verdict reading: strict (the digit after the key phrase) or compat (the paper's code)")
    group.addoption("--mllm-judge-max-tokens", type=int, default=512, metavar="N",
                    help="longest judge reply (analysis plus verdict)")
    group.addoption("--mllm-judge-temperature", type=float, default=0.0, metavar="T",
                    help="judge sampling temperature (the paper's code used 0.5)")
    group.addoption("--mllm-prompts", metavar="FILE",
                    help="evaluate with per-task prompts customized for this model (a --mllm-optimize file); "
                         "the report compares them with the benchmark's own prompts")
    group.addoption("--mllm-prompts-transfer", action="store_true",
                    help="allow a prompts file optimized for another model (TP-Eval's transfer)")
    group.addoption("--mllm-optimize", metavar="FILE",
                    help="TP-Eval: customize each task's prompt for the model under test and write them to FILE "
                         "(one test per task; needs --mllm-optimizer)")
    group.addoption("--mllm-optimizer", metavar="MODEL", help="the optimizer LLM, openai:<model> on an "
                    "OpenAI-compatible endpoint")
    group.addoption("--mllm-optimizer-base-url", metavar="URL", help="the optimizer's endpoint (else $OPENAI_BASE_URL)")
    group.addoption("--mllm-optimizer-api-key-env", default="OPENAI_API_KEY", metavar="NAME",
                    help="environment variable holding the optimizer's API key")
    group.addoption("--mllm-optimizer-max-tokens", type=int, default=256, metavar="N",
                    help="longest optimizer reply (a prompt or an introspection)")
    for flag, kind, default, text in (
        ("rounds", int, 16, "optimization rounds N"), ("per-round", int, 3, "new prompts per round M"),
        ("top-k", int, 8, "earlier prompts shown to the optimizer K"),
        ("temperature", float, 1.0, "optimizer sampling temperature"),
        ("alpha", float, 0.8, "weight of accuracy in a prompt's score during the search (α)"),
        ("alpha-final", float, 0.6, "weight of accuracy in the final re-rank (α*)"),
        ("few", int, 8, "examples per task in D_few"),
        ("seed", int, 0, "seed of the D_few split"),
    ):
        group.addoption(f"--mllm-tp-{flag}", type=kind, default=default, metavar="X",
                        help=f"TP-Eval: {text} (default {default})")
    group.addoption("--mllm-tp-mode", choices=("auto", "prompt", "prefix"), default="auto",
                    help="TP-Eval: edit the task's instruction (prompt), or an added phrase before a question that is "
                         "the whole prompt (prefix); auto decides per task")
    group.addoption("--mllm-tp-split", choices=("auto", "validation", "seeded"), default="auto",
                    help="TP-Eval: D_few from the benchmark's validation split, or a seeded draw (auto: validation "
                         "when the task has one)")
    group.addoption("--mllm-tp-zero-shot", action="store_true",
                    help="TP-Eval: write prompts for tasks not yet in the --mllm-optimize file from the tasks already "
                         "in it (in-context examples, no scoring)")
    group.addoption("--mllm-gpus", metavar="LIST",
                    help="GPUs to spread xdist workers over, e.g. 0,1,2,3 (default: all visible); -n auto = one per GPU")
    group.addoption("--mllm-gpus-per-worker", type=int, default=1, metavar="K",
                    help="GPUs per worker, for models that span several")
    group.addoption("--mllm-device", default="auto", help="device for transformers models (auto, cpu, cuda)")
    group.addoption("--mllm-dtype", default="auto", help="dtype for transformers models (auto: bf16 on GPU, fp32 on CPU)")
    group.addoption("--mllm-trust-remote-code", action="store_true",
                    help="allow a transformers model to run code from its repository")
    parser.addini("mllm_gates", type="linelist", default=[], help="score gates, one per line")
    parser.addini("mllm_max_drop", type="linelist", default=[], help="regression limits, one per line")
    parser.addini("mllm_cache_dir", default="", help="where the response cache lives")
    parser.addini("mllm_baseline", default="", help="baseline --mllm-json results for regression gates")


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("mllm") or config.getoption("mllm_bench"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(name, task=None): parametrize `mllm_sample` with a benchmark's samples")
    if not _active(config):
        return
    from pytest_mllm.harness.items import SESSION_KEY
    from pytest_mllm.harness.session import MllmSession, Options

    options = Options.from_config(config)
    if options.benchmarks and not options.model:
        raise pytest.UsageError("--mllm-bench needs a model: pass --mllm=NAME (e.g. --mllm=tiny-llava)")
    if options.model and not config.pluginmanager.hook.pytest_mllm_make_model.get_hookimpls():
        from pytest_mllm.models.registry import known_names, recognizes

        if not recognizes(options.model):
            raise pytest.UsageError(f"unknown model {options.model!r} in --mllm; known models: {', '.join(known_names())}")
    _bind_workers_to_gpus(config)
    session = MllmSession(config, options)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(session, "mllm-session")
    if options.benchmarks:
        spec_args = [str(p) for p in options.benchmarks]
        explicit = config.args_source == pytest.Config.ArgsSource.ARGS
        config.args = [*config.args, *spec_args] if explicit else spec_args


def _gpu_groups(config: pytest.Config) -> list[str]:
    """GPU groups for workers: from --mllm-gpus, else every visible GPU (none on a CPU machine)."""
    from pytest_mllm.harness.gpus import gpu_groups, parse_gpu_list, visible_gpus

    listed = config.getoption("mllm_gpus")
    gpus = parse_gpu_list(listed) if listed else visible_gpus()
    return gpu_groups(gpus, config.getoption("mllm_gpus_per_worker")) if gpus else []


def _bind_workers_to_gpus(config: pytest.Config) -> None:
    """One xdist worker per GPU group, bound through the worker spec (survives restarts)."""
    from pytest_mllm.harness.gpus import GpuSpecError, worker_specs

    if hasattr(config, "workerinput"):
        return
    try:
        groups = _gpu_groups(config)
        workers = len(config.getoption("tx", None) or []) if config.getoption("dist", "no") != "no" else 0
        if groups and workers:
            config.option.tx = worker_specs(groups, workers)
    except GpuSpecError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto with a model under test: one worker per GPU group (none on a CPU-only machine)."""
    if not _active(config):
        return None
    from pytest_mllm.harness.gpus import GpuSpecError

    try:
        groups = _gpu_groups(config)
    except GpuSpecError as exc:
        raise pytest.UsageError(str(exc)) from None
    return len(groups) or None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "mllm_sample" not in metafunc.fixturenames:
        return
    if not _active(metafunc.config):
        metafunc.parametrize("mllm_sample", [pytest.param(None, marks=pytest.mark.skip(
            reason="benchmark test: pass --mllm=MODEL to run it"))], ids=["needs-mllm"])
        return
    from pytest_mllm.harness.items import SESSION_KEY
    from pytest_mllm.sample import Sample
    from pytest_mllm.engine.spec import find_spec, load_spec

    name = marker.args[0] if marker.args else marker.kwargs.get("name")
    task = marker.kwargs.get("task")
    spec = load_spec(find_spec(str(name)))
    samples = [s for s in metafunc.config.stash[SESSION_KEY].samples_for(spec)
               if isinstance(s, Sample) and (task is None or s.task == task)]
    metafunc.parametrize("mllm_sample", samples, ids=[s.id for s in samples], indirect=True)


@pytest.fixture
def mllm_sample(request: pytest.FixtureRequest) -> Any:
    """A benchmark sample (from `@pytest.mark.mllm_bench(...)`)."""
    return request.param


@pytest.fixture
def mllm(request: pytest.FixtureRequest) -> Any:
    """The model under test, with `answer(sample)` giving the sample's scored record."""
    if not _active(request.config):
        pytest.skip("benchmark test: pass --mllm=MODEL to run it")
    from pytest_mllm.harness.items import SESSION_KEY
    from pytest_mllm.harness.model_handle import ModelHandle

    return ModelHandle(request.config.stash[SESSION_KEY])
