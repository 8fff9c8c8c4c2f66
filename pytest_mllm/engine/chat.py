"""A client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, `transformers serve` …), on the `openai` SDK.

The SDK does the HTTP work: retries of connection failures, timeouts, 408, 409, 429 and
5xx with exponential backoff (honouring `Retry-After` up to its cap), never of other 4xx.
Ours are the error types, the concurrency cap, the fast reachability check and the key's
safety: it is sent only in the `Authorization` header and kept out of `repr`, logs and
every exception message. `openai` is imported only when a client is made (the plugin's
import path stays light).
"""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_EXCERPT_CHARS = 300
_PNG_MODES = {"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"}
_NO_KEY = "none"  # what the SDK is given when there is no key: it insists on one, and is never sent

Message = dict[str, Any]


class ChatError(Exception):
    """Base of the errors `ChatClient` raises."""


class EndpointUnreachable(ChatError):
    """No HTTP answer at all: connection refused, DNS failure, timeout, dropped connection."""


class EndpointError(ChatError):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class MalformedResponse(ChatError):
    """A 2xx answer that is not a usable chat completion."""


@dataclass(frozen=True)
class ChatResult:
    """One completion: the assistant's text, the finish reason as sent, the call's wall time."""

    text: str
    raw_finish_reason: str | None
    latency_s: float


def image_content(image: "Image.Image") -> dict[str, Any]:
    """A chat content part carrying `image` as a PNG data URL."""
    if image.mode not in _PNG_MODES:
        image = image.convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{data}"}}


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + " …"


def _message_text(content: Any) -> str | None:
    """The text of a message's content: a string, or a list of text parts; None if neither."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    return None


def resolve_base_url(base_url: str | None) -> str:
    """The endpoint: the given URL, else $OPENAI_BASE_URL, else OpenAI's API."""
    return (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def check_base_url(url: str) -> None:
    """ValueError unless `url` is an http(s) URL with a host and no credentials in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"the base URL must look like http(s)://host[:port]/v1, got {url!r}")
    if parts.username or parts.password:
        raise ValueError("the base URL must not hold credentials: pass the API key instead")


class ChatClient:
    """Chat completions against one OpenAI-compatible endpoint, with retries and bounded concurrency.

    `base_url` defaults to `$OPENAI_BASE_URL`, then the OpenAI API; `api_key` to
    `$OPENAI_API_KEY` (local servers need none: then no `Authorization` header is sent).
    `concurrency` caps the requests in flight through this client, from `chat_many` and from
    any threads calling `chat`; a request keeps its slot through the SDK's retries.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 60,
        max_retries: int = 4,
        concurrency: int = 8,
    ) -> None:
        url = resolve_base_url(base_url)
        check_base_url(url)
        if timeout_s <= 0 or max_retries < 0 or concurrency < 1:
            raise ValueError("need timeout_s > 0, max_retries >= 0 and concurrency >= 1")
        try:
            import openai
        except ImportError:
            raise ImportError("ChatClient needs the openai package: pip install 'pytest-mllm[openai]'") from None
        self.base_url = url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.concurrency = concurrency
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
        # Every request leaves out the headers the SDK would fill from the environment, and the
        # placeholder key. (`Omit` is public only in releases later than our minimum, 1.40.)
        omit = getattr(openai, "Omit", None) or openai._types.Omit
        self._headers: dict[str, Any] = {"OpenAI-Organization": omit(), "OpenAI-Project": omit()}
        if not self._api_key:
            self._headers["Authorization"] = omit()
        self._sdk = openai.OpenAI(base_url=url, api_key=self._api_key or _NO_KEY, timeout=timeout_s, max_retries=max_retries)
        self._slots = threading.BoundedSemaphore(concurrency)

    def __repr__(self) -> str:
        return f"ChatClient(base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        """The chat-completions URL requests are posted to."""
        return f"{self.base_url}/chat/completions"

    def check_reachable(self) -> None:
        """Fail fast (EndpointUnreachable) when nothing listens at the base URL's host and port."""
        parts = urllib.parse.urlsplit(self.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            socket.create_connection((parts.hostname, port), timeout=min(self.timeout_s, 10)).close()
        except OSError as exc:
            raise self._unreachable(exc) from None

    def chat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = 512) -> ChatResult:
        """One completion of `messages`; raises a `ChatError` once the SDK's retries are spent.

        SDK exceptions are never chained: their requests hold the headers.
        """
        import openai

        start = time.perf_counter()
        try:
            with self._slots:
                raw = self._sdk.chat.completions.with_raw_response.create(
                    model=model, messages=list(messages),  # type: ignore[arg-type]
                    temperature=temperature, max_tokens=max_tokens, extra_headers=self._headers)
        except openai.APITimeoutError:
            raise self._unreachable(f"no answer within {self.timeout_s:g}s") from None
        except openai.APIConnectionError as exc:
            raise self._unreachable(exc.__cause__ or exc) from None
        except openai.APIStatusError as exc:
            raise EndpointError(self._scrub(
                f"{self.url} answered HTTP {exc.status_code}: {_excerpt(exc.response.text)}"), exc.status_code) from None
        text, finish_reason = self._parse(raw.http_response.text)
        return ChatResult(text, finish_reason, time.perf_counter() - start)

    def chat_many(self, model: str, conversations: Sequence[Sequence[Message]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> list[ChatResult | Exception]:
        """`chat` for each conversation, up to `concurrency` at once; results (or errors) in input order."""
        if not conversations:
            return []

        def one(messages: Sequence[Message]) -> ChatResult | Exception:
            try:
                return self.chat(model, messages, temperature=temperature, max_tokens=max_tokens)
            except Exception as exc:  # one failure must not cancel the others
                return exc

        pool = ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations)),
                                  thread_name_prefix="chat")
        try:
            return list(pool.map(one, conversations))
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _unreachable(self, reason: object) -> EndpointUnreachable:
        return EndpointUnreachable(self._scrub(
            f"cannot reach {self.url}: {reason}. Check that the server is running and that the "
            "base URL (--mllm-base-url / $OPENAI_BASE_URL) is right."))

    def _parse(self, body: str) -> tuple[str, str | None]:
        """(text, finish_reason) of the first choice of a 2xx body; `MalformedResponse` if there is none."""
        try:
            data = json.loads(body)
        except ValueError:
            raise MalformedResponse(self._scrub(f"{self.url} answered with invalid JSON: {_excerpt(body)}")) from None
        choices = data.get("choices") if isinstance(data, dict) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MalformedResponse(self._scrub(
                f"{self.url} answered without choices: {_excerpt(json.dumps(data))}"))
        message = choices[0].get("message")
        text = _message_text(message.get("content")) if isinstance(message, dict) else None
        if text is None:
            raise MalformedResponse(self._scrub(
                f"{self.url} answered a choice without text content: {_excerpt(json.dumps(choices[0]))}"))
        finish_reason = choices[0].get("finish_reason")
        return text, finish_reason if isinstance(finish_reason, str) else None
