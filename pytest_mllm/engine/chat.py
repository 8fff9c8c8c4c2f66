"""A client for OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, `transformers serve` …), on the `openai` SDK.

Every request of the process is sent and received on one asyncio loop, the served loop
(`engine/served_loop.py`): `achat` is the coroutine; `chat` and `chat_many` wait for it there (a
greenlet of `served_loop.spawn` steps aside meanwhile, any other caller runs the loop until the answer
is there). A completion is the
request the SDK's `chat.completions.create` sends (its headers, its body's bytes), built once per
connection pool and posted on the SDK's asynchronous HTTP client without the SDK's per-request
layers (a served run sends hundreds a second); that client bounds it (`engine/bounded_http.py`):
the whole request, headers and body, has the client's deadline (`timeout_s`, `--mllm-timeout`), and
an answer at most MAX_ANSWER_BYTES, decompressed bytes included. The concurrency is split over
connection pools of at most POOL_SHARE requests (a pool's bookkeeping walks all its connections at
each request). Ours are the retries: a connection
failure, 408, 409, 429 or 5xx is tried again, up to `max_retries` times, with exponential backoff
(honouring `Retry-After` up to RETRY_AFTER_MAX_S); never another 4xx, a request whose deadline passed
or an answer refused for its size. A server that answered nothing while a request waited its whole
deadline is hung: a client without replicas then fails the run's later requests at once, so one
hung server costs about one deadline, not one per request. Ours too are the error types, the
concurrency cap, the fast reachability check and the key's safety: a client sends only the key it
is given (it reads no environment variable; the key policy is `endpoint.api_key_for`), only in the
`Authorization` header, and `scrub` removes it
from every error message, every reply (before anything caches, records or writes it) and every
log record of the process: any fragment of 6 or more characters of a key any client of this
process holds, and any `Bearer …` or `api-key: …` value. `openai`, `asyncio` and the bounded HTTP
client are imported only when a client is made (the plugin's import path stays light).
"""

from __future__ import annotations

import base64
import io
import json
import logging
import os
import random
import re
import socket
import threading
import time
import urllib.parse
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from pytest_mllm.echo import json_loads

if TYPE_CHECKING:
    import asyncio

    from PIL import Image

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_EXCERPT_CHARS = 300
_PNG_MODES = {"1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA"}
RETRY_FIRST_S = 0.5  # the wait before the first retry, doubled at each retry, less up to 25 % jitter …
RETRY_MAX_S = 8.0  # … up to this
RETRY_AFTER_MAX_S = 60.0  # a server's Retry-After is waited up to this; a longer one fails the request at once
MODEL_INFO_TIMEOUT_S = 5.0  # how long `GET /models` may take (it is asked once, when the model loads)
# `GET /models` fields that differ between two calls to one deployment: vLLM's "created" is the time of the call,
# its "permission" entries carry fresh ids; `transformers serve`'s "status" says whether the model is loaded yet;
# "object" says nothing
VOLATILE_MODEL_FIELDS = frozenset({"created", "permission", "status", "object"})
CONNECT_TIMEOUT_S = 5.0  # how long a connection may take to open (the read timeout is the option's)
POOL_SHARE = 16  # requests in flight per connection pool (see `ChatClient`)
_NO_KEY = "none"  # what the SDK is given when there is no key: it insists on one, and is never sent
_log = logging.getLogger(__name__)

Message = dict[str, Any]

# -- keeping keys out of sight -----------------------------------------------------------------

MIN_FRAGMENT = 6  # a run of this many characters of a key anywhere in a text is scrubbed
_REDACTED = "***"
_TOKEN = r"[^\s\"'<>,;&\\]"
# A credential-looking value: 8+ token characters with a digit in them, or 24+ (not "Bearer tokens …").
_VALUE = rf"(?:(?={_TOKEN}*\d){_TOKEN}{{8,}}|{_TOKEN}{{24,}})"
_BEARER = re.compile(rf"(?i)\b(bearer)(\s+|%20)({_VALUE})")
_KEY_HEADER = re.compile(rf"(?i)(\b(?:x-)?api[-_]?key[\"']?\s*[:=]\s*[\"']?)({_VALUE})")
_secret_lock = threading.Lock()
_grams: frozenset[str] = frozenset()  # every MIN_FRAGMENT-character piece of every registered key


