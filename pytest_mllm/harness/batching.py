"""Batching across tests: a sample test is answered together with the tests this process runs next.

Tests stay one per sample; the first of a batch generates for all of them and the others find
their records ready. Outside xdist "next" is the rest of the collection; under xdist it is
what the controller has handed this worker. A served model's tests are answered one each through
an `AnswerPipeline` instead, which keeps its endpoint's concurrency of requests in flight
across tests (`engine/pipeline.py`).
"""

from __future__ import annotations

import pytest

from pytest_mllm.engine.images import thumbnail_url
from pytest_mllm.engine.pipeline import AnswerPipeline
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.collector import freeze_survivors
from pytest_mllm.harness.items import SampleItem
from pytest_mllm.pytest_compat import WorkerQueue, worker_queue
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample


class Batcher:
    """Records for sample tests, generated a batch at a time."""

    def __init__(self, config: pytest.Config, evaluation: Evaluation, *, thumbnails: bool) -> None:
        self.config = config
        self.evaluation = evaluation
        self.thumbnails = thumbnails  # wrong answers carry a thumbnail for the HTML report
        self._ready: dict[str, Record] = {}
        self._items: list[pytest.Item] = []
        self._positions: dict[int, int] = {}  # id(item) → its index in the collection
        self._queue: WorkerQueue | None = None  # under xdist: what the controller has handed this worker
        self._cursor = 0  # outside xdist: the first index the pipeline has not looked at
        self._frozen = False
        width = evaluation.requests_in_flight()
        self._pipeline = AnswerPipeline(evaluation.answer, evaluation.turn, width, self._send_ahead) if width else None

    def collected(self, items: list[pytest.Item]) -> None:
        """Remember the collection order (the look-ahead outside xdist)."""
        self._items = items
        self._positions = {id(item): n for n, item in enumerate(items)}
        self._queue = worker_queue(self.config)

    def record_for(self, item: SampleItem) -> Record:
        """The record of `item`, answered with up to batch size − 1 tests that follow it."""
        if item.nodeid in self._ready:
            return self._ready.pop(item.nodeid)
        if not isinstance(item.sample, Sample):
            record = self.evaluation.unreadable(item.sample, item.spec)
            record["order"] = item.order
            return record
        if self._pipeline is not None:
            return self._finish([item], [self._pipelined(item, self._pipeline)])[0]
        batch = [item, *self._upcoming(item, self.evaluation.settings.batch_size - 1)]
        records = self.evaluation.answer([(i.sample, i.spec) for i in batch])  # type: ignore[misc]
        for member, record in zip(batch, self._finish(batch, records)):
            self._ready[member.nodeid] = record
        return self._ready.pop(item.nodeid)

    def _pipelined(self, item: SampleItem, pipeline: AnswerPipeline) -> Record:
        """The record of `item`, the requests of the tests after it sent meanwhile (up to the pipeline's width).
        Keys are collection indices."""
        position = self._positions.get(id(item))
        key = position if position is not None else item.nodeid
        with pipeline.lock:
            if position is not None and self._cursor <= position:  # outside xdist the cursor never looks back
                self._cursor = position + 1
            pipeline.submit(key, item.sample, item.spec)  # type: ignore[arg-type]
            pipeline.refill()
        return pipeline.take(key)

    def _send_ahead(self, room: int) -> None:
        """Submit up to `room` of the sample tests this process runs next that are not yet submitted, looking at
        each test once: a cursor into the collection (outside xdist) or into this worker's queue. Called under
        the pipeline's lock, by the tests' thread or, inside the served loop, by an answer that came."""
        pipeline, items = self._pipeline, self._items
        assert pipeline is not None
        if self._queue is None:
            while room and self._cursor < len(items):
                index = self._cursor
                self._cursor += 1
                room -= self._submit(pipeline, index, items[index])
            return
        following = self._queue.following
        if following is not None:
            room -= self._submit(pipeline, following, items[following])
        while room:
            fresh = self._queue.unseen(room)
            if not fresh:
                return
            for index in fresh:
                room -= self._submit(pipeline, index, items[index])

    @staticmethod
    def _submit(pipeline: AnswerPipeline, index: int, other: pytest.Item) -> int:
        """Submit `other` under its index when it is a readable sample's test not yet submitted: 1 if it was."""
        if isinstance(other, SampleItem) and isinstance(other.sample, Sample) and index not in pipeline:
            pipeline.submit(index, other.sample, other.spec)
            return 1
        return 0

    def close(self) -> None:
        """The run ends: answers not started are dropped."""
        if self._pipeline is not None:
            self._pipeline.close()

    def _finish(self, batch: list[SampleItem], records: list[Record]) -> list[Record]:
        """Records made ready for their tests: order, thumbnails; survivors frozen after the first."""
        if not self._frozen:
            self._frozen = True
            freeze_survivors()
        for member, record in zip(batch, records):
            record["order"] = member.order
            if self.thumbnails and record["status"] == "incorrect":
                record["thumbnail"] = thumbnail_url(member.sample, self.evaluation.settings.max_pixels)  # type: ignore[arg-type]
        return records

    def _upcoming(self, item: SampleItem, want: int) -> list[SampleItem]:
        """Up to `want` sample tests this process runs next, not answered yet, with the same generation length."""
        if want <= 0:
            return []
        items = self._items or item.session.items
        # outside xdist: the rest of the collection, walked only as far as the batch needs (no list of it)
        indices = self._queue.head(want) if self._queue is not None else \
            range(self._positions.get(id(item), len(items)) + 1, len(items))
        upcoming: list[SampleItem] = []
        for index in indices:
            other = items[index]
            if (isinstance(other, SampleItem) and isinstance(other.sample, Sample) and other.nodeid not in self._ready
                    and other.spec.max_new_tokens == item.spec.max_new_tokens):
                upcoming.append(other)
                if len(upcoming) == want:
                    break
        return upcoming
