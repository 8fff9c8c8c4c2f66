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

import asyncio
import ssl
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


_READ_AHEAD = 2**18  # received bytes held before the connection stops reading until some are taken


class _Connection(asyncio.Protocol):
    """The receiving end of a connection: what arrived and not yet read, and whether it ended."""

    def __init__(self) -> None:
        self.received = bytearray()
        self.ended = False
        self.error: Exception | None = None
        self.paused = False  # the transport's buffer is full: a write waits
        self.waiter: asyncio.Future[None] | None = None  # a read or write waiting for the connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport  # after a TLS handshake, the TLS transport (`_BoundedStream.start_tls`)
        self.held = False  # reading paused: `_READ_AHEAD` bytes wait to be read

    def data_received(self, data: bytes) -> None:
        self.received += data
        if len(self.received) > _READ_AHEAD and not self.held:
            self.held = True
            self.transport.pause_reading()
        self._wake()

    def take(self, max_bytes: int) -> bytes:
        """Up to `max_bytes` of what arrived, reading resumed once little is left."""
        data = bytes(self.received[:max_bytes])
        del self.received[:max_bytes]
        if self.held and len(self.received) <= _READ_AHEAD and not self.ended:
            self.held = False
            self.transport.resume_reading()
        return data

    def eof_received(self) -> None:
        self.ended = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended, self.error = True, exc
        self._wake()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class _BoundedStream:
    """httpcore's network stream on an asyncio transport: reads and writes end by the request's deadline
    (`limits`), and the bytes received count."""

    def __init__(self, transport: Any, connection: _Connection, httpcore: Any) -> None:
        self._transport = transport
        self._connection = connection
        self._httpcore = httpcore

    async def _wait(self, timeout: float | None, timed_out: type[Exception]) -> None:
        """Wait until the connection wakes a waiter; `timed_out` once `timeout` passes."""
        waiter = self._connection.waiter = asyncio.get_running_loop().create_future()

        def expire() -> None:
            if not waiter.done():
                waiter.set_exception(timed_out("timed out"))

        timer = None if timeout is None else asyncio.get_running_loop().call_later(timeout, expire)
        try:
            await waiter
        finally:
            self._connection.waiter = None
            if timer is not None:
                timer.cancel()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        state = _current.get()
        connection = self._connection
        if not connection.received and not connection.ended:
            if state is not None:
                timeout = state.remaining(timeout)
                if state.expired:
                    raise self._httpcore.ReadTimeout("the request's deadline passed")
            await self._wait(timeout, self._httpcore.ReadTimeout)
        if not connection.received:
            if connection.error is not None:
                raise self._httpcore.ReadError(str(connection.error))
            return b""
        data = connection.take(max_bytes)
        if state is not None:
            state.received += len(data)
            if state.received > MAX_ANSWER_BYTES + _HEADER_ALLOWANCE:
                state.refused = f"more than {MAX_ANSWER_BYTES // 2**20} MiB"
                raise self._httpcore.ReadError(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._transport.is_closing():
            raise self._httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        if self._connection.paused:
            state = _current.get()
            if state is not None:
                timeout = state.remaining(timeout)
                if state.expired:
                    raise self._httpcore.WriteTimeout("the request's deadline passed")
            await self._wait(timeout, self._httpcore.WriteTimeout)

    async def aclose(self) -> None:
        self._transport.close()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> _BoundedStream:
        timeout = _connect_timeout(timeout, self._httpcore)
        try:
            transport = await asyncio.wait_for(asyncio.get_running_loop().start_tls(
                self._transport, self._connection, ssl_context, server_hostname=server_hostname), timeout)
        except asyncio.TimeoutError:
            self._transport.close()
            raise self._httpcore.ConnectTimeout("the TLS handshake timed out") from None
        except (OSError, ssl.SSLError) as exc:
            self._transport.close()
            raise self._httpcore.ConnectError(str(exc)) from None
        self._connection.transport = transport
        return _BoundedStream(transport, self._connection, self._httpcore)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle connection with something to read was closed or is out of step
            return bool(self._connection.received) or self._connection.ended
        name = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername",
                "socket": "socket"}.get(info)
        return None if name is None else self._transport.get_extra_info(name)


def _connect_timeout(timeout: float | None, httpcore: Any) -> float | None:
    """A connection's timeout, at most what is left of the request's deadline."""
    state = _current.get()
    if state is None:
        return timeout
    timeout = state.remaining(timeout)
    if state.expired:
        raise httpcore.ConnectTimeout("the request's deadline passed")
    return timeout


class _BoundedBackend:
    """httpcore's network backend on the running asyncio loop, its connections `_BoundedStream`s opened by the
    deadline (the transport's own backend, on anyio, costs a third more per request)."""

    def __init__(self, httpcore: Any) -> None:
        self._httpcore = httpcore

    async def _open(self, opening: Any, timeout: float | None, socket_options: Any) -> _BoundedStream:
        timeout = _connect_timeout(timeout, self._httpcore)
        try:
            transport, connection = await asyncio.wait_for(opening, timeout)
        except asyncio.TimeoutError:
            raise self._httpcore.ConnectTimeout("the connection timed out") from None
        except OSError as exc:
            raise self._httpcore.ConnectError(str(exc)) from None
        for option in socket_options or ():
            transport.get_extra_info("socket").setsockopt(*option)
        return _BoundedStream(transport, connection, self._httpcore)

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> _BoundedStream:
        opening = asyncio.get_running_loop().create_connection(
            _Connection, host, port, local_addr=None if local_address is None else (local_address, 0))
        return await self._open(opening, timeout, socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Any = None) -> _BoundedStream:
        opening = asyncio.get_running_loop().create_unix_connection(_Connection, path)
        return await self._open(opening, timeout, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


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
        pool._network_backend = _BoundedBackend(httpcore)
    return openai.DefaultAsyncHttpxClient(transport=transport, event_hooks={"response": [_bound_body(httpx)]},
                                          headers={"Accept-Encoding": "gzip, deflate"})
