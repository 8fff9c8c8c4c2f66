"""From samples to records: render the prompt, read the images, ask the model, parse, score.

A record is a plain dict of builtins so it can ride on a pytest report across xdist.
Its `status` is "correct", "incorrect" or "error"; an error never carries a verdict.
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, NamedTuple, Sequence

from pytest_mllm.echo import clip, excerpt, well_formed
from pytest_mllm.engine.cache import ResponseCache, cache_key
from pytest_mllm.engine.data_identity import input_digest
from pytest_mllm.engine.images import DEFAULT_MAX_PIXELS, DecodedImages, ImageError, load_image
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.record import Record, new_record
from pytest_mllm.sample import Model, Request, Response, Sample
from pytest_mllm.scoring.score import NOT_YET_RULED, get_parser, normalize_answer, score_record
from pytest_mllm.sections import ReviewStep, VerdictStep, parts_from_sample


def render_options(sample: Sample) -> str:
    """Options as "A. text" lines."""
    return "\n".join(f"{letter}. {text}" for letter, text in sample.choices)


def render_prompt(template: str, sample: Sample) -> str:
    """Fill a spec's prompt template: {question}, {options}, {hint}, {task}."""
    hint = str(sample.metadata.get("hint") or "")
    return template.format_map({
        "question": sample.question,
        "options": render_options(sample),
        "hint": f"Hint: {hint}\n" if hint else "",
        "task": sample.task,
    })


def sample_record(sample: Sample, spec: BenchmarkSpec, prompt: str) -> Record:
    """The record of `sample` before the model has answered, with the parts its metadata fills
    (`sections.parts_from_sample`)."""
    parser = spec.task_settings(sample.task).parser
    return new_record(
        id=sample.id, benchmark=sample.benchmark, task=sample.task, question=sample.question, prompt=prompt,
        answer=normalize_answer(sample.answer, parser), group=spec.group_of(sample.task), image=sample.image_name,
        answer_type=sample.answer_type, parser=parser, pair_group=sample.pair_group, category=sample.category,
        l2_category=sample.l2_category, split=sample.split, **parts_from_sample(sample.metadata))


class _Todo(NamedTuple):
    """A sample left to answer: its record, the tokens it may take, and how its response is read."""

    record: Record
    sample: Sample
    max_new_tokens: int
    through_xlsx: bool  # scored as VLMEvalKit's .xlsx prediction file hands it over (BenchmarkSpec.responses_through_xlsx)


LOAD_FAILED = "the model could not be loaded: "
NOT_LOADED = "model not loaded (see "


class ModelLoadError(RuntimeError):
    """The model under test failed to load: the first sample that needs it errors with this message,
    the others with a one-line pointer to that sample (`NOT_LOADED`)."""


def is_load_failure(record: Record) -> bool:
    """True for a sample left unanswered because the model could not be loaded."""
    return record["status"] == "error" and (record["error"] or "").startswith((LOAD_FAILED, NOT_LOADED))


def load_failure_line(records: Sequence[Record]) -> str | None:
    """The terminal summary's line when the model could not be loaded: the reason, once (None when it
    loaded, or was never needed). The run stops at the first such sample."""
    first = next((r["error"] for r in records if r["status"] == "error" and (r["error"] or "").startswith(LOAD_FAILED)),
                 None)
    if first is None:
        return None
    reason = " ".join(first[len(LOAD_FAILED):].split())
    reason = reason if len(reason) <= 300 else reason[:300] + " …"
    return f"{LOAD_FAILED}{reason} (the run stopped at the first sample that needed it)"


