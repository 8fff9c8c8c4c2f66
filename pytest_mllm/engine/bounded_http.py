"""Bounds on what one HTTP request to a server may cost: a deadline for the whole request and a size
for its answer, whatever the server does.

The `openai` SDK's own timeout bounds each socket operation, not the request: a server that sends a
byte every few seconds (of its headers or of its body) holds a request for ever, and a compressed or
endless body is read into memory whole. `bounded_http_client` gives the SDK an asynchronous HTTP client
whose connections read and write against the deadline of the request in progress (`limits(deadline_s)`
sets it for the calling task: each task has its own context) and count the bytes received, and whose
answers are decompressed here, a bounded piece at a time:

- the deadline covers connecting, sending, the headers and the whole body; when it passes, the
  read in progress fails as a timeout (`RequestLimits.expired`);
- an answer may take at most MAX_ANSWER_BYTES, received and once decompressed (a gzip bomb of
  0.5 MB that decodes to 500 MB is stopped at the limit); past it the request fails
  (`RequestLimits.refused` says why).

How the connections are bounded needs one thing httpx does not expose: the network backend of its
transport's connection pool (`httpcore`'s public `network_backend`), set on the pool it made.
"""

from __future__ import annotations

import sys
import time
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

MAX_ANSWER_BYTES = 16 * 2**20  # an answer's bytes, received and decompressed: a million tokens of text fit
_HEADER_ALLOWANCE = 2**16  # received besides the body: the status line and headers
_INFLATE_STEP = 2**16  # decompressed at most this much at a time


@dataclass
class RequestLimits:
    """The limits of the request the calling task is making, and what it ran into."""

    deadline: float  # time.monotonic() by which the whole request must be done
    received: int = 0  # bytes read from the connection
    expired: bool = False  # the deadline passed
    refused: str | None = None  # why the answer was refused (too large, an unknown encoding)

    def remaining(self, timeout: float | None) -> float:
        """The time an operation may take: its own timeout, at most what is left of the deadline."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.expired = True
            return 0.0
        return left if timeout is None else min(timeout, left)


_current: ContextVar[RequestLimits | None] = ContextVar("request_limits", default=None)


@contextmanager
def limits(deadline_s: float) -> Iterator[RequestLimits]:
    """Bound the HTTP request the calling task makes in this block: `deadline_s` from now."""
    state = RequestLimits(time.monotonic() + deadline_s)
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


def http_packages() -> tuple[Any, Any]:
    """(httpx, httpcore): the HTTP packages the installed `openai` SDK is built on (httpx2 in later releases)."""
    import openai

    client_class = next(c for c in openai.DefaultAsyncHttpxClient.__mro__ if c.__name__ == "AsyncClient")
    httpx = sys.modules[client_class.__module__.split(".")[0]]  # imported by the SDK
    if httpx.__name__ == "httpx2":  # httpx imports its httpcore only when a transport is made: import it here
        import httpcore2

        return httpx, httpcore2
    import httpcore

    return httpx, httpcore


class _BoundedStream:
    """A connection whose reads and writes end by the request's deadline and whose received bytes count."""

    def __init__(self, stream: Any, httpcore: Any) -> None:
        self._stream = stream
        self._httpcore = httpcore

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        state = _current.get()
        if state is None:
            return await self._stream.read(max_bytes, timeout)  # type: ignore[no-any-return]
        allowed = state.remaining(timeout)
        if state.expired:
            raise self._httpcore.ReadTimeout("the request's deadline passed")
        data: bytes = await self._stream.read(max_bytes, allowed)
        state.received += len(data)
        if state.received > MAX_ANSWER_BYTES + _HEADER_ALLOWANCE:
            state.refused = f"more than {MAX_ANSWER_BYTES // 2**20} MiB"
            raise self._httpcore.ReadError(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        state = _current.get()
        if state is not None:
            timeout = state.remaining(timeout)
            if state.expired:
                raise self._httpcore.WriteTimeout("the request's deadline passed")
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> _BoundedStream:
        state = _current.get()
        if state is not None:
            timeout = state.remaining(timeout)
            if state.expired:
                raise self._httpcore.ConnectTimeout("the request's deadline passed")
        return _BoundedStream(await self._stream.start_tls(ssl_context, server_hostname, timeout), self._httpcore)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _BoundedBackend:
    """httpcore's network backend, its connections made `_BoundedStream`s and opened by the deadline."""

    def __init__(self, backend: Any, httpcore: Any) -> None:
        self._backend = backend
        self._httpcore = httpcore

    def _timeout(self, timeout: float | None) -> float | None:
        state = _current.get()
        if state is None:
            return timeout
        timeout = state.remaining(timeout)
        if state.expired:
            raise self._httpcore.ConnectTimeout("the request's deadline passed")
        return timeout

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> _BoundedStream:
        stream = await self._backend.connect_tcp(host, port, timeout=self._timeout(timeout),
                                                 local_address=local_address, socket_options=socket_options)
        return _BoundedStream(stream, self._httpcore)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> _BoundedStream:
        stream = await self._backend.connect_unix_socket(path, timeout=self._timeout(timeout),
                                                         socket_options=socket_options)
        return _BoundedStream(stream, self._httpcore)

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class _InflatedBody:
    """A response body decompressed here (gzip or deflate) a bounded step at a time, and refused past
    MAX_ANSWER_BYTES decompressed."""

    def __init__(self, raw: Any, encoding: str, httpx: Any) -> None:
        self._raw = raw
        self._encoding = encoding
        self._httpx = httpx

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # gzip: a gzip header; deflate: a zlib stream (as sent by most servers) or a raw one
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16 if self._encoding in ("gzip", "x-gzip") else zlib.MAX_WBITS)
        raw_deflate = self._encoding == "deflate"
        size = 0
        async for chunk in self._raw:
            pending = chunk
            while pending:
                try:
                    data = inflater.decompress(pending, _INFLATE_STEP)
                except zlib.error as exc:
                    if raw_deflate and size == 0:  # "deflate" sent without its zlib header
                        inflater, raw_deflate = zlib.decompressobj(-zlib.MAX_WBITS), False
                        data = inflater.decompress(pending, _INFLATE_STEP)
                    else:
                        raise self._httpx.DecodingError(f"the {self._encoding} body cannot be decompressed: {exc}") from None
                raw_deflate = False
                pending = inflater.unconsumed_tail
                size += len(data)
                if size > MAX_ANSWER_BYTES:
                    self._refuse(f"more than {MAX_ANSWER_BYTES // 2**20} MiB once decompressed")
                if data:
                    yield data
                if inflater.eof:
                    break

    def _refuse(self, why: str) -> None:
        state = _current.get()
        if state is not None:
            state.refused = why
        raise self._httpx.DecodingError(f"the answer is {why}")

    async def aclose(self) -> None:
        await self._raw.aclose()


