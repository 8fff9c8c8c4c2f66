"""API keys: which key goes to which server (`endpoint.api_key_for`, the one place that decides), and
`chat.scrub`, which keeps every fragment of a key out of errors, replies and log lines."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Iterator

import pytest
from test_openai_client import HELLO, FaultInjector, completion, status

from pytest_mllm.engine import chat
from pytest_mllm.engine.chat import MIN_FRAGMENT, ChatClient, ChatError, scrub
from pytest_mllm.engine.endpoint import ApiKeyError, Endpoint, api_key_for

KEY = "sk-keys-unit-0123456789abcdefghijKLMNOP"


def fragments(text: str, key: str = KEY) -> list[str]:
    """Every piece of `key` of MIN_FRAGMENT or more characters found in `text` (the longest at each start)."""
    found = []
    for start in range(len(key) - MIN_FRAGMENT + 1):
        if key[start:start + MIN_FRAGMENT] in text:
            end = start + MIN_FRAGMENT
            while end < len(key) and key[start:end + 1] in text:
                end += 1
            found.append(key[start:end])
    return found


@pytest.fixture
def injector() -> Iterator[FaultInjector]:
    server = FaultInjector()
    yield server
    server.close()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("openai._base_client.INITIAL_RETRY_DELAY", 0.01)


# -- which key goes where -------------------------------------------------------------------------


def test_a_named_variable_is_the_only_key_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-the-default-one")
    monkeypatch.setenv("MY_KEY", KEY)
    assert api_key_for("MY_KEY", "http://127.0.0.1:8000/v1") == KEY


@pytest.mark.parametrize("value", [None, ""])
def test_a_named_variable_that_is_unset_is_an_error_never_a_fallback(monkeypatch: pytest.MonkeyPatch,
                                                                     value: str | None) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-be-sent")
    if value is not None:
        monkeypatch.setenv("MY_KEY", value)
    with pytest.raises(ApiKeyError, match="MY_KEY is not set") as info:
        api_key_for("MY_KEY", "http://elsewhere.example/v1")
    assert info.value.variable == "MY_KEY" and "sk-must" not in str(info.value)
    with pytest.raises(ApiKeyError):
        Endpoint.from_environment("http://elsewhere.example/v1", "MY_KEY")


def test_openai_api_key_goes_only_where_the_user_pointed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert api_key_for(None, "http://127.0.0.1:8000/v1") == KEY  # a base URL given explicitly
    assert api_key_for(None, None) == KEY  # OpenAI's own API
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    assert api_key_for(None, None) == KEY  # the user's $OPENAI_BASE_URL
    monkeypatch.delenv("OPENAI_API_KEY")
    assert api_key_for(None, None) is None


def test_endpoint_and_client_read_no_key_themselves(injector: FaultInjector, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    Endpoint(injector.url).client().chat("m", HELLO)
    assert "Authorization" not in injector.headers[0]
    Endpoint.from_environment(injector.url).client().chat("m", HELLO)
    assert injector.headers[1]["Authorization"] == f"Bearer {KEY}"


# -- scrubbing ------------------------------------------------------------------------------------


def test_scrub_removes_every_fragment_of_six_or_more_characters() -> None:
    chat.register_secret(KEY)
    texts = [f"bad key {KEY}!", f"cut at the end {KEY[:9]}", f"cut at the start {KEY[-7:]}",
             f"split {KEY[:12]}<br/>{KEY[12:25]}\n{KEY[25:]}", f"middle {KEY[10:16]} only",
             json.dumps({"error": {"message": f"key {KEY} invalid", "echo": KEY[:20]}})]
    for text in texts:
        assert fragments(scrub(text)) == [], (text, scrub(text))
        assert "***" in scrub(text)
    assert scrub(f"short {KEY[:MIN_FRAGMENT - 1]} stays") == f"short {KEY[:MIN_FRAGMENT - 1]} stays"
    assert scrub("Yes, there is a red circle.") == "Yes, there is a red circle."


def test_scrub_removes_header_values_of_any_key() -> None:
    text = ('Authorization: Bearer sk-other-9f8e7d6c5b4a and "api-key": "az-7766554433" '
            'X-Api-Key=zz0011223344 but Bearer tokens and the api key: required stay')
    assert scrub(text) == ('Authorization: Bearer *** and "api-key": "***" X-Api-Key=*** '
                           'but Bearer tokens and the api key: required stay')


def test_scrub_is_linear_in_the_text() -> None:
    chat.register_secret(KEY)
    text = ("lorem ipsum " * 80 + KEY[7:19]) * 1000  # about 1 MB with a fragment every KB
    start = time.perf_counter()
    clean = scrub(text)
    took = time.perf_counter() - start
    assert fragments(clean) == [] and clean.count("***") == 1000
    assert took < 2.0, took


def test_an_error_body_is_scrubbed_before_it_is_cut(injector: FaultInjector) -> None:
    """The server echoes the key right where the excerpt is cut (300 characters): none of it may remain."""
    client = ChatClient(injector.url, KEY, max_retries=0, timeout_s=5)
    for offset in range(280, 300, 3):
        injector.respond = lambda n, body, headers, o=offset: status(400, "x" * o + headers["Authorization"])
        with pytest.raises(ChatError) as info:
            client.chat("m", HELLO)
        assert fragments(str(info.value)) == [], str(info.value)


@pytest.mark.parametrize("reply", [
    lambda h: completion(f"the key is {h['Authorization'][7:]}"),
    lambda h: completion(f"part {h['Authorization'][7:20]} and {h['Authorization'][20:]}"),
    lambda h: completion(f"{h['Authorization']}"),
    lambda h: (200, {}, f"not json {h['Authorization']}".encode()),
    lambda h: status(500, f"<html><pre>{h['Authorization'][:16]}</pre></html>"),
    lambda h: status(401, json.dumps({"error": {"message": f"bad key {h['Authorization'][7:30]}…"}})),
])
def test_replies_errors_and_log_lines_carry_no_fragment(injector: FaultInjector, caplog: pytest.LogCaptureFixture,
                                                        reply: Any) -> None:
    injector.respond = lambda n, body, headers: reply(headers)
    client = ChatClient(injector.url, KEY, max_retries=1, timeout_s=5)
    with caplog.at_level(logging.DEBUG):
        [result] = client.chat_many("m", [HELLO])
    text = result.text if not isinstance(result, Exception) else f"{result} {result!r}"
    assert injector.headers[0]["Authorization"] == f"Bearer {KEY}"  # the key did go out, where it should
    assert fragments(text) == [], text
    assert fragments(caplog.text) == []


def test_log_lines_of_the_http_stack_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    chat.register_secret(KEY)
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("openai._base_client").debug("Request options: %s", {"headers": {"x-echo": KEY[3:40]}})
        try:
            raise RuntimeError(f"boom {KEY}")
        except RuntimeError:
            logging.getLogger("openai._base_client").debug("failed", exc_info=True)
    assert fragments(caplog.text) == [] and "Request options" in caplog.text and "boom ***" in caplog.text
