"""`Endpoint`: defaults from the environment, validation, the key kept out of sight, the client it makes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pytest_mllm.engine import endpoint as endpoint_module
from pytest_mllm.engine.chat import ChatClient
from pytest_mllm.engine.endpoint import Endpoint

SECRET = "sk-endpoint-secret-42"


def test_defaults_resolve_the_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    endpoint = Endpoint()
    assert endpoint.url == "https://api.openai.com/v1" and endpoint.base_url is None
    assert (endpoint.timeout_s, endpoint.max_retries, endpoint.concurrency) == (60.0, 4, 8)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")
    assert Endpoint().url == "http://127.0.0.1:8000/v1"
    assert Endpoint("http://judge:9000/v1/").url == "http://judge:9000/v1"


def test_the_key_is_not_in_the_repr_and_the_endpoint_is_frozen() -> None:
    endpoint = Endpoint("http://127.0.0.1:8000/v1", SECRET)
    assert SECRET not in repr(endpoint) and "127.0.0.1:8000" in repr(endpoint)
    with pytest.raises(dataclasses.FrozenInstanceError):
        endpoint.api_key = "other"  # type: ignore[misc]


@pytest.mark.parametrize("field, value", [("timeout_s", 0), ("timeout_s", -1.5), ("max_retries", -1),
                                          ("concurrency", 0)])
def test_bad_settings_are_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"{field} must be .*{value}"):
        Endpoint("http://127.0.0.1:8000/v1", **{field: value})


@pytest.mark.parametrize("url", ["localhost:8000/v1", "ftp://host/v1", "http://user:pw@host/v1"])
def test_bad_base_urls_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match="base URL") as info:
        Endpoint(url)
    assert "pw" not in str(info.value)


def test_a_bad_base_url_from_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    with pytest.raises(ValueError, match="'localhost:8000'"):
        Endpoint()


def test_client_gets_every_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    monkeypatch.setattr(endpoint_module, "ChatClient", lambda *args, **kwargs: made.append((args, kwargs)))
    Endpoint("http://127.0.0.1:8000/v1/", SECRET, timeout_s=3.5, max_retries=0, concurrency=2).client()
    assert made == [(("http://127.0.0.1:8000/v1", SECRET), {"timeout_s": 3.5, "max_retries": 0, "concurrency": 2})]


def test_client_is_a_chat_client_for_the_url() -> None:
    client = Endpoint("http://127.0.0.1:8000/v1", SECRET, concurrency=3).client()
    assert isinstance(client, ChatClient)
    assert client.url == "http://127.0.0.1:8000/v1/chat/completions" and client.concurrency == 3
    assert SECRET not in repr(client)
