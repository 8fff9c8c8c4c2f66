"""Where test items find their run: one object in the pytest config's stash."""

from __future__ import annotations

from typing import Protocol

import pytest

from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.log_capture import SampleLogCapture
from pytest_mllm.record import Record


class HarnessRun(Protocol):
    """What the test items need of the run (the harness's hooks object provides it)."""

    evaluation: Evaluation
    strict: bool
    log_capture: SampleLogCapture

    def record_for(self, item: pytest.Item) -> Record:
        """The record of a sample test, answered in a batch with the tests this process runs next."""
        ...


RUN_KEY = pytest.StashKey[HarnessRun]()
