"""The plugin's per-run state and hooks, registered only when a --mllm option is given."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_mllm.harness.items import BenchmarkFile, SampleItem
from pytest_mllm.scoring.gates import (
    Gate,
    GateSyntaxError,
    Verdict,
    evaluate_gate,
    evaluate_regressions,
    load_baseline,
    parse_gate,
    parse_max_drop,
)
from pytest_mllm.loaders import load_samples
from pytest_mllm.engine.evaluator import Evaluator, sample_record
from pytest_mllm.record import Record
from pytest_mllm.sample import BadSample, Model, Sample, SkippedSample
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, find_spec, is_spec_file, load_spec

_DATA_OVERRIDE = re.compile(r"^([A-Za-z][\w\-]*)=(.+)$")


@dataclass
class Options:
    """The command-line and ini settings of a run, validated up front."""

    model: str | None
    benchmarks: list[Path]
    data: dict[str, str]
    json_path: Path | None
    html_path: Path | None
    mme_results: Path | None
    gates: list[Gate]
    max_drops: list[Gate]
    baseline: Path | None
    strict: bool
    max_pixels: int
    show_incorrect: int
    batch_size: int
    cache_mode: str
    cache_path: Path
    vrp_mode: str | None
    vrp_examples: int
    vrp_radar: Path | None
    no_image: bool = False
    prompts_path: Path | None = None
    prompts_transfer: bool = False
    optimize_path: Path | None = None
    tp_options: dict[str, Any] = field(default_factory=dict)  # TP-Eval settings, split and zero-shot
    hf_options: dict[str, Any] = field(default_factory=dict)
    api_options: dict[str, Any] = field(default_factory=dict, repr=False)  # holds the API key
    judge_options: dict[str, Any] = field(default_factory=dict, repr=False)  # holds the judge's API key
    optimizer_options: dict[str, Any] = field(default_factory=dict, repr=False)  # holds the optimizer's API key

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        """Read and validate; every problem is a UsageError before anything runs."""
        opt = config.getoption
        try:
            benchmarks = [find_spec(name.strip()) for value in opt("mllm_bench") or []
                          for name in value.split(",") if name.strip()]
            gates = [parse_gate(g) for g in [*config.getini("mllm_gates"), *(opt("mllm_gate") or [])]]
            drops = [parse_max_drop(d) for d in [*config.getini("mllm_max_drop"), *(opt("mllm_max_drop") or [])]]
        except (SpecError, GateSyntaxError) as exc:
            raise pytest.UsageError(str(exc)) from None
        for url_option in ("mllm_base_url", "mllm_judge_base_url", "mllm_optimizer_base_url"):
            if opt(url_option):
                from pytest_mllm.engine.chat import check_base_url

                try:
                    check_base_url(opt(url_option))
                except ValueError as exc:
                    raise pytest.UsageError(f"--{url_option.replace('_', '-')}: {exc}") from None
        baseline = opt("mllm_baseline") or config.getini("mllm_baseline") or None
        if drops and not baseline:
            raise pytest.UsageError("--mllm-max-drop needs a baseline: pass --mllm-baseline=PATH (a --mllm-json file)")
        if baseline and not drops:
            drops = [parse_max_drop("0")]
        batch_size = opt("mllm_batch_size")
        if batch_size < 1:
            raise pytest.UsageError(f"--mllm-batch-size must be at least 1, got {batch_size}")
        cache_dir = opt("mllm_cache_dir") or config.getini("mllm_cache_dir") or str(config.rootpath / ".mllm_cache")
        data: dict[str, str] = {}
        for value in opt("mllm_data") or []:
            match = _DATA_OVERRIDE.match(value)
            name, path = (match.group(1), match.group(2)) if match and not Path(value).exists() else ("", value)
            data[name] = path
        return cls(
            model=opt("mllm"), benchmarks=benchmarks, data=data,
            json_path=_path(opt("mllm_json")), html_path=_path(opt("mllm_html")), mme_results=_path(opt("mllm_mme_results")),
            gates=gates, max_drops=drops, baseline=_path(baseline), strict=opt("mllm_strict"),
            max_pixels=opt("mllm_max_image_pixels"), show_incorrect=opt("mllm_show_incorrect"),
            batch_size=batch_size, cache_mode=opt("mllm_cache"),
            vrp_mode=opt("mllm_vrp"), vrp_examples=opt("mllm_vrp_examples"), vrp_radar=_path(opt("mllm_vrp_radar")),
            no_image=opt("mllm_no_image"),
            prompts_path=_path(opt("mllm_prompts")), prompts_transfer=opt("mllm_prompts_transfer"),
            optimize_path=_path(opt("mllm_optimize")), tp_options=_tp_options(config),
            cache_path=Path(cache_dir).expanduser() / "responses.sqlite3",
            hf_options={"device": opt("mllm_device"), "dtype": opt("mllm_dtype"),
                        "trust_remote_code": opt("mllm_trust_remote_code")},
            api_options={"base_url": opt("mllm_base_url"), "api_key": os.environ.get(opt("mllm_api_key_env")),
                         "concurrency": opt("mllm_concurrency"), "timeout_s": opt("mllm_timeout"),
                         "max_retries": opt("mllm_max_retries")},
            judge_options={"model": opt("mllm_judge"), "base_url": opt("mllm_judge_base_url"),
                           "api_key": os.environ.get(opt("mllm_judge_api_key_env")),
                           "mode": opt("mllm_judge_mode"), "temperature": opt("mllm_judge_temperature"),
                           "max_tokens": opt("mllm_judge_max_tokens"),
                           "concurrency": opt("mllm_concurrency"), "timeout_s": opt("mllm_timeout"),
                           "max_retries": opt("mllm_max_retries")},
            optimizer_options={"model": opt("mllm_optimizer"), "base_url": opt("mllm_optimizer_base_url"),
                               "api_key": os.environ.get(opt("mllm_optimizer_api_key_env")),
                               "max_tokens": opt("mllm_optimizer_max_tokens"),
                               "concurrency": opt("mllm_concurrency"), "timeout_s": opt("mllm_timeout"),
                               "max_retries": opt("mllm_max_retries")},
        )


def _tp_options(config: pytest.Config) -> dict[str, Any]:
    """TP-Eval's settings from --mllm-tp-*; a bad value is a usage error naming the option."""
    from pytest_mllm.tpeval.settings import TpSettings

    opt = config.getoption
    try:
        settings = TpSettings(
            rounds=opt("mllm_tp_rounds"), per_round=opt("mllm_tp_per_round"), top_k=opt("mllm_tp_top_k"),
            temperature=opt("mllm_tp_temperature"), alpha=opt("mllm_tp_alpha"), alpha_final=opt("mllm_tp_alpha_final"),
            few=opt("mllm_tp_few"), seed=opt("mllm_tp_seed"), mode=opt("mllm_tp_mode"))
        settings.validate()
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    if opt("mllm_optimize") and opt("mllm_prompts"):
        raise pytest.UsageError("--mllm-optimize and --mllm-prompts do not go together: optimize first, then "
                                "evaluate with --mllm-prompts=FILE in another run")
    if opt("mllm_optimize") and not (opt("mllm_optimizer") or "").startswith("openai:"):
        raise pytest.UsageError("--mllm-optimize needs an optimizer LLM: pass --mllm-optimizer=openai:MODEL "
                                "(and --mllm-optimizer-base-url=URL for a local server)")
    return {"settings": settings, "split": opt("mllm_tp_split"), "zero_shot": opt("mllm_tp_zero_shot")}


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value else None


