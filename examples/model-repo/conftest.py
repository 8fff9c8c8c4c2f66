"""Registers the team's model with pytest-mllm, so `pytest --mllm=my-vlm` evaluates it.

pytest-mllm asks every `pytest_mllm_make_model` hook for the `--mllm` value; the first
non-None answer is the model under test. Returning None leaves other names (the plugin's
own `baseline:random`, `hf:...`, ...) to the plugin, so a comparison run such as
`pytest --mllm=baseline:random --mllm-bench=shapes` still works in this repository.
"""

from __future__ import annotations

from typing import Any

import pytest


def pytest_mllm_make_model(spec: str, config: pytest.Config) -> Any:
    """`my-vlm` → our model; anything else → not ours."""
    if spec == "my-vlm":
        from my_vlm import MyVLM  # imported only when it is asked for

        return MyVLM(name="my-vlm")
    return None
