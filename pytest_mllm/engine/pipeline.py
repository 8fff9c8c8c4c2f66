"""Answers kept in flight across tests for a served model: while one test waits for its answer,
the next ones' requests are already out, up to the endpoint's concurrency (the batch is a notion
of local models, which generate a batch at once).

Each answer runs the ordinary evaluation (prompt, cache, model, scoring) in a greenlet on the
served loop (`engine/served_loop.py`), one at a time (`Turn`); the model gives the turn up while it
waits for its server (`WaitsOutsideTurn`), so only the waits overlap and the cache, the scores and
the judge see one caller at a time. The loop runs on the tests' thread: every request goes out and
every answer is evaluated there, with no other thread.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Hashable, Iterator

from pytest_mllm.record import Record
from pytest_mllm.sample import Model, Request, Response, Sample

if TYPE_CHECKING:
    import asyncio

    from pytest_mllm.engine.spec import BenchmarkSpec


class Turn:
    """A lock over the evaluation that its holder can give up for a while (`given_up`). The holder is a
    thread or one of the served loop's greenlets; the turn is handed to those waiting in the order they
    came. A greenlet waits on the loop, a thread runs the loop while it waits (the holder may be a
    greenlet waiting on it)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()  # over the fields below, held only for a moment
        self._held = False
        self._owner: object = None
        self._waiting: deque[Callable[[], object]] = deque()  # how to hand the turn to each waiting caller

    def __enter__(self) -> Turn:
        with self._guard:
            if not self._held:
                self._held = True
                self._owner = _holder()
                return self
            hand, wait = self._queue_up()
        try:
            wait()  # returns once the turn was handed over: it stays held
        except BaseException:  # interrupted while waiting: leave the queue, or pass on a turn already handed over
            with self._guard:
                if hand in self._waiting:
                    self._waiting.remove(hand)
                else:
                    self._pass_on()
            raise
        self._owner = _holder()
        return self

    def _queue_up(self) -> tuple[Callable[[], object], Callable[[], object]]:
        """Join the waiting callers (under the guard): (how the turn is handed to this caller, the call that
        waits for it)."""
        from pytest_mllm.engine.served_loop import drive_until, loop, on_loop_thread, wait_for

        if on_loop_thread():
            served = loop()
            handed: asyncio.Future[None] = served.create_future()
            hand: Callable[[], object] = lambda: served.call_soon_threadsafe(handed.set_result, None)  # noqa: E731
            self._waiting.append(hand)
            return hand, lambda: wait_for(handed)
        given: Future[None] = Future()  # a thread runs the loop meanwhile: the holder may be a greenlet on it
        hand = lambda: given.set_result(None)  # noqa: E731 - the queue's entry, compared on leaving it
        self._waiting.append(hand)
        return hand, lambda: drive_until(given)

    def __exit__(self, *exc: object) -> None:
        with self._guard:
            self._pass_on()

    def _pass_on(self) -> None:
        """Hand the turn to the first waiting caller, or free it (under the guard)."""
        self._owner = None
        if self._waiting:
            self._waiting.popleft()()
        else:
            self._held = False

    @contextmanager
    def given_up(self) -> Iterator[None]:
        """Let others take the turn meanwhile (a no-op for a caller that does not hold it)."""
        if self._owner is None or self._owner is not _holder():
            yield
            return
        self.__exit__()
        try:
            yield
        finally:
            self.__enter__()


def _holder() -> object:
    """Who runs this code: the greenlet (every thread runs in one once greenlet is imported), else the thread."""
    import sys

    greenlet = sys.modules.get("greenlet")
    return greenlet.getcurrent() if greenlet is not None else threading.current_thread()


class WaitsOutsideTurn:
    """A model whose `generate` gives up the turn while it runs (it waits on a server); every
    other attribute is the model's."""

    def __init__(self, model: Model, turn: Turn) -> None:
        self.model = model
        self.turn = turn

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        with self.turn.given_up():
            return self.model.generate(requests)


BACKLOG_FACTOR = 8  # answers kept ahead of the tests, as a multiple of the requests in flight
Answer = Callable[[Sequence[tuple[Sample, "BenchmarkSpec"]]], list[Record]]
Ahead = Callable[[int], None]  # given the room, submits up to that many of the samples to answer next


class AnswerPipeline:
    """Records answered one sample each, up to `width` at once, in greenlets on the served loop, each taking
    the turn to evaluate.

    The loop runs on the tests' thread when it takes a record (`take`): what came meanwhile is
    evaluated then, and each answer that comes frees its slot and refills it at once (`ahead`: the
    samples to answer next). The bookkeeping costs the
    same whatever the width and the backlog: a running count of the answers in flight, under one
    lock with the submissions."""

    def __init__(self, answer: Answer, turn: Turn, width: int, ahead: Ahead | None = None) -> None:
        self.answer = answer
        self.turn = turn
        self.width = width
        self.ahead = ahead
        from pytest_mllm.engine.served_loop import drive_until, poll, spawn

        self._spawn, self._poll, self._drive_until = spawn, poll, drive_until
        self._futures: dict[Hashable, Future[Record]] = {}
        self._in_flight = 0  # submitted and not yet answered
        self.lock = threading.RLock()  # over the futures, the count and `ahead`'s own state (its cursor)
        self._closed = False

    @property
    def pending(self) -> int:
        """Answers submitted and not yet taken."""
        return len(self._futures)

    @property
    def in_flight(self) -> int:
        """Answers submitted and not yet answered."""
        return self._in_flight

    @property
    def room(self) -> int:
        """How many more answers to start now: up to `width` in flight, and at most BACKLOG_FACTOR × width
        answered ahead of the tests that take them."""
        return max(0, min(self.width - self._in_flight, BACKLOG_FACTOR * self.width - len(self._futures)))

    def __contains__(self, key: Hashable) -> bool:
        return key in self._futures

    def submit(self, key: Hashable, sample: Sample, spec: BenchmarkSpec) -> None:
        """Start answering `sample` (once per key)."""
        with self.lock:
            if key in self._futures or self._closed:
                return
            self._in_flight += 1
            future = self._futures[key] = self._spawn(self._one, sample, spec)
            future.add_done_callback(self._came)

    def refill(self) -> None:
        """Start as many of the next samples as there is room for (`ahead`)."""
        with self.lock:
            room = self.room
            if room and self.ahead is not None and not self._closed:
                self.ahead(room)

    def _one(self, sample: Sample, spec: BenchmarkSpec) -> Record:
        with self.turn:
            return self.answer([(sample, spec)])[0]

    def _came(self, future: Future[Record]) -> None:
        """An answer came (or was dropped): one less in flight, and the next ones started."""
        with self.lock:
            self._in_flight -= 1
            self.refill()

    def take(self, key: Hashable) -> Record:
        """The record of a submitted sample, once answered (an answer that raised raises here). The served loop
        first does what is ready (answers that came, the requests they free), then runs until this one is there."""
        try:
            self._poll()
            return self._drive_until(self._futures[key])
        finally:
            with self.lock:
                del self._futures[key]

    def close(self) -> None:
        """Drop the answers not started (a run stopped early); those in flight are left unfinished (nothing runs the
        served loop after the last test), so their answers are not cached."""
        with self.lock:
            self._closed = True
            for future in self._futures.values():
                future.cancel()  # only an answer not started yet can be cancelled
