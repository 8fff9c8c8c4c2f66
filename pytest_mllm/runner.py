"""From samples to records: render the prompt, read the images, ask the model, parse, score.

A record is a plain dict of builtins so it can ride on a pytest report across xdist.
Its `status` is "correct", "incorrect" or "error"; an error never carries a verdict.
"""

from __future__ import annotations

import time
import traceback
from typing import Any, Callable, Sequence

from .images import DEFAULT_MAX_PIXELS, ImageError, load_image
from .parsers import get_parser, normalize_answer
from .sample import Model, Request, Response, Sample
from .spec import BenchmarkSpec

Record = dict[str, Any]


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


def new_record(sample: Sample, spec: BenchmarkSpec, prompt: str) -> Record:
    """A record for `sample` before the model has answered."""
    parser = spec.task_settings(sample.task).parser
    return {
        "id": sample.id,
        "benchmark": sample.benchmark,
        "task": sample.task,
        "group": spec.group_of(sample.task),
        "image": sample.image_name,
        "question": sample.question,
        "prompt": prompt,
        "answer": normalize_answer(sample.answer, parser),
        "answer_type": sample.answer_type,
        "parser": parser,
        "pair_group": sample.pair_group,
        "category": sample.category,
        "l2_category": sample.l2_category,
        "split": sample.split,
        "response": None,
        "parsed": None,
        "correct": None,
        "status": "error",
        "error": None,
        "latency_s": None,
        "model": None,
    }


def score_record(record: Record, sample: Sample, response: Response) -> Record:
    """Parse the response and set the verdict."""
    parsed = get_parser(record["parser"])(response.text, sample)
    correct = parsed == record["answer"]
    record.update(response=response.text, parsed=parsed, correct=correct,
                  status="correct" if correct else "incorrect", latency_s=round(response.latency_s, 6))
    return record


class SampleError(Exception):
    """A sample could not be answered (bad image, model crash …); its record says why."""

    def __init__(self, record: Record) -> None:
        super().__init__(record["error"])
        self.record = record


class ModelLoadError(RuntimeError):
    """The model under test failed to load; every sample that needs it errors with this."""


class Evaluator:
    """Answers samples with one model, loaded lazily once per process."""

    def __init__(self, model_factory: Callable[[], Model], max_pixels: int = DEFAULT_MAX_PIXELS) -> None:
        self._model_factory = model_factory
        self._model: Model | None = None
        self._load_error: ModelLoadError | None = None
        self.max_pixels = max_pixels

    @property
    def model(self) -> Model:
        """The model, built on first use; a failed load is not retried for every sample."""
        if self._model is None:
            if self._load_error is not None:
                raise self._load_error
            try:
                self._model = self._model_factory()
            except Exception as exc:
                self._load_error = ModelLoadError(f"the model could not be loaded: {exc}")
                raise self._load_error from exc
        return self._model

    def evaluate(self, items: Sequence[tuple[Sample, BenchmarkSpec]]) -> list[Record]:
        """Records for `items`, generated in one batch; failures are confined to their sample."""
        records = [new_record(sample, spec, render_prompt(spec.task_settings(sample.task).prompt, sample))
                   for sample, spec in items]
        try:
            model = self.model
        except ModelLoadError as exc:
            for record in records:
                record["error"] = str(exc)
            return records
        requests: list[Request] = []
        pending: list[tuple[Record, Sample]] = []
        for record, (sample, spec) in zip(records, items):
            record["model"] = model.name
            try:
                images = [load_image(ref, self.max_pixels) for ref in sample.images] if model.needs_images else []
            except ImageError as exc:
                record["error"] = f"image error: {exc}"
                continue
            requests.append(Request(sample, record["prompt"], images, spec.max_new_tokens))
            pending.append((record, sample))
        if requests:
            self._generate_into(requests, pending)
        return records

    def _generate_into(self, requests: list[Request], pending: list[tuple[Record, Sample]]) -> None:
        """Generate for all requests; if the batch fails, retry one by one to isolate the culprit."""
        try:
            responses = self._timed_generate(requests)
        except Exception:
            if len(requests) == 1:
                pending[0][0]["error"] = "model error: " + traceback.format_exc(limit=8)
                return
            for request, item in zip(requests, pending):
                self._generate_into([request], [item])
            return
        for (record, sample), response in zip(pending, responses):
            score_record(record, sample, response)

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
