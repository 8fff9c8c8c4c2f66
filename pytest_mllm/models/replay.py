"""A model that answers from recorded predictions, to score another tool's outputs.

Accepted recordings: JSON Lines with one {"id": ..., "response": text} per line, the id
being the sample id of the test id (with or without the benchmark prefix) or the id the
benchmark file gives the sample (its `id` field or TSV `index`); "prediction" or "text"
are accepted for the response, or a folder in MME's official results format,
matched by (subtask, image, question).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from pytest_mllm.loaders.mme_results import read_mme_results
from pytest_mllm.sample import Request, Response, Sample

_RESPONSE_KEYS = ("response", "prediction", "text")


class MissingPrediction(LookupError):
    """The recording has no answer for a sample."""


class ReplayModel:
    """Answers each request with the recorded response for its sample."""

    needs_images = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"replay:{path}"
        self._by_id: dict[str, str] = {}
        self._by_question: dict[tuple[str, str, str], str] = {}
        if path.is_dir():
            for line in read_mme_results(path):
                self._by_question[(line.task, line.image, line.question)] = line.response
        elif path.is_file():
            self._read_jsonl(path)
        else:
            raise FileNotFoundError(f"replay recording not found: {path}")

    def _read_jsonl(self, path: Path) -> None:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{number}: not valid JSON: {exc}") from None
            key = next((k for k in _RESPONSE_KEYS if k in entry), None)
            if "id" not in entry or key is None:
                raise ValueError(f"{path}:{number}: needs 'id' and 'response' fields")
            self._by_id[str(entry["id"])] = str(entry[key])

    def answer(self, sample: Sample) -> str:
        """The recorded response for `sample`; MissingPrediction names the sample and file."""
        for key in (sample.id, f"{sample.benchmark}::{sample.id}", sample.metadata.get("source_id")):
            if key in self._by_id:
                return self._by_id[key]
        question_key = (sample.task, sample.image_name, sample.question)
        if question_key in self._by_question:
            return self._by_question[question_key]
        raise MissingPrediction(f"no recorded answer for sample {sample.benchmark}::{sample.id} in {self.path}")

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self.answer(r.sample)) for r in requests]
