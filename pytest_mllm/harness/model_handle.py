"""What the `mllm` fixture gives a user's own test: the model and a way to score a sample."""

from __future__ import annotations

from pytest_mllm.evaluation import Evaluation
from pytest_mllm.record import Record
from pytest_mllm.sample import Model, Sample


class ModelHandle:
    """The run's model (loaded once per process) plus `answer(sample)`."""

    def __init__(self, evaluation: Evaluation) -> None:
        self._evaluation = evaluation

    @property
    def model(self) -> Model:
        """The underlying model object."""
        return self._evaluation.model

    def answer(self, sample: Sample) -> Record:
        """Ask the model with the benchmark's own prompt, parse and score: the sample's record."""
        return self._evaluation.evaluator.evaluate([(sample, self._evaluation.specs[sample.benchmark])])[0]
