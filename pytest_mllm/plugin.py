"""pytest-mllm's entry point: the options, the marker, the fixtures, the hooks users implement, and activation.

This module stays import-light: pytest loads it in every run, and without a --mllm option (or
--mllm-list, --markers, --help) nothing else of the package but `pytest_compat` is imported and no
hook does any work. The generic options are declared here; a method's are data in the package that
owns it (`judge/options.json`, `loaders/mme_results.options.json`), read as JSON, never imported.
With --mllm (or --mllm-bench), `harness.setup` starts the run and registers the hooks that delegate to the evaluation core.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from pytest_mllm.pytest_compat import help_requested

MARKER = "mllm_bench"


class MllmHookspecs:
    """Hooks users implement in a conftest.py or plugin."""

    @pytest.hookspec(firstresult=True)
    def pytest_mllm_make_model(self, spec: str, config: pytest.Config) -> Any:
        """Return a model for the `--mllm` value `spec`, or None to leave it to others.

        A model has `name`, `needs_images` and `generate(requests) -> responses`
        (see `pytest_mllm.sample.Model`).
        """


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(MllmHookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    add_options(parser, lists=help_requested(pluginmanager))


def add_options(parser: pytest.Parser, lists: bool = True) -> None:
    """pytest-mllm's command-line and ini options (read and checked when a run starts): the generic ones here, each
    method's from the options file of the package that owns it (`declared_options`), each file a group of the help;
    `lists`: the help names every model form and bundled benchmark (imports the registries: for --help)."""
    group = parser.getgroup("mllm", "multimodal-LLM benchmarks (pytest-mllm)")
    group.addoption("--mllm", metavar="MODEL", help=_model_help() if lists else "model under test")
    group.addoption("--mllm-bench", action="append", metavar="NAME",
                    help=_bench_help() if lists else "benchmark to run: a bundled name or a spec file (.yaml)")
    group.addoption("--mllm-data", action="append", metavar="[NAME=]PATH",
                    help="data root of a benchmark (else $MLLM_DATA_<NAME>, else the spec's data.root, else its released "
                         "data fetched into the data cache)")
    group.addoption("--mllm-data-cache", metavar="DIR",
                    help="where released benchmark data is fetched to and reused from (default $PYTEST_MLLM_DATA_CACHE, "
                         "else ~/.cache/pytest-mllm/data)")
    group.addoption("--mllm-offline", action="store_true",
                    help="download nothing: data missing from the data cache is an error naming the command that "
                         "fetches it on a connected machine (also when HF_HUB_OFFLINE=1)")
    group.addoption("--mllm-limit", type=int, metavar="N",
                    help="a smoke run: at most N samples per task, the first in file order (scoring units stay whole: an "
                         "image's question pair, a question's rotated-option passes, a sample's variants); the results "
                         "record the limit")
    group.addoption("--mllm-json", metavar="PATH", help="write per-sample records and scores as JSON")
    group.addoption("--mllm-html", metavar="PATH", help="write a self-contained HTML report (scores, charts, wrong answers)")
    group.addoption("--mllm-markdown", metavar="PATH",
                    help="write a Markdown summary (scores with intervals, gates, regressions, the reports' paths) "
                         "for a CI page; also appended to $GITHUB_STEP_SUMMARY when that variable is set")
    group.addoption("--mllm-list", action="store_true",
                    help="list the bundled benchmarks (other tools' names for them, tasks, markers, the metric paths "
                         "gates can name, the data each needs) and exit")
    group.addoption("--mllm-gate", action="append", metavar="EXPR",
                    help="score gate such as 'BENCH.accuracy>=0.8' or 'BENCH.TASK.accuracy>=0.5' (--mllm-list names each "
                         "benchmark's gate keys); a failing gate fails the session")
    group.addoption("--mllm-gate-skip-missing", action="store_true", default=None,
                    help="a gate whose benchmark or task did not run is 'not run' instead of failed "
                         "(ini: mllm_gate_skip_missing = true)")
    group.addoption("--mllm-baseline", metavar="PATH", help="earlier --mllm-json results for regression gates")
    group.addoption("--mllm-max-drop", action="append", metavar="[METRIC=]DROP",
                    help="largest allowed drop against the baseline, e.g. 'BENCH.accuracy=0.02' or '0.01'; "
                         "'BENCH.accuracy=significant' fails only on a significant drop (0.05), "
                         "'BENCH.accuracy=0.02@0.05' only when the drop exceeds 0.02 with 95%% confidence")
    group.addoption("--mllm-strict", action="store_true", help="incorrect answers fail (for must-pass suites)")
    group.addoption("--mllm-max-image-pixels", type=int, default=89_478_485, metavar="N",
                    help="refuse images with more pixels than this (default: Pillow's limit; a larger value lifts "
                         "Pillow's own limit as well)")
    group.addoption("--mllm-show-incorrect", type=int, default=10, metavar="N",
                    help="wrong answers listed in the summary (all with -v)")
    group.addoption("--mllm-batch-size", type=int, default=8, metavar="N",
                    help="samples generated together (tests stay one per sample; default 8)")
    group.addoption("--mllm-cache", choices=("on", "off", "refresh"), default="on",
                    help="response cache: on (read and write), off, refresh (ignore old answers, store new)")
    group.addoption("--mllm-cache-dir", metavar="DIR", help="where the response cache lives (default .mllm_cache/)")
    group.addoption("--mllm-no-image", action="store_true",
                    help="withhold every image: the model answers from the text alone (a leakage check; cached apart)")
    group.addoption("--mllm-base-url", action="append", metavar="URL",
                    help="OpenAI-compatible endpoint for openai:<model> (else $OPENAI_BASE_URL, else OpenAI); several "
                         "replicas of one model: repeat or comma-separate (requests spread over them, a failing one's "
                         "requests go to another; answers are cached under the first URL)")
    group.addoption("--mllm-api-key-env", metavar="NAME",
                    help="environment variable holding the API key, which must then be set (default: $OPENAI_API_KEY; "
                         "the key itself never goes on the command line)")
    group.addoption("--mllm-concurrency", type=int, default=8, metavar="N",
                    help="requests in flight to an endpoint (per replica)")
    group.addoption("--mllm-max-new-tokens", type=int, metavar="N",
                    help="longest answer, overriding every benchmark spec's max_new_tokens (ini: mllm_max_new_tokens)")
    group.addoption("--mllm-shard", metavar="I/N",
                    help="run only shard I of N (1-based) of the sample tests; scoring units stay together (an image's "
                         "question pair, a question's rotated-option passes, a sample's variants); merge the shards' "
                         "--mllm-json files with pytest-mllm-merge")
    group.addoption("--mllm-timeout", type=float, default=60.0, metavar="S",
                    help="seconds an endpoint request may take, all of it (connecting, headers, body); not retried "
                         "once spent, and a server that answers nothing in that time fails the run's later requests")
    group.addoption("--mllm-replay-min-match", type=float, default=0.9, metavar="FRACTION",
                    help="--mllm=replay:FILE: refuse a recording whose questions or targets agree with the samples "
                         "they answer for less than this share of the rows that hold them (0 to 1; 0 accepts any)")
    group.addoption("--mllm-model-revision", metavar="TEXT",
                    help="what the served model (openai:<model>) is, e.g. its checkpoint or deployment: part of the "
                         "cache key of its answers, with what its server's /models says of it")
    group.addoption("--mllm-max-retries", type=int, default=4, metavar="N",
                    help="retries (with backoff) on 429, 5xx and connection errors")
    group.addoption("--mllm-gpus", metavar="LIST",
                    help="GPUs to spread xdist workers over, e.g. 0,1,2,3 (default: all visible); -n auto = one per GPU")
    group.addoption("--mllm-gpus-per-worker", type=int, default=1, metavar="K",
                    help="GPUs per worker, for models that span several")
    group.addoption("--mllm-device", default="auto", help="device for transformers models (auto, cpu, cuda)")
    group.addoption("--mllm-dtype", default="auto", help="dtype for transformers models (auto: bf16 on GPU, fp32 on CPU)")
    group.addoption("--mllm-trust-remote-code", action="store_true",
                    help="allow a transformers model to run code from its repository")
    group.addoption("--mllm-model-args", action="append", metavar="KEY=VALUE,…",
                    help="loading arguments for a transformers model and its processor, e.g. revision=main,"
                         "attn_implementation=sdpa,device_map=auto,max_pixels=802816 (values in JSON where they "
                         "parse; ini: mllm_model_args)")
    group.addoption("--mllm-estimate", metavar="SIZE",
                    help="run a subset of each benchmark and estimate its full scores with 95 %% intervals: a fraction "
                         "(20%% or 0.2) or a number of samples per benchmark (100); the subset is drawn stratified by "
                         "the difficulty the --mllm-estimate-panel runs show")
    group.addoption("--mllm-estimate-panel", action="append", metavar="FILE",
                    help="earlier runs' --mllm-json results files (or a pytest-mllm-curate manifest.json) grading each "
                         "sample's difficulty; repeat or comma-separate")
    group.addoption("--mllm-estimate-method", default="stratified", choices=("stratified", "random"),
                    help="how the subset is drawn: stratified by difficulty (default) or a plain random subset")
    group.addoption("--mllm-estimate-seed", type=int, default=0, metavar="N",
                    help="seed of the subset's draw (default 0; the same seed and panel draw the same subset)")
    parser.addini("mllm_gates", type="linelist", default=[], help="score gates, one per line")
    parser.addini("mllm_max_drop", type="linelist", default=[], help="regression limits, one per line")
    parser.addini("mllm_cache_dir", default="", help="where the response cache lives")
    parser.addini("mllm_baseline", default="", help="baseline --mllm-json results for regression gates")
    parser.addini("mllm_model_args", type="linelist", default=[],
                  help="loading arguments for a transformers model and its processor (key=value, comma-separated)")
    parser.addini("mllm_max_new_tokens", default="", help="longest answer, overriding every spec's max_new_tokens")
    parser.addini("mllm_gate_skip_missing", type="bool", default=False,
                  help="a gate whose benchmark or task did not run is 'not run' instead of failed")
    after = "mllm"
    for declared in declared_options():
        group = parser.getgroup(declared.name, declared.title, after=after)
        for name, attrs in declared.options:
            group.addoption(name, **attrs)
        after = declared.name


# A method's options, declared as data beside the code that owns them and read without importing it: `options.json`
# in the method's package, or `<module>.options.json` beside the module that owns them.
OPTIONS_FILES = ("*/options.json", "*/*.options.json")
_FILE_KEYS = {"title", "options"}
_OPTION_KEYS = {"name", "action", "type", "choices", "default", "metavar", "help"}
_TYPES: dict[str, type] = {"int": int, "float": float, "str": str}
_ACTIONS = ("store", "store_true", "append")


class OptionsFileError(ValueError):
    """An options file that pytest cannot take, named with the option and what is wrong."""


class DeclaredOptions(NamedTuple):
    """One options file: its help group (name, title) and each option's name and `addoption` attributes."""

    name: str
    title: str
    options: list[tuple[str, dict[str, Any]]]


