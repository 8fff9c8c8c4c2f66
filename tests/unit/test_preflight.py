"""Before any sample: a model that surely cannot be had is one message with the reason and the fix."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path

import pytest

from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.models.model_args import parse_model_args
from pytest_mllm.models.preflight import ModelUnavailable, check_model
from pytest_mllm.models.ref import ModelRef


def test_missing_packages_are_named_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    # fault injection (named as such): this Python pretends torch is not installed
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(ModelUnavailable, match=r"^--mllm=tiny-llava needs torch, which is not installed in this "
                                               r"Python \(.*\): pip install 'pytest-mllm\[hf\]'"):
        check_model(ModelRef.parse("tiny-llava"), Endpoint())


def test_a_hub_model_not_downloaded_on_an_offline_machine_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty hub cache
    with pytest.raises(ModelUnavailable, match=r"llava-hf/llava-1.5-7b-hf is not in the Hugging Face cache and "
                                               r"HF_HUB_OFFLINE is set; download it first \(`hf download "
                                               r"llava-hf/llava-1.5-7b-hf`\)"):
        check_model(ModelRef.parse("llava-1.5-7b"), Endpoint())


def test_a_subfolder_is_where_the_config_is_looked_for(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    check_model(ModelRef.parse(f"hf:{tmp_path}"), Endpoint(), parse_model_args(["subfolder=model"]))
    with pytest.raises(ModelUnavailable, match="holds no config.json"):
        check_model(ModelRef.parse(f"hf:{tmp_path}"), Endpoint())


def test_loading_arguments_for_a_model_that_is_not_a_transformers_model_are_refused() -> None:
    with pytest.raises(ModelUnavailable, match="--mllm-model-args applies to transformers models"):
        check_model(ModelRef.parse("baseline:yes"), Endpoint(), parse_model_args(["revision=main"]))


def test_one_replica_listening_is_enough() -> None:
    with socket.socket() as down:
        down.bind(("127.0.0.1", 0))
        down_port = down.getsockname()[1]
    with socket.socket() as up:
        up.bind(("127.0.0.1", 0))
        up.listen()
        up_port = up.getsockname()[1]
        check_model(ModelRef.parse("openai:m"), Endpoint(f"http://127.0.0.1:{down_port}/v1", replicas=(f"http://127.0.0.1:{up_port}/v1",)))
    with pytest.raises(ModelUnavailable, match=f"cannot reach the endpoint \\(http://127.0.0.1:{down_port}/v1: "):
        check_model(ModelRef.parse("openai:m"), Endpoint(f"http://127.0.0.1:{down_port}/v1"))