def _bound_body(httpx: Any) -> Any:
    """A response hook: a compressed body is decompressed by `_InflatedBody` instead of httpx (which has no
    bound); an encoding other than gzip or deflate is refused."""
    class InflatedBody(_InflatedBody, httpx.AsyncByteStream):  # type: ignore[misc]  # httpx reads and closes only its own stream type
        pass

    async def hook(response: Any) -> None:
        codings = [c.strip().lower() for c in response.headers.get("content-encoding", "").split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if not codings:
            return
        if len(codings) > 1 or codings[0] not in ("gzip", "x-gzip", "deflate"):
            state = _current.get()
            if state is not None:
                state.refused = f"sent with the content encoding {', '.join(codings)!r}, which is not read here"
            raise httpx.DecodingError(f"unsupported content encoding {', '.join(codings)!r}")
        response.stream = InflatedBody(response.stream, codings[0], httpx)
        del response.headers["content-encoding"]
    return hook


def bounded_http_client(base_url: str, *, connections: int) -> Any:
    """An asynchronous HTTP client for the SDK (`openai.AsyncOpenAI(http_client=…)`) whose requests keep the
    limits of the task's `limits(…)` block; proxies from the environment (HTTPS_PROXY, NO_PROXY …) as the SDK
    uses them. It may be made on any thread; it is used on one event loop only."""
    import urllib.parse
    import urllib.request

    import openai

    httpx, httpcore = http_packages()
    host = urllib.parse.urlsplit(base_url).hostname or ""
    proxies = urllib.request.getproxies()
    proxy = None if urllib.request.proxy_bypass(host) else (proxies.get(urllib.parse.urlsplit(base_url).scheme)
                                                            or proxies.get("all"))
    transport = httpx.AsyncHTTPTransport(proxy=proxy or None, limits=httpx.Limits(
        max_connections=None, max_keepalive_connections=connections))
    pool = getattr(transport, "_pool", None)
    if pool is not None and hasattr(pool, "_network_backend"):
        pool._network_backend = _BoundedBackend(pool._network_backend, httpcore)
    return openai.DefaultAsyncHttpxClient(transport=transport, event_hooks={"response": [_bound_body(httpx)]},
                                          headers={"Accept-Encoding": "gzip, deflate"})