def declared_options(package: Path = Path(__file__).parent) -> list[DeclaredOptions]:
    """Every options file under `package`, in the order of their paths."""
    paths = sorted({path for pattern in OPTIONS_FILES for path in package.glob(pattern)})
    return [read_options_file(path, "mllm " + path.relative_to(package).as_posix()) for path in paths]


def read_options_file(path: Path, name: str) -> DeclaredOptions:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise OptionsFileError(f"{path}: not JSON: {error}") from None
    if not isinstance(data, dict) or set(data) != _FILE_KEYS or not isinstance(data["title"], str) \
            or not isinstance(data["options"], list):
        raise OptionsFileError(f"{path}: expected an object with a 'title' (text) and 'options' (a list), and nothing else")
    return DeclaredOptions(name, data["title"], [_option(path, entry) for entry in data["options"]])


def _option(path: Path, entry: Any) -> tuple[str, dict[str, Any]]:
    """An option's name and `addoption` attributes (its type a Python type), or the error naming what is wrong."""
    name = entry.get("name") if isinstance(entry, dict) else None
    if not isinstance(name, str) or not re.fullmatch(r"--mllm(-[a-z0-9]+)+", name):
        raise OptionsFileError(f"{path}: {entry!r}: an option is an object whose 'name' is --mllm-<words>")
    attrs = {key: value for key, value in entry.items() if key != "name"}
    problem = _problem(attrs)
    if problem:
        raise OptionsFileError(f"{path}: option {name}: {problem}")
    if "type" in attrs:
        attrs["type"] = _TYPES[attrs["type"]]
    return name, attrs


