"""The evaluation core, free of pytest: a run's model and cache and the sections' settings, its samples, its
answers in batches (as its sections change them), and the records it gathers into scores.

The pytest harness (`pytest_mllm.harness`) drives one `Evaluation` per process; a script or a
notebook can drive one too:

    evaluation = Evaluation(EvaluationSettings(model="tiny-llava"))
    spec = evaluation.spec(find_spec("shapes"))
    records = evaluation.answer([(s, spec) for s in evaluation.samples_for(spec)[:8]])
    evaluation.gather(records)
    results = evaluation.results()          # per benchmark: metrics and scopes
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.engine.evaluator import Evaluator, failed_batch_error, sample_record
from pytest_mllm.engine.fetch import DataCache
from pytest_mllm.engine.images import DEFAULT_MAX_PIXELS
from pytest_mllm.engine.pipeline import Turn, WaitsOutsideTurn
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.models.ref import ModelRef
from pytest_mllm.record import Record
from pytest_mllm.sample import BadSample, Model, Sample, SkippedSample
from pytest_mllm.sections import (SECTIONS, BatchAnswer, Section, VerdictStep, all_sections, described, review_steps,
                                  uses_cache)

if TYPE_CHECKING:
    from pytest_mllm.engine.cache import ResponseCache
    from pytest_mllm.estimate.plan import EstimateSettings
    from pytest_mllm.report.results import BenchmarkResult

AnySample = Sample | BadSample | SkippedSample
Answer = Callable[[Sample, BenchmarkSpec], Record]


class TaskJob(Protocol):
    """A run that works per task instead of per sample (a section's `task_job`): one test per task."""

    name: str  # the tests' names: <benchmark>::<name>::<task>
    title: str  # the method in words, for its progress
    calls: tuple[str, ...]  # the kinds of calls its progress counts: a task reports "<kind>-made" events

    def calls_text(self, counts: Mapping[str, int], bar: bool = False) -> str:
        """The calls made so far ({kind: count}) in words: a progress line's end, or the bar's (`bar`)."""

    @property
    def steps(self) -> int:
        """Steps per task, for its progress."""

    def run_task(self, spec: BenchmarkSpec, task: str, samples: Sequence[Sample],
                 progress: Callable[[str, int], None]) -> dict[str, Any]:
        """The task's outcome, as a plain dict; a `record.MessageOnly` error fails its test alone."""

    def plan_lines(self, selected: Sequence[tuple[BenchmarkSpec, str]]) -> list[str]:
        """What the selected (benchmark, task) pairs will cost at most, shown once before they start."""

    def task_finished(self, spec: BenchmarkSpec, outcome: dict[str, Any]) -> None:
        """A task's outcome reached the process that ends the run: kept at once (an interrupted run keeps it)."""

    def summary(self, outcomes: Sequence[dict[str, Any]]) -> tuple[str, list[Any], list[str], list[str]]:
        """The terminal summary's part for the finished tasks: (heading, tables, warnings, lines)."""


SampleCheck = Callable[[Sample, Answer, Callable[[list[Record]], None]], None]


@dataclass(frozen=True)
class EvaluationSettings:
    """Everything that decides which answers a run gets and how they are scored."""

    model: str
    data: Mapping[str, str] = field(default_factory=dict)  # benchmark name ("" for any) → data root
    max_pixels: int = DEFAULT_MAX_PIXELS
    batch_size: int = 8
    cache_mode: str = "on"  # on, off, refresh
    cache_path: Path = Path(".mllm_cache") / "responses.sqlite3"
    no_image: bool = False
    hf_options: Mapping[str, Any] = field(default_factory=lambda: {"device": "auto", "dtype": "auto",
                                                                   "trust_remote_code": False})
    endpoint: Endpoint = field(default_factory=Endpoint.from_environment)  # of an openai:<model> under test
    worker: bool = False  # one of several processes sharing the CPU cores
    # (this process's index, the processes running the run together): a served model's concurrency is shared out
    workers: tuple[int, int] = (0, 1)
    max_new_tokens: int | None = None  # overrides every spec's max_new_tokens (keys the cache as such)
    replay_min_match: float = 0.9  # replay: the least share of compared rows whose question or target must agree
    data_cache: DataCache = field(default_factory=DataCache)  # where released data is fetched to (engine/fetch.py)
    estimate: EstimateSettings | None = None  # --mllm-estimate: a subset of each benchmark, its full scores estimated
    sections: Mapping[str, Any] = field(default_factory=dict)  # section → its run settings (`Section.read_options`)

    @cached_property
    def model_ref(self) -> ModelRef:
        """`model` read into its kind and argument."""
        return ModelRef.parse(self.model)


class Evaluation:
    """One run's evaluation, per process: models and caches are built on first use."""

    def __init__(self, settings: EvaluationSettings, *,
                 make_model: Callable[[], Model | None] = lambda: None,
                 on_load: Callable[[str, float | None, str | None], None] = lambda name, seconds, where: None) -> None:
        """`make_model` may supply the model under test (a conftest hook); None leaves it to the registry.
        `on_load` is told (name, None, None) as the model starts loading and (name, seconds, where its weights
        went, if the model says) once it has."""
        self.settings = settings
        self._make_user_model = make_model
        self.turn = Turn()  # held by each answer of an `AnswerPipeline` (a served model's requests in flight)
        self.cache = self._open_cache()
        self.evaluator = Evaluator(
            self._make_model, model_name=settings.model, max_pixels=settings.max_pixels, cache=self.cache,
            identity_factory=self._model_identity,
            settings=_answer_settings(settings.hf_options), withhold_images=settings.no_image,
            verdict_steps=self._verdict_step, review_steps=review_steps(settings.sections, settings, self.cache),
            max_new_tokens=settings.max_new_tokens, on_load=on_load)
        self.specs: dict[str, BenchmarkSpec] = {}  # by benchmark name
        self._records: list[Record] = []
        self._rows: dict[str, Sequence[AnySample]] = {}  # benchmark → the samples its loader read (for `data`)
        self.replay_coverage: dict[str, str] = {}  # benchmark → how the replayed recording covers its samples
        self._answer_batch = self._wrapped_answer()  # a file a section needs is read now (MessageOnly when unusable)

    # -- the parts ---------------------------------------------------------------------------

    def _make_model(self) -> Model:
        made = self._make_user_model()
        if made is None:
            from pytest_mllm.models.registry import make_model

            hf_options = dict(self.settings.hf_options)
            if self.settings.worker:
                hf_options["num_threads"] = 1  # CPU workers sharing cores slow each other down badly
            made = make_model(self.settings.model_ref, hf_options, self.endpoint)
        return WaitsOutsideTurn(made, self.turn) if self.requests_in_flight() else made

    def requests_in_flight(self) -> int | None:
        """For a served model (`openai:`), how many requests to keep in flight across tests: its
        concurrency per replica times the replicas; None for a model that answers a batch at a time."""
        if not self.settings.model_ref.served:
            return None
        endpoint = self.endpoint
        return endpoint.concurrency * len(endpoint.urls)

    @property
    def endpoint(self) -> Endpoint:
        """The served model's endpoint as this process uses it: its share of the concurrency per replica, where
        several processes run the run together (xdist workers keep the set total in flight between them; each
        keeps at least one)."""
        endpoint = self.settings.endpoint
        index, count = self.settings.workers
        if count <= 1:
            return endpoint
        share = endpoint.concurrency // count + (index < endpoint.concurrency % count)
        return dataclasses.replace(endpoint, concurrency=max(1, share))

    def _open_cache(self) -> ResponseCache | None:
        s = self.settings
        # caching the answers of a model that answers without work would only cost disk (the calls a section
        # makes of its own, an LLM's replies, are worth keeping)
        if s.cache_mode == "off" or (s.model_ref.instant and not uses_cache(s.sections)):
            return None
        from pytest_mllm.engine.cache import ResponseCache

        return ResponseCache(s.cache_path, read=s.cache_mode != "refresh")

    def _model_identity(self) -> str | None:
        from pytest_mllm.models.registry import model_identity

        model_args = self.settings.hf_options.get("model_args")
        revision = model_args.loading.get("revision") if model_args else None
        identity = model_identity(self.settings.model_ref, revision)
        return identity if identity is not None else getattr(self.evaluator.model, "identity", None)

    def _verdict_step(self, section: str) -> VerdictStep:
        """The verdict step of a section (`Section.verdict_step`) with its settings for this run."""
        return SECTIONS.get(section).verdict_step(self.settings.sections.get(section), self.settings, self.cache)

    @property
    def model(self) -> Model:
        """The model under test, loaded on first use."""
        return self.evaluator.model

    # -- samples ---------------------------------------------------------------------------

    def spec(self, path: Path) -> BenchmarkSpec:
        """The spec at `path`, known from now on by its benchmark's name; two files may not claim one name."""
        spec = load_spec(path)
        earlier = self.specs.setdefault(spec.name, spec)
        if earlier.path != spec.path:
            raise SpecError(f"two benchmark specs are named {spec.name!r}: {earlier.path} and {spec.path}")
        return spec

    @cached_property
    def _sections(self) -> tuple[tuple[Section, Any], ...]:
        """(section, its settings for this run or None) of every registered section."""
        return tuple((section, self.settings.sections.get(section.name)) for section in all_sections())

    def task_job(self) -> TaskJob | None:
        """The job this run does per task instead of answering samples, or None: the first section's that has
        one (`Section.task_job`), built on first use."""
        return self._task_job

    @cached_property
    def _task_job(self) -> TaskJob | None:
        for section, settings in self._sections:
            job = section.task_job(settings, self.settings, self.evaluator.evaluate, self.cache)
            if job is not None:
                return job  # type: ignore[no-any-return]
        return None

    def sample_check(self, spec: BenchmarkSpec) -> SampleCheck | None:
        """What a sample's test checks instead of its one answer, or None: `(sample, answer, keep)` asks
        `answer` as it needs, hands the records so far to `keep`, and raises when the check fails; the first
        section's that has one (`Section.sample_check`: a metamorphic relation over drawn variants)."""
        for section, settings in self._sections:
            check = section.sample_check(settings, spec, self.settings)
            if check is not None:
                return check
        return None

    def data_root(self, spec: BenchmarkSpec) -> Path | None:
        """Where a benchmark's data is read from: its --mllm-data root (under any name it answers to), else its
        variable, its `data.root`, or the run's data cache (`BenchmarkSpec.resolve_data_root`)."""
        return spec.resolve_data_root(spec.data_override(self.settings.data), self.settings.data_cache)

    def samples_for(self, spec: BenchmarkSpec) -> list[AnySample]:
        """All samples of a benchmark, with those the sections add (`Section.expand`: variants of each); with
        --mllm-estimate, the subset drawn of them (`estimate.plan`; a SpecError when the panel cannot draw it)."""
        samples = load_samples(spec, self.data_root(spec))
        self._rows[spec.name] = samples
        expanded: list[AnySample] = list(samples)
        for section, settings in self._sections:
            expanded = section.expand(settings, spec, expanded)
        return self._subset(spec, expanded) if self.settings.estimate is not None else expanded

    def _subset(self, spec: BenchmarkSpec, samples: list[AnySample]) -> list[AnySample]:
        from pytest_mllm.estimate.panel import PanelError
        from pytest_mllm.estimate.plan import subset

        assert self.settings.estimate is not None
        try:
            return subset(self.settings.estimate, spec, samples)
        except PanelError as exc:
            raise SpecError(str(exc)) from None

    # -- checks before a benchmark's tests ------------------------------------------------------

    def check_samples(self, spec: BenchmarkSpec, samples: Sequence[AnySample]) -> None:
        """Each section's check of a benchmark's samples against its settings, before their tests are collected
        (`Section.check_samples`: a file made for another model or benchmark); a SpecError names the fix."""
        for section, settings in self._sections:
            try:
                section.check_samples(settings, spec, samples, self.settings)
            except ValueError as exc:
                raise SpecError(str(exc)) from None

    def check_replay(self, spec: BenchmarkSpec, samples: Sequence[AnySample]) -> None:
        """With `replay:`, how the recording covers this benchmark's samples (a line kept in
        `replay_coverage`); a SpecError naming the first disagreeing row when its questions or
        targets match too few of them."""
        if not self.settings.model_ref.recording:
            return
        from pytest_mllm.models.replay import ReplayModel
        from pytest_mllm.models.replay_check import ReplayMismatch, check_coverage, coverage

        model = self.evaluator.model
        if not isinstance(model, ReplayModel):
            return
        found = coverage(model, [s for s in samples if isinstance(s, Sample)])
        try:
            check_coverage(found, path=str(model.path), benchmark=spec.name, min_match=self.settings.replay_min_match)
        except ReplayMismatch as exc:
            raise SpecError(str(exc)) from None
        self.replay_coverage[spec.name] = found.line(spec.name)

    def set_aside(self, sample: Sample) -> bool:
        """True when a section keeps `sample` out of the run's tests (`Section.set_aside`: it served to tune how
        the benchmark is asked)."""
        return any(section.set_aside(settings, sample) for section, settings in self._set_asides)

    @cached_property
    def _set_asides(self) -> tuple[tuple[Section, Any], ...]:
        """The sections asked per sample whether to set it aside: those with settings for this run."""
        return tuple((section, settings) for section, settings in self._sections if settings is not None)

    # -- answers ---------------------------------------------------------------------------

    def answer(self, items: Sequence[tuple[Sample, BenchmarkSpec]]) -> list[Record]:
        """Records of `items`, answered together, one per item whatever fails (an exception nobody expected
        makes each sample of the batch an error, never a missing record), as the sections answer a batch
        (`Section.wrap_answer`: under another spec, with a second answer in each record)."""
        try:
            return self._answer_batch(items)
        except Exception as exc:  # noqa: BLE001 - scored as errors: a dropped sample would inflate the scores
            error = failed_batch_error(exc)
            records = []
            for sample, spec in items:
                record = sample_record(sample, spec, "")
                record.update({"model": self.settings.model, "error": error})
                records.append(record)
            return records

    def _wrapped_answer(self) -> BatchAnswer:
        """The evaluator's answer to a batch, wrapped by each section in turn (`Section.wrap_answer`)."""
        answer: BatchAnswer = self.evaluator.evaluate
        for section, settings in self._sections:
            answer = section.wrap_answer(settings, answer)
        return answer

    @staticmethod
    def unreadable(sample: BadSample | SkippedSample, spec: BenchmarkSpec) -> Record:
        """The error record of a sample that could not be read."""
        placeholder = Sample(id=sample.id, benchmark=sample.benchmark, task=sample.task, question="", answer="",
                             pair_group=sample.pair_group if isinstance(sample, BadSample) else None)
        record = sample_record(placeholder, spec, "")
        record["error"] = sample.error if isinstance(sample, BadSample) else sample.reason
        return record

    def crashed(self, sample: AnySample, spec: BenchmarkSpec, reason: str) -> Record:
        """The error record of a sample whose process died while answering it."""
        record = sample_record(sample, spec, "") if isinstance(sample, Sample) else self.unreadable(sample, spec)
        record["error"] = f"{reason} (the process answering it died: the model crashed or ran out of memory)"
        return record

    # -- scores ------------------------------------------------------------------------------

    def gather(self, records: Sequence[Record], spec_path: Path | None = None) -> None:
        """Keep records for the scores; `spec_path` names their spec where this process has not read it."""
        for record in records:
            if record["benchmark"] not in self.specs and spec_path is not None:
                self.spec(spec_path)
            self._records.append(record)

    def results(self) -> dict[str, BenchmarkResult]:
        """Metrics per benchmark over the gathered records, in collection order."""
        from pytest_mllm.report.results import compute_results

        results = compute_results(self.specs, self._records)
        for result in results.values():
            result.data = self.data_identity(result.spec)
        return results

    def data_identity(self, spec: BenchmarkSpec) -> dict[str, Any] | None:
        """The digest of the files and rows a benchmark's samples were read from (`engine/data_identity.py`);
        read again where this process did not load them (an xdist controller); None if they cannot be."""
        from pytest_mllm.engine.data_identity import data_identity

        try:
            root = self.data_root(spec)
            rows = self._rows.get(spec.name)
            if rows is None:
                rows = load_samples(spec, root)
        except (SpecError, OSError, ValueError):
            return None
        return data_identity(spec, root, rows)

    def describe(self) -> dict[str, Any]:
        """The settings that shaped the answers, for the results file."""
        s = self.settings
        model_args = s.hf_options.get("model_args")
        return {
            "model": s.model, "batch_size": s.batch_size, "cache": s.cache_mode,
            "model_args": {**model_args.loading, **model_args.processor} if model_args else {},
            "images_withheld": s.no_image, "max_new_tokens": s.max_new_tokens,
            **({"estimate": s.estimate.describe()} if s.estimate is not None else {}),
            **described(s.sections),
        }


def _resolved_device(device: str) -> str:
    """"auto" as the device it will mean, without importing torch (it keys the cache)."""
    if device != "auto":
        return device
    gpus = Path("/proc/driver/nvidia/gpus")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    has_gpu = gpus.is_dir() and any(gpus.iterdir()) and visible not in ("", "-1")
    return "cuda" if has_gpu else "cpu"


def _answer_settings(hf_options: Mapping[str, Any]) -> dict[str, Any]:
    """What decides a transformers model's answers besides its identity: device, dtype, greedy decoding,
    and the --mllm-model-args that change answers (they key the cache; placement does not)."""
    model_args = hf_options.get("model_args")
    extra = model_args.answer_settings if model_args else {}
    return {"device": _resolved_device(hf_options.get("device", "auto")),
            "dtype": extra.pop("dtype", hf_options.get("dtype", "auto")), "decoding": "greedy",
            **({"model_args": extra} if extra else {})}
