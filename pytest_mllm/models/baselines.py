"""Reference models that never look at the image: random (seeded), always-yes, always-no."""

from __future__ import annotations

import random
from typing import Sequence

from pytest_mllm.sample import Request, Response


class RandomBaseline:
    """A seeded random answer per sample, independent of order, batching and workers."""

    needs_images = True  # reads images like a real model, so broken images error the same way

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.name = f"baseline:random(seed={seed})"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self._answer(request)) for request in requests]

    def _answer(self, request: Request) -> str:
        rng = random.Random(f"{self.seed}:{request.sample.benchmark}:{request.sample.id}")
        sample = request.sample
        if sample.answer_type == "choice" and sample.choices:
            return rng.choice([letter for letter, _ in sample.choices])
        if sample.answer_type == "yes_no":
            return rng.choice(["Yes", "No"])
        return ""


class ConstantBaseline:
    """The same answer to every question (`baseline:yes`, `baseline:no`)."""

    needs_images = True

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.name = f"baseline:{answer.lower()}"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self.answer) for _ in requests]
