"""`Endpoint`: where and how to reach an OpenAI-compatible chat-completions server, and
`api_key_for`: which API key, if any, may be sent there (the one place that decides);
`endpoint_from_options`: one read from its command-line options."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_mllm.engine.chat import DEFAULT_BASE_URL, ChatClient, check_base_url, resolve_base_url

if TYPE_CHECKING:
    from pytest_mllm.engine.chat import ReplicaClient

DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class ApiKeyError(ValueError):
    """A key variable was named and is not set: never a reason to send another key instead."""

    def __init__(self, variable: str) -> None:
        super().__init__(f"the API key variable {variable} is not set (or is empty): set it, or leave the option "
                         f"out to use ${DEFAULT_KEY_ENV}")
        self.variable = variable


def api_key_for(key_env: str | None, base_url: str | None) -> str | None:
    """The API key to send to the endpoint at `base_url` (as the user gave it; None: not given).

    - A named variable (`key_env`) is read and nothing else: unset or empty is an `ApiKeyError`
      naming it, never a fall-back to another variable.
    - With none named, `$OPENAI_API_KEY` is used only where the user chose the server: a base URL
      they gave (`base_url` or `$OPENAI_BASE_URL`) or OpenAI's own API; else no key is sent.
    """
    if key_env:
        key = os.environ.get(key_env)
        if not key:
            raise ApiKeyError(key_env)
        return key
    chosen = bool(base_url) or bool(os.environ.get("OPENAI_BASE_URL"))
    openai_own = urllib.parse.urlsplit(resolve_base_url(base_url)).hostname == \
        urllib.parse.urlsplit(DEFAULT_BASE_URL).hostname
    if chosen or openai_own:
        return os.environ.get(DEFAULT_KEY_ENV) or None
    return None


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server and the client settings to use with it; validated when made.

    `base_url` None means `$OPENAI_BASE_URL`, else OpenAI's API. `api_key` is the key sent (None:
    none; local servers need none); nothing here reads `$OPENAI_API_KEY`: get the key with
    `api_key_for` (or `Endpoint.from_environment`). The key stays out of `repr`.
    """

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0  # each try's deadline, for the whole request (one hung server costs about this)
    max_retries: int = 4
    concurrency: int = 8  # per replica
    replicas: tuple[str, ...] = ()  # more servers of the same model, besides `base_url` (the one answers are keyed by)
    model_revision: str | None = None  # what the user states the served model is (part of its answers' cache key)

    @classmethod
    def from_environment(cls, base_url: str | None = None, key_env: str | None = None, **settings: Any) -> Endpoint:
        """An endpoint whose key follows `api_key_for` (ApiKeyError for a named variable that is unset)."""
        return cls(base_url, api_key_for(key_env, base_url), **settings)

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency!r}")
        check_base_url(self.url)
        for url in self.replicas:
            check_base_url(url.rstrip("/"))
        if len(set(self.urls)) != len(self.urls):
            raise ValueError(f"the same base URL is given twice: {', '.join(self.urls)}")

    @property
    def url(self) -> str:
        """The resolved base URL (no trailing slash)."""
        return resolve_base_url(self.base_url)

    @property
    def urls(self) -> tuple[str, ...]:
        """Every replica's base URL, the first one first."""
        return (self.url, *(u.rstrip("/") for u in self.replicas))

    def client(self) -> ChatClient:
        """A new `ChatClient` for this endpoint's first URL (needs the `openai` package)."""
        return ChatClient(self.url, self.api_key, timeout_s=self.timeout_s, max_retries=self.max_retries,
                          concurrency=self.concurrency)

    def replica_client(self) -> ChatClient | ReplicaClient:
        """A client spreading requests over every replica (a plain `ChatClient` when there is one)."""
        if not self.replicas:
            return self.client()
        from pytest_mllm.engine.chat import ReplicaClient

        return ReplicaClient([ChatClient(url, self.api_key, timeout_s=self.timeout_s, max_retries=self.max_retries,
                                         concurrency=self.concurrency, hung_fails_fast=False) for url in self.urls])


def endpoint_from_options(option: Callable[[str], Any], url_option: str, key_option: str) -> Endpoint:
    """An endpoint from its URL and key-variable options (`option("mllm_…")`) and the shared limits
    (--mllm-timeout, --mllm-max-retries, --mllm-concurrency); ValueError names the option and the fix."""
    for name, ok, wanted in (("mllm_timeout", option("mllm_timeout") > 0, "a number of seconds above 0"),
                             ("mllm_max_retries", option("mllm_max_retries") >= 0, "0 or more"),
                             ("mllm_concurrency", option("mllm_concurrency") >= 1, "1 or more")):
        if not ok:
            raise ValueError(f"--{name.replace('_', '-')} must be {wanted}, got {option(name)}")
    raw = option(url_option)
    urls = [u.strip() for value in (raw if isinstance(raw, list) else [raw] if raw else [])
            for u in value.split(",") if u.strip()]
    if len(urls) > 1 and url_option != "mllm_base_url":
        raise ValueError(f"--{url_option.replace('_', '-')}: one URL only (several replicas are for the model "
                         f"under test, --mllm-base-url), got {', '.join(urls)}")
    base_url = urls[0] if urls else None
    try:
        api_key = api_key_for(option(key_option), base_url)
    except ApiKeyError as exc:
        raise ValueError(f"--{key_option.replace('_', '-')}={exc.variable}: {exc}") from None
    try:
        return Endpoint(base_url=base_url, api_key=api_key, timeout_s=option("mllm_timeout"),
                        max_retries=option("mllm_max_retries"), concurrency=option("mllm_concurrency"),
                        replicas=tuple(urls[1:]))
    except ValueError as exc:
        raise ValueError(f"--{url_option.replace('_', '-')}: {exc}") from None
