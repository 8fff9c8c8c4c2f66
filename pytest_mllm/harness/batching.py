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
from pytest_mllm.pytest_compat import queued_indices
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample


class Batcher:
    """Records for sample tests, generated a batch at a time."""

    def __init__(self, config: pytest.Config, evaluation: Evaluation, *, thumbnails: bool) -> None:
        self.config = config
        self.evaluation = evaluation
        self.thumbnails = thumbnails  # wrong answers carry a thumbnail for the HTML report
        self._ready: dict[str, Record] = {}
        self._positions: dict[str, int] = {}
        self._frozen = False
        width = evaluation.requests_in_flight()
        self._pipeline = AnswerPipeline(evaluation.answer, evaluation.turn, width) if width else None

    def collected(self, items: list[pytest.Item]) -> None:
        """Remember the collection order (the look-ahead outside xdist)."""
        self._positions = {item.nodeid: n for n, item in enumerate(items)}

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
        """The record of `item`, the requests of the tests after it sent meanwhile (up to the pipeline's width)."""
        def refill() -> None:
            for other in self._upcoming(item, pipeline.room, same_length=False, past=pipeline.pending):
                pipeline.submit(other.nodeid, other.sample, other.spec)  # type: ignore[arg-type]

        pipeline.submit(item.nodeid, item.sample, item.spec)  # type: ignore[arg-type]
        refill()
        return pipeline.take(item.nodeid, refill)

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

    def _upcoming(self, item: SampleItem, want: int, *, same_length: bool = True, past: int = 0) -> list[SampleItem]:
        """Up to `want` sample tests this process runs next, not answered or under way (with the
        same generation length: `same_length`), looking `past` as many tests already under way."""
        if want <= 0:
            return []
        queued = queued_indices(self.config, want + past)
        items = item.session.items
        # outside xdist: the rest of the collection, walked only as far as the batch needs (no list of it)
        indices = queued if queued is not None else range(self._positions.get(item.nodeid, len(items)) + 1, len(items))
        upcoming: list[SampleItem] = []
        for index in indices:
            other = items[index]
            if (isinstance(other, SampleItem) and isinstance(other.sample, Sample) and other.nodeid not in self._ready
                    and (not same_length or other.spec.max_new_tokens == item.spec.max_new_tokens)
                    and (self._pipeline is None or other.nodeid not in self._pipeline)):
                upcoming.append(other)
                if len(upcoming) == want:
                    break
        return upcoming
