"""What the `mllm` fixture gives a user's own test: the model and a way to score a sample."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pytest_mllm.sample import Model, Sample
from pytest_mllm.engine.spec import load_spec

if TYPE_CHECKING:
    from pytest_mllm.harness.session import MllmSession


class ModelHandle:
    """The session's model (loaded once per process) plus `answer(sample)`."""

    def __init__(self, session: "MllmSession") -> None:
        self._session = session

    @property
    def model(self) -> Model:
        """The underlying model object."""
        return self._session.evaluator.model

    def answer(self, sample: Sample) -> dict[str, Any]:
        """Ask the model, parse and score: the record (prompt, response, parsed, correct, status)."""
        spec = load_spec(self._session.loaded_specs[sample.benchmark])
        return self._session.evaluator.evaluate([(sample, spec)])[0]