def register_secret(key: str) -> None:
    """Treat `key` as secret from now on in this process: `scrub` removes its fragments everywhere.

    Keys shorter than MIN_FRAGMENT characters are placeholders ("EMPTY"), not secrets: scrubbing
    them out of every model answer would change answers; error messages still drop them whole.
    """
    global _grams
    if len(key) < MIN_FRAGMENT:
        return
    with _secret_lock:
        _grams = _grams | {key[i:i + MIN_FRAGMENT] for i in range(len(key) - MIN_FRAGMENT + 1)}
    _install_log_scrubbing()


def scrub(text: str) -> str:
    """`text` without any fragment (MIN_FRAGMENT+ characters) of a registered key and without the
    value of any `Bearer …` or `api-key: …` it holds. Linear in the text for a given key: one
    substring search per MIN_FRAGMENT-gram of the key, then the covered spans are cut."""
    if not text:
        return text
    grams = _grams
    if grams:
        spans: list[tuple[int, int]] = []
        for gram in grams:
            at = text.find(gram)
            while at != -1:
                spans.append((at, at + MIN_FRAGMENT))
                at = text.find(gram, at + 1)
        if spans:
            spans.sort()
            pieces, last = [], 0
            start, end = spans[0]
            for a, b in spans[1:]:
                if a <= end:  # overlapping or touching: one fragment
                    end = max(end, b)
                    continue
                pieces += [text[last:start], _REDACTED]
                last, (start, end) = end, (a, b)
            pieces += [text[last:start], _REDACTED, text[end:]]
            text = "".join(pieces)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{_REDACTED}", text)
    return _KEY_HEADER.sub(lambda m: f"{m.group(1)}{_REDACTED}", text)


def _scrub_record(record: logging.LogRecord) -> logging.LogRecord:
    """A log record with its message, traceback and stack scrubbed (records without a secret are untouched)."""
    try:
        message = record.getMessage()
    except Exception:  # noqa: BLE001 - a malformed record is logging's business, not ours
        return record
    clean = scrub(message)
    if clean != message:
        record.msg, record.args = clean, None
    if record.exc_info and not record.exc_text:
        text = logging.Formatter().formatException(record.exc_info)
        if scrub(text) != text:
            record.exc_text = scrub(text)  # formatters print exc_text as it is
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


_log_scrubbing = False


def _install_log_scrubbing() -> None:
    """Scrub every log record of this process as it is made (the SDK's and its HTTP stack's loggers
    are created lazily, some only at the first request, so no per-logger filter can be in place
    in time); done once, wrapping whatever record factory is installed."""
    global _log_scrubbing
    with _secret_lock:
        if _log_scrubbing:
            return
        make = logging.getLogRecordFactory()

        def scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = make(*args, **kwargs)
            return _scrub_record(record) if _grams else record

        logging.setLogRecordFactory(scrubbed_record)
        _log_scrubbing = True


class ChatError(Exception):
    """Base of the errors `ChatClient` raises; `retryable` ones are tried again (after `retry_after` seconds
    when the server said how long to wait)."""

    retryable = False
    retry_after: float | None = None


