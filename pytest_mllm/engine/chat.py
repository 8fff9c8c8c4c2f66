"""A small client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, `transformers serve` …).

Standard library only (urllib + threads), so `--mllm=openai:<model>` needs no extra
install. Retries 429, 5xx and connection failures with capped exponential backoff and
jitter (honouring `Retry-After`); never other 4xx. The API key is sent only in the
`Authorization` header: it is kept out of `repr`, logs and every exception message.
"""

from __future__ import annotations

import base64
import email.utils
import http.client
import io
import json
import logging
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_BASE_URL = "https://api.openai.com/v1"
MAX_WAIT_S = 60.0  # the longest single wait between attempts, Retry-After included
_EXCERPT_CHARS = 300
_MAX_ERROR_BYTES = 1 << 16  # of an error body, read for its excerpt
_PNG_MODES = {"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"}

Message = dict[str, Any]
log = logging.getLogger(__name__)


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


class _Retryable(Exception):
    """An attempt failed in a way worth retrying; `error` is raised if no retry is left."""

    def __init__(self, error: ChatError, retry_after: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.retry_after = retry_after


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


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asks us to wait (`retry-after-ms`, or `Retry-After` as seconds or a date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    value = headers.get("retry-after")
    try:
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        if value is not None:
            return max(0.0, float(value))
    except ValueError:
        pass
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())
    return None


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
    `$OPENAI_API_KEY` (local servers need none). `concurrency` caps the requests in flight
    through this client, from `chat_many` and from any threads calling `chat`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 60,
        max_retries: int = 4,
        backoff_s: float = 1.0,
        concurrency: int = 8,
    ) -> None:
        url = resolve_base_url(base_url)
        check_base_url(url)
        if timeout_s <= 0 or max_retries < 0 or backoff_s < 0 or concurrency < 1:
            raise ValueError("need timeout_s > 0, max_retries >= 0, backoff_s >= 0 and concurrency >= 1")
        self.base_url = url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.concurrency = concurrency
        self._api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY") or None
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
            raise EndpointUnreachable(self._scrub(
                f"cannot reach {self.url}: {exc}. Check that the server is running and that the "
                "base URL (--mllm-base-url / $OPENAI_BASE_URL) is right.")) from None

    def chat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = 512) -> ChatResult:
        """One completion of `messages`; raises a `ChatError` once retries are spent."""
        body = json.dumps({"model": model, "messages": list(messages), "temperature": temperature,
                           "max_tokens": max_tokens}).encode()
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                with self._slots:
                    data = self._post(body)
            except _Retryable as exc:
                if attempt == self.max_retries:
                    raise exc.error from None
                wait = self._wait_s(attempt, exc.retry_after)
                attempt += 1
                log.info("%s; retry %d/%d in %.2fs", exc.error, attempt, self.max_retries, wait)
                time.sleep(wait)
                continue
            text, finish_reason = self._parse(data)
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

    def _wait_s(self, attempt: int, retry_after: float | None) -> float:
        """Exponential backoff with jitter, at least what the server asked, at most MAX_WAIT_S."""
        backoff = self.backoff_s * 2.0**attempt * random.uniform(0.5, 1.0)
        return min(MAX_WAIT_S, max(backoff, retry_after or 0.0))

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _unreachable(self, reason: object) -> _Retryable:
        return _Retryable(EndpointUnreachable(self._scrub(
            f"cannot reach {self.url}: {reason}. Check that the server is running and that the "
            "base URL (--mllm-base-url / $OPENAI_BASE_URL) is right.")))

    def _request(self, body: bytes) -> urllib.request.Request:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return urllib.request.Request(self.url, data=body, headers=headers, method="POST")

    def _post(self, body: bytes) -> Any:
        """One POST; returns the decoded JSON, raises `_Retryable` or a final `ChatError`.

        Transport exceptions are not chained: their frames' locals hold the request headers.
        """
        try:
            with urllib.request.urlopen(self._request(body), timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status, retry_after = exc.code, _retry_after(exc.headers)
            try:
                detail = exc.read(_MAX_ERROR_BYTES).decode("utf-8", "replace")
            except (OSError, http.client.HTTPException):
                detail = ""
            error = EndpointError(self._scrub(f"{self.url} answered HTTP {status}: {_excerpt(detail)}"), status)
            if status == 429 or status >= 500:
                raise _Retryable(error, retry_after) from None
            raise error from None
        except urllib.error.URLError as exc:
            raise self._unreachable(exc.reason) from None
        except TimeoutError:
            raise self._unreachable(f"no answer within {self.timeout_s:g}s") from None
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(f"{type(exc).__name__}: {exc}") from None
        try:
            return json.loads(raw)
        except ValueError:
            raise MalformedResponse(self._scrub(
                f"{self.url} answered with invalid JSON: {_excerpt(raw.decode('utf-8', 'replace'))}")) from None

    def _parse(self, data: Any) -> tuple[str, str | None]:
        """(text, finish_reason) of the first choice; `MalformedResponse` if there is none."""
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