class MllmSession:
    """Collects benchmarks, answers samples, and reports scores and gates."""

    def __init__(self, config: pytest.Config, options: Options) -> None:
        self.config = config
        self.options = options
        self.spec_paths = {p.resolve() for p in options.benchmarks}
        self.is_worker = hasattr(config, "workerinput")
        self.evaluator = Evaluator(
            self._make_model, model_name=options.model or "", max_pixels=options.max_pixels,
            cache=self._open_cache(), identity_factory=self._model_identity,
            settings={"device": _resolved_device(options.hf_options["device"]),
                      "dtype": options.hf_options["dtype"], "decoding": "greedy"},
            judge_factory=self._make_judge if options.judge_options.get("model") else None,
            withhold_images=options.no_image,
        )
        self._prefetched: dict[str, Record] = {}
        self._positions: dict[str, int] = {}
        self.results_by_bench: dict[str, Any] = {}
        self.verdicts: list[Verdict] = []
        self._records: list[tuple[Record, str]] = []
        self.loaded_specs: dict[str, Path] = {}
        self.prompts = self._read_prompts()
        self._few_ids = {task: frozenset(p.d_few) for task, p in self.prompts.tasks.items()} if self.prompts else {}
        self._prompted_specs: dict[str, BenchmarkSpec] = {}
        self._optimization: Any = None
        self.tp_outcomes: list[dict[str, Any]] = []
        self.few_deselected = 0
        self._plan_printed = False

    # -- models and samples -------------------------------------------------------------

    def _make_model(self) -> Model:
        if not self.options.model:
            raise pytest.UsageError("benchmark tests need a model: pass --mllm=NAME (e.g. --mllm=tiny-llava)")
        made = self.config.hook.pytest_mllm_make_model(spec=self.options.model, config=self.config)
        if made is not None:
            return made
        from pytest_mllm.models.registry import make_model

        hf_options = dict(self.options.hf_options)
        if self.is_worker:
            hf_options["num_threads"] = 1  # CPU workers sharing cores slow each other down badly
        return make_model(self.options.model, hf_options, self.options.api_options)

    def _open_cache(self) -> Any:
        wanted = (self._cacheable() or bool(self.options.judge_options.get("model"))
                  or bool(self.options.optimize_path))  # the optimizer's replies are cached too
        if self.options.cache_mode == "off" or self.options.model is None or not wanted:
            return None
        from pytest_mllm.engine.cache import ResponseCache

        return ResponseCache(self.options.cache_path, read=self.options.cache_mode != "refresh")

    def _cacheable(self) -> bool:
        """Baselines and replays answer instantly: caching them would only cost disk."""
        return not self.options.model.startswith(("baseline:", "replay:"))  # type: ignore[union-attr]

    def _model_identity(self) -> str | None:
        from pytest_mllm.models.registry import model_identity

        identity = model_identity(self.options.model or "", self.options.api_options.get("base_url"))
        return identity if identity is not None else getattr(self.evaluator.model, "identity", None)

    def variant_mode(self, spec: BenchmarkSpec) -> str:
        """How VRP variants apply to this benchmark: --mllm-vrp, else the spec's `variants`."""
        return self.options.vrp_mode or spec.variants

    def _make_judge(self) -> Any:
        """The CEE judge over the shared OpenAI-compatible client; its replies share the response cache."""
        from pytest_mllm.judge import Judge
        from pytest_mllm.engine.chat import ChatClient

        o = self.options.judge_options
        client = ChatClient(o["base_url"], o["api_key"], timeout_s=o["timeout_s"], max_retries=o["max_retries"],
                            concurrency=o["concurrency"])
        model = o["model"].removeprefix("openai:")
        cache = self.evaluator.cache if self.options.cache_mode != "off" else None
        return Judge(client, model, temperature=o["temperature"], mode=o["mode"], max_tokens=o["max_tokens"],
                     cache=cache)

    # -- TP-Eval: optimization runs and customized prompts ---------------------------------

    @property
    def optimization(self) -> Any:
        """The TP-Eval optimization of this run (--mllm-optimize), built on first use."""
        if self._optimization is None:
            from pytest_mllm.tpeval.run import OptimizationRun

            self._optimization = OptimizationRun(self)
        return self._optimization

    def _read_prompts(self) -> Any:
        if self.options.prompts_path is None:
            return None
        from pytest_mllm.tpeval.prompts_file import PromptsFileError, read_prompts

        try:
            return read_prompts(self.options.prompts_path)
        except PromptsFileError as exc:
            raise pytest.UsageError(str(exc)) from None

    def check_prompts(self, spec: BenchmarkSpec, samples: Sequence[Any]) -> None:
        """A --mllm-prompts file must fit this model, benchmark, version and the tasks of `samples`
        (SpecError otherwise)."""
        if self.prompts is None or spec.name in self._prompted_specs:
            return
        from pytest_mllm.tpeval.prompts_file import PromptsFileError, check_prompts
        from pytest_mllm.tpeval.run import task_order, with_template

        tasks = task_order([s for s in samples if isinstance(s, Sample)])
        try:
            check_prompts(self.prompts, path=self.options.prompts_path, model=self.options.model or "",
                          benchmark=spec.name, version=spec.version, tasks=tasks,
                          transfer=self.options.prompts_transfer)
        except PromptsFileError as exc:
            raise SpecError(str(exc)) from None
        prompted = spec
        for task, prompts in self.prompts.tasks.items():
            prompted = with_template(prompted, task, prompts.template)
        self._prompted_specs[spec.name] = prompted

    def optimized_on(self, sample: Sample) -> bool:
        """True when `sample` is in the D_few its task's prompt was optimized on."""
        return sample.id in self._few_ids.get(sample.task, ())

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        """With --mllm-prompts, leave out the samples each prompt was optimized on (D_few ∩ D_test = ∅)."""
        if self.prompts is None:
            return
        few = [i for i in items
               if isinstance(i, SampleItem) and isinstance(i.sample, Sample) and self.optimized_on(i.sample)]
        if few:
            self.few_deselected = len(few)
            config.hook.pytest_deselected(items=few)
            drop = set(map(id, few))
            items[:] = [i for i in items if id(i) not in drop]

    def samples_for(self, spec: BenchmarkSpec) -> list[Sample | BadSample | SkippedSample]:
        """All samples of a benchmark (with their VRP variants in grid mode); two spec files may
        not claim the same benchmark name."""
        earlier = self.loaded_specs.setdefault(spec.name, spec.path)
        if earlier != spec.path:
            raise SpecError(f"two benchmark specs are named {spec.name!r}: {earlier} and {spec.path}")
        root = spec.resolve_data_root(self.options.data.get(spec.name) or self.options.data.get(""))
        samples = load_samples(spec, root)
        mode = self.variant_mode(spec)
        if mode == "none":
            return list(samples)
        from pytest_mllm.vrp.expand import with_variants

        return with_variants(samples, mode)

    def record_for(self, item: SampleItem) -> Record:
        """The record of one sample, answered in a batch with the samples this process runs next."""
        if item.nodeid in self._prefetched:
            return self._prefetched.pop(item.nodeid)
        if not isinstance(item.sample, Sample):
            record = _bad_sample_record(item.sample, item.spec)
            record["order"] = item.order
            return record
        batch = [item, *self._upcoming(item)]
        records = self._evaluate(batch)
        for member, record in zip(batch, records):
            record["order"] = member.order
            if self.options.html_path and record["status"] == "incorrect":
                record["thumbnail"] = _thumbnail(member.sample, self.options.max_pixels)  # type: ignore[arg-type]
            self._prefetched[member.nodeid] = record
        return self._prefetched.pop(item.nodeid)

    def _evaluate(self, batch: list[SampleItem]) -> list[Record]:
        """Records of a batch; with --mllm-prompts a customized task's record also holds the answer to the
        benchmark's own prompt, under "original"."""
        if self.prompts is None:
            return self.evaluator.evaluate([(i.sample, i.spec) for i in batch])  # type: ignore[misc]
        records = self.evaluator.evaluate([(i.sample, self._prompted_specs.get(i.spec.name, i.spec))  # type: ignore[misc]
                                           for i in batch])
        customized = [(n, i) for n, i in enumerate(batch) if i.sample.task in self.prompts.tasks]
        originals = self.evaluator.evaluate([(i.sample, i.spec) for _, i in customized])  # type: ignore[misc]
        for (n, member), original in zip(customized, originals):
            record = records[n]
            record["original"] = {k: original[k] for k in ("prompt", "response", "parsed", "correct", "status", "error")}
            if self.optimized_on(member.sample):  # type: ignore[arg-type]
                record.update(status="error", correct=None, error=(
                    f"sample {record['id']} is in the D_few the prompt of task {record['task']!r} was optimized on "
                    f"({self.options.prompts_path}); it cannot be scored with that prompt"))
        return records

    def _upcoming(self, item: SampleItem) -> list[SampleItem]:
        """Up to batch size − 1 samples this process will run next, with the same generation length."""
        want = self.options.batch_size - 1
        if want == 0:
            return []
        indices = _xdist_queue(self.config, want)
        items = item.session.items
        if indices is None:  # no xdist: the rest of the collection, in order
            start = self._positions.get(item.nodeid, len(items))
            indices = range(start + 1, len(items))
        upcoming: list[SampleItem] = []
        for index in indices:
            other = items[index]
            if (isinstance(other, SampleItem) and isinstance(other.sample, Sample)
                    and other.spec.max_new_tokens == item.spec.max_new_tokens
                    and other.nodeid not in self._prefetched):
                upcoming.append(other)
                if len(upcoming) == want:
                    break
        return upcoming

    # -- hooks: configuration and collection -----------------------------------------

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> BenchmarkFile | None:
        resolved = file_path.resolve()
        if resolved in self.spec_paths:  # from --mllm-bench: test ids start with the benchmark's name
            return BenchmarkFile.from_parent(parent, path=file_path, nodeid=load_spec(resolved).name)
        if parent.session.isinitpath(file_path) and is_spec_file(file_path):
            return BenchmarkFile.from_parent(parent, path=file_path)
        return None

    # -- hooks: running -----------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
        report = yield
        if call.when == "call" and hasattr(item, "result_json"):  # a TP-Eval task
            report.mllm_tp = item.result_json()
            report.mllm_spec = str(item.spec.path)  # type: ignore[attr-defined]
        if isinstance(item, SampleItem) and call.when == "call" and item.records:
            for record in item.records:
                record["duration_s"] = round(report.duration / len(item.records), 6)
            report.mllm_records = json.dumps(item.records)  # one string crosses xdist far faster than nested dicts
            report.mllm_spec = str(item.spec.path)
        return report

    def pytest_report_teststatus(self, report: pytest.TestReport) -> tuple[str, str, Any] | None:
        records = _records_of(report)
        if len(records) != 1 or report.when != "call":
            return None
        record = records[0]
        if record["status"] == "incorrect" and report.passed:
            return "incorrect", "i", ("INCORRECT", {"yellow": True})
        if record["status"] == "error":
            return "error", "E", ("ERROR", {"red": True})
        return None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        for record in _records_of(report):
            self._records.append((record, report.mllm_spec))
        if getattr(report, "mllm_tp", None):
            self._task_optimized(json.loads(report.mllm_tp), load_spec(Path(report.mllm_spec)))

    def _task_optimized(self, outcome: dict[str, Any], spec: BenchmarkSpec) -> None:
        """Write a finished task into the prompts file at once: an interrupted run keeps it."""
        from pytest_mllm.tpeval.run import task_prompts

        outcome["benchmark"] = spec.name
        self.tp_outcomes.append(outcome)
        if not outcome["already"]:
            self.optimization.save(spec, outcome["task"], task_prompts(outcome["prompts"]))

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._positions = {item.nodeid: n for n, item in enumerate(session.items)}
        if self.options.optimize_path and not self.is_worker:
            self._print_plan([(i.spec, i.task) for i in session.items if hasattr(i, "result_json")])  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller learns the selected tasks from the first worker's collection."""
        if not self.options.optimize_path or self._plan_printed:
            return
        specs = {load_spec(p.resolve()).name: load_spec(p.resolve()) for p in self.options.benchmarks}
        selected = []
        for nodeid in ids:
            name, _, task = nodeid.partition("::optimize::")
            spec = specs.get(name.rsplit("/", 1)[-1].removesuffix(".yaml").removesuffix(".yml")) or specs.get(name)
            if task and spec is not None:
                selected.append((spec, task))
        self._print_plan(selected)

    def _print_plan(self, selected: list[tuple[BenchmarkSpec, str]]) -> None:
        """Before an optimization starts: the calls it will make at most."""
        self._plan_printed = True
        reporter = self.config.pluginmanager.getplugin("terminalreporter")
        if reporter is None:
            return
        try:
            lines = self.optimization.plan_lines(selected)
        except Exception as exc:  # noqa: BLE001 - the same problem errors the tests, with its full message
            lines = [f"TP-Eval: the plan could not be computed ({exc})"]
        for line in lines:
            reporter.write_line(line, bold=True)

    # -- hooks: reporting ---------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            return
        from pytest_mllm.report.results import RunResults, results_document, write_json

        gathered = RunResults()
        for record, spec_path in self._records:
            gathered.add(record, spec_path)
        self.results_by_bench = results = gathered.compute()
        self.verdicts = self._verdicts(results)
        if any(v.verdict == "fail" for v in self.verdicts) and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        document = results_document(results, self.verdicts, self._settings())
        if self.options.json_path:
            write_json(self.options.json_path, document)
        if self.options.html_path:
            from pytest_mllm.report.html import write_html

            write_html(document, self.options.html_path)
        if self.options.vrp_radar:
            from pytest_mllm.vrp.radar import write_radar

            write_radar({name: r.scopes.get("vrp") or {} for name, r in results.items()}, self.options.vrp_radar)
        if self.options.mme_results:
            from pytest_mllm.loaders.mme_results import write_mme_results

            write_mme_results([r for res in results.values() for r in res.records], self.options.mme_results)

    def _verdicts(self, results: dict[str, Any]) -> list[Verdict]:
        current = {name: r.metrics for name, r in results.items()}
        scopes = {name: [*r.spec.task_order, *r.spec.groups] for name, r in results.items()}
        verdicts = [evaluate_gate(gate, current, scopes) for gate in self.options.gates]
        if self.options.baseline:
            try:
                baseline = load_baseline(self.options.baseline)
            except GateSyntaxError as exc:
                baseline = {}
                verdicts.append(Verdict(Gate(str(self.options.baseline), "*", "*"), None, None, "fail", str(exc)))
            headlines = {name: r.spec.headline for name, r in results.items()}
            verdicts += evaluate_regressions(self.options.max_drops, current, baseline, headlines)
        return verdicts

    def _settings(self) -> dict[str, Any]:
        return {
            "model": self.options.model,
            "batch_size": self.options.batch_size,
            "cache": self.options.cache_mode,
            "judge": self.options.judge_options.get("model"),
            "judge_mode": self.options.judge_options.get("mode") if self.options.judge_options.get("model") else None,
            "benchmarks": [str(p) for p in self.options.benchmarks],
            "strict": self.options.strict,
            "images_withheld": self.options.no_image,
            "prompts": str(self.options.prompts_path) if self.options.prompts_path else None,
            "prompts_model": self.prompts.model if self.prompts is not None else None,
            "few_deselected": self.few_deselected,
            "gates": [g.text for g in self.options.gates],
            "baseline": str(self.options.baseline) if self.options.baseline else None,
        }

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        if self.tp_outcomes:
            from pytest_mllm.report.terminal import render
            from pytest_mllm.tpeval.report import optimization_table, summarize_warnings

            terminalreporter.section("pytest-mllm TP-Eval prompt customization")
            terminalreporter.write(render([optimization_table(self.tp_outcomes)], terminalreporter._tw.fullwidth,
                                          terminalreporter.hasmarkup))
            for outcome in self.tp_outcomes:
                for warning in summarize_warnings(outcome.get("warnings") or []):
                    terminalreporter.write_line(f"warning: {outcome['benchmark']}::{outcome['task']}: {warning}",
                                                yellow=True)
            terminalreporter.write_line(f"pytest-mllm: prompts written to {self.options.optimize_path}")
        if not (self.results_by_bench or self.verdicts):
            return
        from pytest_mllm.report.terminal import (
            benchmark_tables,
            category_table,
            gates_table,
            incorrect_lines,
            judge_table,
            render,
            vrp_table,
        )
        from pytest_mllm.tpeval.report import tp_eval_table

        tables: list[Any] = []
        for result in self.results_by_bench.values():
            tables += [*benchmark_tables(result), category_table(result), vrp_table(result), judge_table(result),
                       tp_eval_table(result)]
        if self.verdicts:
            tables.append(gates_table(self.verdicts))
        terminalreporter.section("pytest-mllm scores")
        terminalreporter.write(render(tables, terminalreporter._tw.fullwidth, terminalreporter.hasmarkup))
        limit = 10**9 if self.config.getoption("verbose") > 0 else self.options.show_incorrect
        lines = incorrect_lines(self.results_by_bench, limit)
        if lines:
            terminalreporter.section("incorrect answers", sep="-")
            for line in lines:
                terminalreporter.write_line(line)
        for kind, path in (("results", self.options.json_path), ("HTML report", self.options.html_path)):
            if path:
                terminalreporter.write_line(f"pytest-mllm: {kind} written to {path}")


