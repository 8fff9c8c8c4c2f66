"""One event loop per process for a served model's requests, and plain functions that wait on it.

A served run keeps dozens of requests in flight. Each answer (prompt, cache, model, scoring) is
ordinary synchronous code; `spawn` runs it in a greenlet on the loop's thread, and where it waits
for a server (`wait_for`) the greenlet steps aside and the loop goes on with the others. So every
request of the process is sent and received on one thread, and the answers that come are evaluated
there, one at a time, between two waits: no thread per request handing the interpreter back and
forth. Code on any other thread that calls `wait_for` blocks its own thread until the loop has the
result.

`greenlet` ships with the `openai` extra; it is imported only when a served model runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import greenlet

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


class _Answering(greenlet.greenlet):  # type: ignore[misc]  # greenlet has no type hints
    """A greenlet of `spawn`: its `wait_for` calls hand their awaitables to the task driving it."""


def loop() -> asyncio.AbstractEventLoop:
    """The process's served loop, started on a daemon thread at first use."""
    global _loop, _thread
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            _thread = threading.Thread(target=_loop.run_forever, name="served-loop", daemon=True)
            _thread.start()
        return _loop


def on_loop_thread() -> bool:
    """True when the caller runs on the served loop's thread."""
    return _thread is not None and threading.current_thread() is _thread


def wait_for(awaitable: Awaitable[T]) -> T:
    """The result of `awaitable`, run on the served loop: a greenlet of `spawn` steps aside meanwhile;
    any other thread blocks. Called on the loop's thread outside a greenlet of `spawn` (from a coroutine
    or a callback of the loop), it would block the loop for ever: a RuntimeError says so instead."""
    current = greenlet.getcurrent()
    if isinstance(current, _Answering):
        return current.parent.switch(awaitable)  # type: ignore[no-any-return]
    if on_loop_thread():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise RuntimeError("wait_for called on the served loop's own thread, outside spawn: it would wait for ever")
    return asyncio.run_coroutine_threadsafe(_awaited(awaitable), loop()).result()


def spawn(function: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
    """`function(*args)` run on the served loop's thread in a greenlet of its own; its `wait_for` calls
    overlap with the other greenlets' waits. The future carries what it returns or raises."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    served = loop()
    if on_loop_thread():
        served.create_task(_drive(function, args, future))
    else:
        served.call_soon_threadsafe(lambda: served.create_task(_drive(function, args, future)))
    return future


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _drive(function: Callable[..., T], args: tuple[Any, ...], future: concurrent.futures.Future[T]) -> None:
    """Run `function` in a greenlet, awaiting each awaitable it hands over and sending back the result (or
    throwing the error in) until it returns."""
    if not future.set_running_or_notify_cancel():
        return
    answering = _Answering(function)
    try:
        handed = answering.switch(*args)
        while not answering.dead:
            try:
                result = await handed
            except BaseException as exc:  # noqa: BLE001 - raised where the greenlet waits, as a thread's wait raises
                handed = answering.throw(exc)
            else:
                handed = answering.switch(result)
    except BaseException as exc:  # noqa: BLE001 - the future carries it to whoever takes the answer
        future.set_exception(exc)
    else:
        future.set_result(handed)