class EndpointUnreachable(ChatError):
    """No HTTP answer at all: connection refused, DNS failure, dropped connection (retried); the deadline
    passed, or the server is hung (not retried)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class EndpointError(ChatError):
    """The endpoint answered with an HTTP error status."""

    def __init__(self, message: str, status: int, retry_after: float | None = None, should_retry: bool | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        retried = status in (408, 409, 429) or status >= 500
        self.retryable = (should_retry if should_retry is not None else retried) and not (
            retry_after is not None and retry_after > RETRY_AFTER_MAX_S)


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


def _shares(total: int, most: int) -> list[int]:
    """`total` split into as few parts of at most `most` as it takes, as even as can be."""
    parts = -(-total // most)
    return [total // parts + (n < total % parts) for n in range(parts)]


def _post_headers(openai: Any, httpx: Any, url: str, api_key: str | None, timeout: Any) -> dict[str, str]:
    """The headers the SDK's `chat.completions.create` sends (its defaults, less the organization and project it
    reads from the environment), with the key only where there is one. They are the synchronous SDK's, read off
    an `OpenAI` over an HTTP client that never sends (no transport, no proxies): `AsyncOpenAI` names itself in
    `User-Agent` and `X-Stainless-Async`, and says "async:false" there off its loop."""
    left_out = {"openai-organization", "openai-project", "authorization"}
    headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(transport=httpx.BaseTransport(), trust_env=False) as idle:
        sdk = openai.OpenAI(base_url=url, api_key=api_key or _NO_KEY, timeout=timeout, max_retries=0,
                            http_client=idle)
        headers.update((name.lower(), value) for name, value in sdk.default_headers.items()
                       if isinstance(value, str) and name.lower() not in left_out)
    headers["x-stainless-retry-count"] = "0"  # each try is the SDK's first: the retries are ours
    headers["x-stainless-read-timeout"] = str(timeout.read)
    return headers


def _list_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers of the SDK's `models.with_raw_response.list()`, from a completion's: no content type (a GET
    has no body), marked as a raw response, the SDK's retry count and timeout last."""
    last = ("x-stainless-retry-count", "x-stainless-read-timeout")
    listed = {name: value for name, value in headers.items() if name not in ("content-type", *last)}
    listed["x-stainless-raw-response"] = "true"
    listed.update((name, headers[name]) for name in last)
    return listed


class _Pool:
    """An HTTP client of `bounded_http_client` and the completion request it sends, less the body: built once as
    the client builds a request (its own headers merged with `headers`), so each post only adds its body."""

    def __init__(self, client: Any, url: str, headers: dict[str, str], timeout: Any) -> None:
        template = client.build_request("POST", url, content=b"", headers=headers, timeout=timeout)
        self.client = client
        self._request = type(template)  # the Request class of the httpx the SDK is built on (httpx or httpx2)
        self._url = template.url
        self._headers = template.headers.copy()
        del self._headers["Content-Length"]  # each body adds its own, last, as the client's build does
        self._extensions = template.extensions
        self._timeout = timeout

    async def post(self, body: bytes) -> Any:
        """The response to `body` posted (read whole)."""
        if self.client.cookies:  # cookies a server set go back with each request: the client's own build adds them
            request = self.client.build_request("POST", self._url, content=body, headers=self._headers,
                                                timeout=self._timeout)
        else:
            request = self._request("POST", self._url, headers=self._headers, content=body,
                                    extensions=dict(self._extensions))
        return await self.client.send(request)


def _close_later(clients: list[Any]) -> None:
    """Close the HTTP clients of a client that is gone, on the served loop they belong to (from any thread)."""
    from pytest_mllm.engine.served_loop import loop

    async def close() -> None:
        for client in clients:
            await client.aclose()

    served = loop()
    served.call_soon_threadsafe(lambda: _keep_running(served.create_task(close())))


