"""Hooks that users implement in a conftest.py or plugin."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.hookspec(firstresult=True)
def pytest_mllm_make_model(spec: str, config: pytest.Config) -> Any:
    """Return a model for the `--mllm` value `spec`, or None to leave it to others.

    A model has `name`, `needs_images` and `generate(requests) -> responses`
    (see `pytest_mllm.sample.Model`).
    """
