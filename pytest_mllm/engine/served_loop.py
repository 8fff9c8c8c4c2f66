"""One event loop per process for a served model's requests, and plain functions that wait on it.

A served run keeps dozens of requests in flight. Each answer (prompt, cache, model, scoring) is
ordinary synchronous code; `spawn` runs it in a greenlet on the loop, and where it waits for a
server (`wait_for`) the greenlet steps aside and the loop goes on with the others. The loop has no
thread of its own: it runs on the thread that waits for it (`drive_until`), and the tests' thread
lets it do what is ready between two tests (`poll`). So a served run sends, receives and evaluates
on the tests' own thread: no second thread takes the interpreter's lock back and forth with it
(two threads on two cores did, at a cost of about a third of a sample's CPU). A thread that waits
while another runs the loop blocks until its result is there, or takes the loop over once free.

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

TAKE_OVER_S = 0.05  # how often a thread waiting while another runs the loop checks whether it may run it itself
_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_running = threading.Lock()  # held by the thread running the loop


class _Answering(greenlet.greenlet):  # type: ignore[misc]  # greenlet has no type hints
    """A greenlet of `spawn`: its `wait_for` calls hand their awaitables to the task driving it."""


def loop() -> asyncio.AbstractEventLoop:
    """The process's served loop (made at first use; it runs only while a thread waits on it)."""
    global _loop
    with _lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
        return _loop


def on_loop_thread() -> bool:
    """True while the caller runs inside the served loop (a callback, a task or a greenlet of `spawn`)."""
    try:
        return _loop is not None and asyncio.get_running_loop() is _loop
    except RuntimeError:
        return False


def wait_for(awaitable: Awaitable[T]) -> T:
    """The result of `awaitable`, run on the served loop: a greenlet of `spawn` steps aside meanwhile; any other
    caller runs the loop until it is there (`drive_until`). Called inside the loop outside a greenlet of `spawn`
    (from a coroutine or a callback), it would wait for ever: a RuntimeError says so instead."""
    current = greenlet.getcurrent()
    if isinstance(current, _Answering):
        return current.parent.switch(awaitable)  # type: ignore[no-any-return]
    if on_loop_thread():
        if asyncio.iscoroutine(awaitable):
            awaitable.close()
        raise RuntimeError("wait_for called inside the served loop, outside spawn: it would wait for ever")
    return drive_until(asyncio.run_coroutine_threadsafe(_awaited(awaitable), loop()))


def drive_until(future: concurrent.futures.Future[T]) -> T:
    """The result of `future`, the served loop run on this thread until it is done; while another thread runs
    the loop, this one waits, and takes the loop over if that thread stops before `future` is done."""
    if on_loop_thread():
        raise RuntimeError("drive_until called inside the served loop: it would wait for ever")
    served = loop()
    while not future.done():
        if _running.acquire(blocking=False):
            try:
                served.run_until_complete(_settled(future))
            finally:
                _running.release()
        else:
            concurrent.futures.wait([future], timeout=TAKE_OVER_S)
    return future.result()


def poll() -> None:
    """Let the served loop do what is ready now (answers that came, requests to send), without waiting;
    nothing when no loop was made or another thread runs it."""
    if _loop is not None and _running.acquire(blocking=False):
        try:
            _loop.run_until_complete(asyncio.sleep(0))
        finally:
            _running.release()


def spawn(function: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
    """`function(*args)` run on the served loop in a greenlet of its own; its `wait_for` calls overlap with the
    other greenlets' waits. The future carries what it returns or raises (`drive_until` waits for it)."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    served = loop()
    if on_loop_thread():
        served.create_task(_drive(function, args, future))
    else:
        served.call_soon_threadsafe(lambda: served.create_task(_drive(function, args, future)))
    return future


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


async def _settled(future: concurrent.futures.Future[Any]) -> None:
    """Return once `future` is done, whatever its outcome (read by `drive_until`, not here)."""
    if not future.done():
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def settle() -> None:
            if not done.done():
                done.set_result(None)

        future.add_done_callback(lambda _: done.get_loop().call_soon_threadsafe(settle))
        await done


async def _drive(function: Callable[..., T], args: tuple[Any, ...], future: concurrent.futures.Future[T]) -> None:
    """Run `function` in a greenlet, awaiting each awaitable it hands over and sending back the result (or
    throwing the error in) until it returns."""
    if not future.set_running_or_notify_cancel():
        return
    answering = _Answering(function)
    try:  # KeyboardInterrupt and SystemExit (a signal, most often caught inside some answer) go on to the run
        handed = answering.switch(*args)
        while not answering.dead:
            try:
                result = await handed
            except BaseException as exc:  # noqa: BLE001 - raised where the greenlet waits, as a thread's wait raises
                handed = answering.throw(exc)
            else:
                handed = answering.switch(result)
    except (KeyboardInterrupt, SystemExit) as exc:
        future.set_exception(exc)
        raise
    except BaseException as exc:  # noqa: BLE001 - the future carries it to whoever takes the answer
        future.set_exception(exc)
    else:
        future.set_result(handed)