def _problem(attrs: dict[str, Any]) -> str | None:
    """What makes an option's attributes unfit for `addoption`, or None."""
    action, kind = attrs.get("action", "store"), attrs.get("type", "str")
    default, choices = attrs.get("default"), attrs.get("choices")
    unknown = sorted(set(attrs) - _OPTION_KEYS)
    checks = (
        (unknown, f"unknown keys {unknown} (known: {', '.join(sorted(_OPTION_KEYS))})"),
        (not isinstance(attrs.get("help"), str) or not attrs["help"], "'help' is a text and required"),
        (not isinstance(action, str) or action not in _ACTIONS, f"unknown action {action!r} (known: {', '.join(_ACTIONS)})"),
        (not isinstance(kind, str) or kind not in _TYPES, f"unknown type {kind!r} (known: {', '.join(_TYPES)})"),
        (action == "store_true" and bool({"type", "choices", "metavar"} & set(attrs)),
         "a store_true option takes no type, choices or metavar"),
        (choices is not None and (not isinstance(choices, list) or not choices
                                  or not all(isinstance(choice, str) for choice in choices)),
         "'choices' is a list of texts"),
        (default is not None and action == "store_true" and not isinstance(default, bool), "a store_true default is true or false"),
        (default is not None and action != "store_true" and not _fits(default, kind),
         f"default {default!r} is not of type {kind}"),
        (default is not None and isinstance(choices, list) and default not in choices, f"default {default!r} is not a choice"),
    )
    return next((text for failed, text in checks if failed), None)