class Evaluator:
    """Answers samples with one model, loaded lazily once per process and only on a cache miss."""

    def __init__(self, model_factory: Callable[[], Model], *, model_name: str,
                 max_pixels: int = DEFAULT_MAX_PIXELS, cache: ResponseCache | None = None,
                 identity_factory: Callable[[], str | None] = lambda: None,
                 settings: dict[str, Any] | None = None,
                 withhold_images: bool = False, max_new_tokens: int | None = None,
                 verdict_steps: Callable[[str], VerdictStep] | None = None, review_steps: Sequence[ReviewStep] = (),
                 on_load: Callable[[str, float | None, str | None], None] = lambda name, seconds, where: None) -> None:
        self._model_factory = model_factory
        # told (name, None, None) as the model starts loading, (name, seconds, where its weights went) once loaded
        self._on_load = on_load
        self.max_new_tokens = max_new_tokens  # --mllm-max-new-tokens: every spec's limit overridden (None: the spec's)
        self._model: Model | None = None
        self._load_error: ModelLoadError | None = None
        self._load_error_shown_by: str | None = None  # the sample whose error carries the full message
        self._identity_factory = identity_factory
        self._identity: str | None = None
        self.model_name = model_name
        self.max_pixels = max_pixels
        self._decoded = DecodedImages(max_pixels)  # for models that only read their images
        self.cache = cache
        self.withhold_images = withhold_images  # a text-only pass: the model sees the prompt alone
        self.settings = {**(settings or {}), **({"images": "withheld"} if withhold_images else {})}
        self._make_verdict_step = verdict_steps  # a section's name → its verdict step (`Section.verdict_step`)
        self._verdict_steps: dict[str, VerdictStep] = {}
        self._review_steps = tuple(review_steps)  # the sections' second passes (`Section.review_step`)

    @property
    def model(self) -> Model:
        """The model, built on first use; a failed load is not retried for every sample."""
        if self._model is None:
            if self._load_error is not None:
                raise self._load_error
            self._on_load(self.model_name, None, None)
            start = time.perf_counter()
            try:
                self._model = self._model_factory()
            except Exception as exc:
                self._load_error = ModelLoadError(f"{LOAD_FAILED}{exc}")
                raise self._load_error from exc
            self._on_load(self.model_name, time.perf_counter() - start, getattr(self._model, "placement", None))
        return self._model

    @property
    def identity(self) -> str | None:
        """What cached answers are keyed by; None turns the cache off for this model."""
        if self._identity is None and self.cache is not None:
            try:
                self._identity = self._identity_factory() or ""
            except ModelLoadError:  # an identity that needs the model: it errors its samples in `_answer`
                self._identity = ""
        return self._identity or None

    def evaluate(self, items: Sequence[tuple[Sample, BenchmarkSpec]]) -> list[Record]:
        """Records for `items`: cached answers first, the rest generated in one batch; then the verdicts parsers
        leave to their sections' steps, and the sections' second passes over the batch (`Section.review_step`).

        A failure is confined to its sample: bad images error alone, and a failing batch
        is halved until the culprit is alone (which also answers out-of-memory errors).
        """
        records = [sample_record(sample, spec,
                                 render_prompt(spec.prompt_template(sample.task, bool(sample.choices)), sample))
                   for sample, spec in items]
        todo: list[_Todo] = []
        for record, (sample, spec) in zip(records, items):
            record["model"] = self.model_name
            record["input_digest"] = input_digest(sample)  # runs compare their verdicts where it is equal
            todo.append(_Todo(record, sample, self.max_new_tokens or spec.max_new_tokens, spec.responses_through_xlsx))
        keys = self._cache_keys(todo)
        if keys:
            hits = self.cache.get_entries(k for k in keys.values() if k)  # type: ignore[union-attr]
            for item in todo:
                key = keys.get(id(item.record), "")
                if key in hits:
                    text, took = hits[key]
                    _score(item, Response(text, latency_s=took or 0.0))
                    item.record["cached"] = True
            todo = [t for t in todo if not t.record["cached"]]
        if todo:
            self._answer(todo, keys)
        self._rule([(r, s, spec.responses_through_xlsx) for r, (s, spec) in zip(records, items)
                    if r["error"] == NOT_YET_RULED])
        if self._review_steps:
            pairs = [(r, s) for r, (s, _) in zip(records, items)]
            for review in self._review_steps:
                review(pairs)
        return records

    def _rule(self, triples: list[tuple[Record, Sample, bool]]) -> None:
        """The verdicts a parser leaves to its section's step (`Parser.verdict_by`), a batch per section; a failure
        of the step's own (an LLM's) turns those samples into errors, never scores."""
        if self._make_verdict_step is None:
            return  # left as errors: no verdict
        by_section: dict[str, list[tuple[Record, Sample, bool]]] = {}
        for triple in triples:
            by_section.setdefault(get_parser(triple[0]["parser"]).verdict_by or "", []).append(triple)
        for name, group in by_section.items():
            if name not in self._verdict_steps:
                self._verdict_steps[name] = self._make_verdict_step(name)
            self._verdict_steps[name](group)

    def _cache_keys(self, todo: list[_Todo]) -> dict[int, str]:
        """Cache key per record (by id); an unreadable image leaves its record to error later."""
        if self.cache is None or self.identity is None:
            return {}
        keys: dict[int, str] = {}
        for record, sample, max_new_tokens, _ in todo:
            try:
                keys[id(record)] = cache_key(self.identity, {**self.settings, "max_new_tokens": max_new_tokens},
                                             record["prompt"], sample)
            except ImageError:
                keys[id(record)] = ""
        return keys

    def _answer(self, todo: list[_Todo], keys: dict[int, str]) -> None:
        """Load images, generate, score, and store new answers in the cache."""
        try:
            model = self.model
        except ModelLoadError as exc:
            for record, *_ in todo:
                if self._load_error_shown_by is None:
                    self._load_error_shown_by = f"{record['benchmark']}::{record['id']}"
                    record["error"] = str(exc)
                else:
                    record["error"] = f"{NOT_LOADED}{self._load_error_shown_by})"
            return
        requests: list[Request] = []
        pending: list[_Todo] = []
        wanted = model.needs_images and not self.withhold_images
        load = self._decoded.load if getattr(model, "reads_images", False) else \
            lambda ref: load_image(ref, self.max_pixels)
        for item in todo:
            record, sample, max_new_tokens, _ = item
            try:
                images = [load(ref) for ref in sample.images] if wanted else []
            except ImageError as exc:
                record["error"] = f"image error: {exc}"
                continue
            requests.append(Request(sample, record["prompt"], images, max_new_tokens))
            pending.append(item)
        if requests:
            self._generate_into(requests, pending)
        if self.cache is not None and keys:
            done = [(keys[id(r)], r) for r, *_ in pending if r["status"] != "error" and keys.get(id(r))]
            self.cache.put_many({key: r["response"] or "" for key, r in done}, self.identity or "",
                                {key: r["latency_s"] for key, r in done})

    def _generate_into(self, requests: list[Request], pending: list[_Todo]) -> None:
        """Generate for all requests; a failing batch is halved and retried, down to one sample."""
        try:
            responses = self._timed_generate(requests)
        except Exception:
            if len(requests) == 1:
                pending[0].record["error"] = "model error: " + traceback.format_exc(limit=8)
                return
            _release_accelerator_memory()
            half = len(requests) // 2
            self._generate_into(requests[:half], pending[:half])
            self._generate_into(requests[half:], pending[half:])
            return
        for item, response in zip(pending, responses):
            if response.error is not None:
                item.record["error"] = f"model error: {well_formed(str(response.error))}"
            else:
                _score(item, response)

    def _timed_generate(self, requests: list[Request]) -> list[Response]:
        start = time.perf_counter()
        responses = self.model.generate(requests)
        if len(responses) != len(requests):
            raise RuntimeError(f"model returned {len(responses)} responses for {len(requests)} requests")
        share = (time.perf_counter() - start) / len(requests)
        for response in responses:
            if not response.latency_s:
                response.latency_s = share
        return responses


def _score(item: _Todo, response: Response) -> None:
    """`score_record`, with any failure (a response that is not text, a parser's bug) this sample's error."""
    if not isinstance(response.text, str):
        item.record["error"] = f"model error: the response is {excerpt(response.text)}, not text"
        return
    response.text = well_formed(response.text)  # any model's answer: a lone surrogate would lose every output
    try:
        score_record(item.record, item.sample, response, through_xlsx=item.through_xlsx)
    except Exception as exc:  # noqa: BLE001 - confined to its sample, never a dropped batch
        item.record.update({"status": "error", "correct": None,
                           "error": f"scoring error: {type(exc).__name__}: {clip(str(exc))}"})


def failed_batch_error(exc: BaseException) -> str:
    """The error of each sample of a batch whose answering failed unexpectedly: the exception, bounded,
    and where it was raised."""
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)
    return (f"internal error while answering its batch: {type(exc).__name__}: {clip(str(exc))}"
            + (f" (at {where})" if where else ""))


def _release_accelerator_memory() -> None:
    """After a failed batch (often out of memory), give cached GPU memory back before retrying."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