def _thumbnail(sample: Sample, max_pixels: int) -> str | None:
    """A small JPEG data URL of the sample's first image, for the HTML report's wrong answers."""
    import base64
    import io

    from pytest_mllm.engine.images import ImageError, load_image

    if not sample.images:
        return None
    try:
        image = load_image(sample.images[0], max_pixels)
    except ImageError:
        return None
    image.thumbnail((160, 160))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _records_of(report: pytest.TestReport) -> list[Record]:
    """The records a sample test's report carries (decoded once, then kept decoded)."""
    raw = getattr(report, "mllm_records", None)
    if isinstance(raw, str):
        raw = report.mllm_records = json.loads(raw)
    return raw or []


def _xdist_queue(config: pytest.Config, limit: int) -> list[int] | None:
    """Indices of the tests an xdist worker has been handed and not yet started (None outside xdist)."""
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(plugin, "nextitem_index"):
            with queue.lock() as queued:
                pending = [i for i in itertools.islice(queued, limit) if isinstance(i, int)]
            following = plugin.nextitem_index
            return ([following] if isinstance(following, int) else []) + pending
    return None


def _resolved_device(device: str) -> str:
    """"auto" as the device it will mean, without importing torch (it keys the cache)."""
    if device != "auto":
        return device
    gpus = Path("/proc/driver/nvidia/gpus")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    has_gpu = gpus.is_dir() and any(gpus.iterdir()) and visible not in ("", "-1")
    return "cuda" if has_gpu else "cpu"


def _bad_sample_record(sample: BadSample | SkippedSample, spec: BenchmarkSpec) -> Record:
    """An error record for a sample that could not be read."""
    placeholder = Sample(id=sample.id, benchmark=sample.benchmark, task=sample.task, question="", answer="")
    record = sample_record(placeholder, spec, "")
    record["error"] = sample.error if isinstance(sample, BadSample) else sample.reason
    return record