def _fits(value: Any, kind: str) -> bool:
    expected = _TYPES.get(kind, str)
    return not isinstance(value, bool) and isinstance(value, (int, float) if expected is float else expected)


def _model_help() -> str:
    from pytest_mllm.models.registry import ALIASES, BUILTIN_FORMS

    return ("model under test: an alias (" + ", ".join(sorted(ALIASES)) + "), " + ", ".join(BUILTIN_FORMS)
            + ", shapes-llava, or a name registered under the pytest_mllm.models entry point")


def _bench_help() -> str:
    from pytest_mllm.engine.spec import bundled_specs

    return ("benchmark to run: a bundled name (" + ", ".join(sorted(bundled_specs())) + ") or a spec file (.yaml); "
            "repeat or comma-separate for several")


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("mllm") or config.getoption("mllm_bench"))


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--mllm-list: the bundled benchmarks, then exit."""
    if not config.getoption("mllm_list"):
        return None
    from pytest_mllm.harness.listing import listing

    print(listing())
    return 0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(name, task=None): parametrize `mllm_sample` with a benchmark's samples")
    if config.getoption("markers", False):  # `pytest --markers` lists every bundled benchmark's
        from pytest_mllm.harness.listing import register_markers

        register_markers(config)
    if _active(config):  # a run registers the markers of its own benchmarks
        from pytest_mllm.harness.setup import start_run

        start_run(config)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """-n auto with a model under test: one worker per GPU group (none on a CPU-only machine), asked
    before xdist's own count of cores; PYTEST_XDIST_AUTO_NUM_WORKERS, when set, is left to xdist."""
    if not _active(config) or os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    from pytest_mllm.harness.setup import gpu_groups

    return len(gpu_groups(config)) or None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None or "mllm_sample" not in metafunc.fixturenames:
        return
    if not _active(metafunc.config):
        metafunc.parametrize("mllm_sample", [pytest.param(None, marks=pytest.mark.skip(
            reason="benchmark test: pass --mllm=MODEL to run it"))], ids=["needs-mllm"])
        return
    from pytest_mllm.harness.setup import marked_samples

    name = marker.args[0] if marker.args else marker.kwargs.get("name")
    samples = marked_samples(metafunc.config, str(name), marker.kwargs.get("task"))
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
    from pytest_mllm.harness.setup import model_handle

    return model_handle(request.config)
