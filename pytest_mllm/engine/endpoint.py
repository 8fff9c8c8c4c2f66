"""`Endpoint`: where and how to reach an OpenAI-compatible chat-completions server."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_mllm.engine.chat import ChatClient, check_base_url, resolve_base_url


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server and the client settings to use with it; validated when made.

    `base_url` None means `$OPENAI_BASE_URL`, else OpenAI's API. `api_key` None means
    `$OPENAI_API_KEY` (read by the client; local servers need none). The key stays out of `repr`.
    """

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    max_retries: int = 4
    concurrency: int = 8

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s!r}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency!r}")
        check_base_url(self.url)

    @property
    def url(self) -> str:
        """The resolved base URL (no trailing slash)."""
        return resolve_base_url(self.base_url)

    def client(self) -> ChatClient:
        """A new `ChatClient` for this endpoint (needs the `openai` package)."""
        return ChatClient(self.url, self.api_key, timeout_s=self.timeout_s, max_retries=self.max_retries,
                          concurrency=self.concurrency)