def _excerpt(text: str) -> str:
    """A scrubbed excerpt of `text`: scrubbed before it is cut (a key at the cut would leave its
    start behind) and after (joining whitespace must not make a fragment)."""
    text = " ".join(scrub(text).split())
    return scrub(text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + " …")


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

    `base_url` defaults to `$OPENAI_BASE_URL`, then the OpenAI API. `api_key` is the only key
    sent; None sends none (no `Authorization` header): the client never reads `$OPENAI_API_KEY`
    itself (`endpoint.api_key_for` decides which key goes where). Replies and errors are scrubbed.
    `concurrency` caps the requests in flight through this client, from `chat_many` and from
    any callers of `chat` or `achat`; a request keeps its slot through its retries. `timeout_s` is each
    try's deadline, for the whole request. With `hung_fails_fast` (a server without replicas), once
    the server answered nothing while a request waited its whole deadline, later requests fail at once
    until an answer comes (a replica's client leaves that to `ReplicaClient`, which sets it aside).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 60,
        max_retries: int = 4,
        concurrency: int = 8,
        hung_fails_fast: bool = True,
    ) -> None:
        url = resolve_base_url(base_url)
        check_base_url(url)
        if timeout_s <= 0 or max_retries < 0 or concurrency < 1:
            raise ValueError("need timeout_s > 0, max_retries >= 0 and concurrency >= 1")
        try:
            import openai
        except ImportError:
            raise ImportError("ChatClient needs the openai package: pip install 'pytest-mllm[openai]'") from None
        import asyncio

        from pytest_mllm.engine.bounded_http import bounded_http_client, http_packages
        self.base_url = url
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.concurrency = concurrency
        self._api_key = api_key or None
        if self._api_key:
            register_secret(self._api_key)
        self._timeout = openai.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))  # a host that never accepts: seconds
        # the concurrency split over connection pools of at most POOL_SHARE requests (a pool's bookkeeping walks
        # every connection it holds at each request); a request takes a lane, a free place in one of them
        shares = _shares(concurrency, POOL_SHARE)
        clients = [bounded_http_client(url, connections=share) for share in shares]
        self._httpx = http_packages()[0]
        headers = _post_headers(openai, self._httpx, url, self._api_key, self._timeout)
        self._info_s = min(timeout_s, MODEL_INFO_TIMEOUT_S)
        self._info_timeout = openai.Timeout(self._info_s, connect=min(self._info_s, CONNECT_TIMEOUT_S))
        self._info_headers = _list_headers(_post_headers(openai, self._httpx, url, self._api_key, self._info_timeout))
        self._info_client = clients[0]
        pools = [_Pool(client, self.url, headers, self._timeout) for client in clients]
        self._lanes: asyncio.Queue[_Pool] = asyncio.Queue()  # the pool of each free place: at most `concurrency`
        for place in range(max(shares)):
            for pool, share in zip(pools, shares):
                if place < share:
                    self._lanes.put_nowait(pool)
        self.hung_fails_fast = hung_fails_fast
        self._last_answer = float("-inf")  # time.monotonic() of the latest HTTP answer of any kind
        self._hung: str | None = None  # why later requests fail at once
        weakref.finalize(self, _close_later, clients).atexit = False  # at exit, the process closes the sockets

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

    def model_info(self, model: str) -> dict[str, Any] | None:
        """What the server's `GET /models` says of `model`, less the fields that change between calls
        (`VOLATILE_MODEL_FIELDS`); None when it says nothing of it (no such route, not listed, no
        answer within MODEL_INFO_TIMEOUT_S). One try."""
        from pytest_mllm.engine.served_loop import wait_for

        document = wait_for(self._models())
        entries = document.get("data") if isinstance(document, dict) else None
        entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), None) \
            if isinstance(entries, list) else None
        if entry is None:
            return None
        scrubbed: dict[str, Any] = json.loads(scrub(json.dumps(
            {k: v for k, v in entry.items() if k not in VOLATILE_MODEL_FIELDS}, sort_keys=True)))
        return scrubbed

    async def _models(self) -> Any:
        """The decoded answer to `GET /models` (the SDK's `models.list` request, one try, within
        MODEL_INFO_TIMEOUT_S); None without one."""
        from pytest_mllm.engine.bounded_http import limits

        try:
            with limits(self._info_s):
                response = await self._info_client.get(f"{self.base_url}/models", headers=self._info_headers,
                                                       timeout=self._info_timeout)
            return json_loads(response.text) if 200 <= response.status_code < 300 else None
        except Exception:  # noqa: BLE001 - as the SDK: whatever stops the request means no answer, and none says nothing
            return None

    def chat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = 512) -> ChatResult:
        """`achat` waited for on the served loop (`engine/served_loop.py`)."""
        from pytest_mllm.engine.served_loop import wait_for

        return wait_for(self.achat(model, messages, temperature=temperature, max_tokens=max_tokens))

    async def achat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
                    max_tokens: int = 512) -> ChatResult:
        """One completion of `messages`, tried up to 1 + `max_retries` times (see the module's docstring);
        raises the last try's `ChatError`. SDK exceptions are never chained: their requests hold the headers.
        Runs on the served loop only."""
        import asyncio

        start = time.perf_counter()
        # the body as `chat.completions.create` serializes it: the same keys, order and bytes
        body = json.dumps({"model": model, "messages": list(messages), "max_tokens": max_tokens,
                           "temperature": temperature}, ensure_ascii=False, separators=(",", ":"),
                          allow_nan=False).encode()
        pool = await self._lanes.get()
        try:
            for attempt in range(self.max_retries + 1):
                try:
                    text, finish_reason = await self._try(pool, body)
                    return ChatResult(scrub(text), finish_reason and scrub(finish_reason), time.perf_counter() - start)
                except ChatError as exc:
                    if not exc.retryable or attempt == self.max_retries:
                        raise
                    wait = retry_wait(attempt, exc.retry_after)
                    _log.info("Retrying %s in %.2f s (retry %d of %d): %s", self.url, wait, attempt + 1,
                              self.max_retries, exc)
                    await asyncio.sleep(wait)
        finally:
            self._lanes.put_nowait(pool)
        raise AssertionError("unreachable")  # the loop returns or raises

    async def _try(self, pool: _Pool, body: bytes) -> tuple[str, str | None]:
        """One HTTP request for a completion on `pool`, bounded by the deadline and the answer's size. The SDK's
        request, on its HTTP client, read as the SDK reads it (any failure to get an answer is a connection
        failure, a timeout one of httpx's timeouts, any status but 2xx an error), without its per-request layers."""
        from pytest_mllm.engine.bounded_http import MAX_ANSWER_BYTES, limits

        if self._hung:
            raise EndpointUnreachable(self._hung, retryable=False)
        httpx = self._httpx
        sent = time.monotonic()
        with limits(self.timeout_s) as bounds:
            try:
                response = await pool.post(body)
            except Exception as exc:  # noqa: BLE001 - as the SDK: whatever stops the request means no answer
                if bounds.refused:
                    self._answered()
                    raise MalformedResponse(self._scrub(
                        f"{self.url} answered {bounds.refused}: an answer may take at most {MAX_ANSWER_BYTES // 2**20} "
                        "MiB (not asked again)")) from None
                if bounds.expired or isinstance(exc, httpx.TimeoutException):
                    raise self._deadline_passed(sent) from None
                raise self._unreachable(exc) from None
        self._answered()
        if not 200 <= response.status_code < 300:
            headers = response.headers
            should = headers.get("x-should-retry")
            raise EndpointError(self._scrub(
                f"{self.url} answered HTTP {response.status_code}: {_excerpt(response.text)}"), response.status_code,
                retry_after=_retry_after(headers), should_retry=None if should not in ("true", "false")
                else should == "true")
        return self._parse(response.text)

    def _answered(self) -> None:
        """The server answered (anything): it is not hung."""
        self._last_answer = time.monotonic()
        self._hung = None

    def _deadline_passed(self, sent: float) -> EndpointUnreachable:
        """The error of a request whose deadline passed; the server is hung when nothing answered meanwhile."""
        why = (f"no complete answer from {self.url} within {self.timeout_s:g} s (--mllm-timeout: the whole request, "
               "headers and body); not asked again")
        if self.hung_fails_fast and self._last_answer < sent and self._hung is None:
            self._hung = (f"not sent: {self.url} answered nothing while a request waited {self.timeout_s:g} s "
                          "(--mllm-timeout) for it, so the server is taken as hung and the run's later requests "
                          "to it fail at once; check the server, or raise --mllm-timeout if the model needs longer")
        return EndpointUnreachable(self._scrub(why), retryable=False)

    def chat_many(self, model: str, conversations: Sequence[Sequence[Message]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> list[ChatResult | Exception]:
        """`chat` for each conversation, up to `concurrency` at once; results (or errors) in input order."""
        return _chat_each(self, model, conversations, temperature=temperature, max_tokens=max_tokens)

    def _scrub(self, text: str) -> str:
        """An error message scrubbed, this client's key dropped whole even when it is too short to register."""
        text = scrub(text)
        return text.replace(self._api_key, _REDACTED) if self._api_key else text

    def _unreachable(self, reason: object) -> EndpointUnreachable:
        return EndpointUnreachable(self._scrub(
            f"cannot reach {self.url}: {scrub(str(reason))}. Check that the server is running and that the "
            "base URL (--mllm-base-url / $OPENAI_BASE_URL) is right."))

    def _parse(self, body: str) -> tuple[str, str | None]:
        """(text, finish_reason) of the first choice of a 2xx body; `MalformedResponse` if there is none."""
        try:
            data = json_loads(body)  # a lone surrogate in the answer becomes U+FFFD here, once
        except (ValueError, RecursionError):  # RecursionError: nested too deeply to decode
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


def retry_wait(attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry `attempt + 1`: the server's Retry-After, else RETRY_FIRST_S doubled per
    retry up to RETRY_MAX_S, less up to 25 % jitter."""
    if retry_after is not None and 0 < retry_after <= RETRY_AFTER_MAX_S:
        return retry_after
    return min(RETRY_FIRST_S * 2.0 ** min(attempt, 64), RETRY_MAX_S) * (1 - 0.25 * random.random())


def _retry_after(headers: Any) -> float | None:
    """The wait a server asks for: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date."""
    import email.utils
    import math

    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            parsed = email.utils.parsedate_to_datetime(value) if name == "retry-after" else None
            if parsed is None:
                continue
            seconds = parsed.timestamp() - time.time()
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None


def _fails_over(exc: Exception) -> bool:
    """A failure another replica may not have: no answer at all, a 5xx (after the client's retries),
    or a 200 whose body is not a completion."""
    return isinstance(exc, (EndpointUnreachable, MalformedResponse)) or (
        isinstance(exc, EndpointError) and exc.status >= 500)


PATIENCE_FLOOR_S = 5.0  # a replica is given at least this long before a request is also sent elsewhere
PATIENCE_FACTOR = 4.0  # … or this many times the slowest of the recent answers
BACKOFF_FIRST_S = 10.0  # a failing replica is set aside this long, doubled at each failure in a row …
BACKOFF_MAX_S = 300.0  # … up to this
_RECENT_ANSWERS = 64


class ReplicaClient:
    """Chat completions spread over several replicas of one model (each a `ChatClient` with its own
    concurrency cap); the answer does not depend on the replica.

    Each request goes to the least busy healthy replica (ties: round-robin). A replica fails a
    request when it answers no completion (connection error, 5xx once its client's retries are
    spent, a 200 whose body is no completion) or when it is slower than the run's patience: the
    slowest of the recent answers times PATIENCE_FACTOR, at least PATIENCE_FLOOR_S, at most the
    client's timeout (until some replica answers: the timeout). A failing replica is set aside
    for BACKOFF_FIRST_S, doubling at each failure in a row up to BACKOFF_MAX_S; when its time is
    up it gets one request at a time until it answers again. The request then goes to another
    replica, each at most once; an abandoned slow attempt keeps running, and the first answer
    wins. A request fails with the last error once every replica failed it.
    """

    def __init__(self, clients: Sequence[ChatClient]) -> None:
        if not clients:
            raise ValueError("ReplicaClient needs at least one client")
        self.clients = list(clients)
        self.base_url = self.clients[0].base_url  # the identity's URL
        self.concurrency = sum(c.concurrency for c in self.clients)
        self.timeout_s = max(c.timeout_s for c in self.clients)
        self._lock = threading.Lock()
        self._busy = [0] * len(self.clients)
        self._failures = [0] * len(self.clients)  # failures in a row
        self._down_until = [0.0] * len(self.clients)
        self._next = 0
        self._recent: list[float] = []  # latencies of the last answers, any replica
        self.answered = [0] * len(self.clients)  # completions per replica
        self._patience_moved: asyncio.Future[None] | None = None  # done when the patience changes (on the loop)

    def __repr__(self) -> str:
        return f"ReplicaClient({[c.base_url for c in self.clients]!r})"

    @property
    def url(self) -> str:
        return self.clients[0].url

    def check_reachable(self) -> None:
        """Set aside replicas nothing listens at; EndpointUnreachable (naming each) when none does."""
        errors = []
        for n, client in enumerate(self.clients):
            try:
                client.check_reachable()
            except EndpointUnreachable as exc:
                errors.append(str(exc))
                self._set_aside(n)
        if len(errors) == len(self.clients):
            raise EndpointUnreachable("no replica is reachable: " + " | ".join(errors))

    def model_info(self, model: str) -> dict[str, Any] | None:
        """What the first replica that says anything of `model` on `GET /models` says (replicas set aside skipped)."""
        now = time.monotonic()
        for n, client in enumerate(self.clients):
            if self._down_until[n] <= now:
                info = client.model_info(model)
                if info is not None:
                    return info
        return None

    def patience_s(self) -> float:
        """How long a replica may take before the request is also sent to another one."""
        with self._lock:
            if not self._recent:
                return self.timeout_s
            return min(self.timeout_s, max(PATIENCE_FLOOR_S, PATIENCE_FACTOR * max(self._recent)))

    def _set_aside(self, n: int) -> None:
        """Count a failure of replica `n` and set it aside; failures while it is aside count once."""
        with self._lock:
            if self._down_until[n] > time.monotonic():
                return
            self._failures[n] += 1
            backoff = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self._failures[n] - 1))
            self._down_until[n] = time.monotonic() + backoff

    def _answered(self, n: int, latency_s: float) -> None:
        before = self.patience_s()
        with self._lock:
            self._failures[n], self._down_until[n] = 0, 0.0
            self.answered[n] += 1
            self._recent = [*self._recent[-(_RECENT_ANSWERS - 1):], latency_s]
        if self._patience_moved is not None and self.patience_s() != before:
            self._patience_moved.set_result(None)
            self._patience_moved = None

    def _pick(self, tried: set[int]) -> int | None:
        """The replica for the next attempt (its busy count taken), None when every one was tried.
        Healthy ones first; a recovering one (its time aside is up) only while it has nothing in
        flight; replicas still aside only when there is nothing else."""
        with self._lock:
            now = time.monotonic()
            candidates = [n for n in range(len(self.clients)) if n not in tried]
            if not candidates:
                return None
            healthy = [n for n in candidates if self._failures[n] == 0
                       or (self._down_until[n] <= now and self._busy[n] == 0)]
            count = len(self.clients)
            pool = healthy or sorted(candidates, key=lambda n: self._down_until[n])[:1]
            chosen = min(pool, key=lambda n: (self._busy[n], (n - self._next) % count))
            self._next = (chosen + 1) % count
            self._busy[chosen] += 1
            return chosen

    async def _attempt(self, n: int, model: str, messages: Sequence[Message], temperature: float,
                       max_tokens: int) -> ChatResult | Exception:
        """One attempt on replica `n` (its busy count taken), run as a task of its own so a slow one can be left
        behind; its outcome is counted for the replica and returned, never raised."""
        try:
            outcome: ChatResult | Exception = await self.clients[n].achat(
                model, messages, temperature=temperature, max_tokens=max_tokens)
        except Exception as exc:  # noqa: BLE001 - handed to the waiting request
            outcome = exc
        finally:
            with self._lock:
                self._busy[n] -= 1
        if isinstance(outcome, ChatResult):
            self._answered(n, outcome.latency_s)
        elif _fails_over(outcome):
            self._set_aside(n)
        return outcome

    def chat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
             max_tokens: int = 512) -> ChatResult:
        """`achat` waited for on the served loop (`engine/served_loop.py`)."""
        from pytest_mllm.engine.served_loop import wait_for

        return wait_for(self.achat(model, messages, temperature=temperature, max_tokens=max_tokens))

    async def achat(self, model: str, messages: Sequence[Message], *, temperature: float = 0.0,
                    max_tokens: int = 512) -> ChatResult:
        """One completion: from one replica or, after a failure or a wait past the patience there, from the next.
        Runs on the served loop only."""
        import asyncio

        tried: set[int] = set()
        running: dict[asyncio.Task[ChatResult | Exception], int] = {}
        waited_on: asyncio.Task[ChatResult | Exception] | None = None  # the attempt within its patience, if any
        started = 0.0
        last: Exception | None = None

        def launch() -> None:
            nonlocal waited_on, started
            chosen = self._pick(tried)
            if chosen is not None:
                tried.add(chosen)
                task = asyncio.ensure_future(self._attempt(chosen, model, messages, temperature, max_tokens))
                _keep_running(task)
                running[task] = chosen
                waited_on, started = task, time.monotonic()

        launch()
        while running:
            wake: set[asyncio.Future[Any]] = set(running)
            timeout = None
            if waited_on is not None:
                wake.add(self._patience_moves())
                timeout = max(0.0, started + self.patience_s() - time.monotonic())
            done, _ = await asyncio.wait(wake, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            finished = [task for task in running if task in done]
            if not finished:
                if waited_on is not None and time.monotonic() - started >= self.patience_s():
                    self._set_aside(running[waited_on])  # too slow: left running, and the request goes elsewhere
                    waited_on = None
                    launch()
                continue
            for task in finished:
                del running[task]
                outcome = task.result()
                if isinstance(outcome, ChatResult):
                    return outcome
                if not _fails_over(outcome):
                    raise outcome
                last = outcome
                if waited_on is task or waited_on is None:
                    waited_on = None
                    launch()
        assert last is not None  # every attempt ends with an outcome
        raise last

    def _patience_moves(self) -> asyncio.Future[None]:
        """A future done when the patience changes (an answer changed the slowest recent one)."""
        import asyncio

        if self._patience_moved is None:
            self._patience_moved = asyncio.get_running_loop().create_future()
        return self._patience_moved

    def chat_many(self, model: str, conversations: Sequence[Sequence[Message]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> list[ChatResult | Exception]:
        """`chat` for each conversation, up to every replica's concurrency at once; results in input order."""
        return _chat_each(self, model, conversations, temperature=temperature, max_tokens=max_tokens)


_running: set[asyncio.Task[Any]] = set()  # the loop keeps only weak references to its tasks


def _keep_running(task: asyncio.Task[Any]) -> None:
    """Hold `task` until it is done, though nothing awaits it any more (an attempt left behind)."""
    _running.add(task)
    task.add_done_callback(_running.discard)


def _chat_each(client: ChatClient | ReplicaClient, model: str, conversations: Sequence[Sequence[Message]], *,
               temperature: float, max_tokens: int) -> list[ChatResult | Exception]:
    """`client.achat` for each conversation, up to `client.concurrency` at once on the served loop; results or
    errors in order (one failure never cancels the others)."""
    if not conversations:
        return []
    from pytest_mllm.engine.served_loop import wait_for

    return wait_for(_achat_each(client, model, conversations, temperature=temperature, max_tokens=max_tokens))


async def _achat_each(client: ChatClient | ReplicaClient, model: str, conversations: Sequence[Sequence[Message]], *,
                      temperature: float, max_tokens: int) -> list[ChatResult | Exception]:
    import asyncio

    places = asyncio.Semaphore(min(client.concurrency, len(conversations)))

    async def one(messages: Sequence[Message]) -> ChatResult | Exception:
        async with places:
            try:
                return await client.achat(model, messages, temperature=temperature, max_tokens=max_tokens)
            except Exception as exc:  # noqa: BLE001 - returned in its conversation's place
                return exc

    return list(await asyncio.gather(*(one(messages) for messages in conversations)))
