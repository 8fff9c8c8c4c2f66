"""Batching across tests: a sample test is answered together with the tests this process runs next.

Tests stay one per sample; the first of a batch generates for all of them and the others find
their records ready. Outside xdist "next" is the rest of the collection; under xdist it is
what the controller has handed this worker.
"""

from __future__ import annotations

import pytest

from pytest_mllm.engine.images import thumbnail_url
from pytest_mllm.evaluation import Evaluation
from pytest_mllm.harness.collector import freeze_survivors
from pytest_mllm.harness.items import SampleItem
from pytest_mllm.harness.xdist import queued_indices
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
        batch = [item, *self._upcoming(item)]
        records = self.evaluation.answer([(i.sample, i.spec) for i in batch])  # type: ignore[misc]
        if not self._frozen:
            self._frozen = True
            freeze_survivors()
        for member, record in zip(batch, records):
            record["order"] = member.order
            if self.thumbnails and record["status"] == "incorrect":
                record["thumbnail"] = thumbnail_url(member.sample, self.evaluation.settings.max_pixels)  # type: ignore[arg-type]
            self._ready[member.nodeid] = record
        return self._ready.pop(item.nodeid)

    def _upcoming(self, item: SampleItem) -> list[SampleItem]:
        """Up to batch size − 1 sample tests this process runs next, with the same generation length."""
        want = self.evaluation.settings.batch_size - 1
        if want == 0:
            return []
        indices = queued_indices(self.config, want)
        items = item.session.items
        if indices is None:
            start = self._positions.get(item.nodeid, len(items))
            indices = list(range(start + 1, len(items)))
        upcoming: list[SampleItem] = []
        for index in indices:
            other = items[index]
            if (isinstance(other, SampleItem) and isinstance(other.sample, Sample)
                    and other.spec.max_new_tokens == item.spec.max_new_tokens and other.nodeid not in self._ready):
                upcoming.append(other)
                if len(upcoming) == want:
                    break
        return upcoming
