"""A served model's answers in flight (`AnswerPipeline`), the cursor into an xdist worker's queue
(`WorkerQueue`), and the images a served model decodes and encodes once (`DecodedImages`,
`EncodedImages`)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any, Sequence

import pytest
from PIL import Image

from pytest_mllm.engine.encoded_images import EncodedImages
from pytest_mllm.engine.images import DecodedImages, ImageError
from pytest_mllm.engine.served_loop import poll, wait_for
from pytest_mllm.engine.pipeline import BACKLOG_FACTOR, AnswerPipeline, Turn
from pytest_mllm.record import Record, new_record
from pytest_mllm.sample import ImageRef, Sample

SPEC: Any = object()  # the pipeline hands the spec to `answer` untouched


def sample(n: int) -> Sample:
    return Sample(id=f"s{n}", benchmark="b", task="t", question=f"q{n}", answer="yes")


class Gated:
    """An `answer` whose calls wait on the served loop, the turn given up as a served model's wait gives it up,
    until the test releases their sample (answers come in any order)."""

    def __init__(self) -> None:
        self.turn = Turn()
        self.gates: dict[str, threading.Event] = {}
        self.started: list[str] = []
        self._lock = threading.Lock()

    def gate(self, sample_id: str) -> threading.Event:
        with self._lock:
            return self.gates.setdefault(sample_id, threading.Event())

    def __call__(self, items: Sequence[tuple[Sample, Any]]) -> list[Record]:
        [(one, _)] = items
        self.started.append(one.id)
        with self.turn.given_up():
            assert wait_for(asyncio.to_thread(self.gate(one.id).wait, 10))
        return [new_record(id=one.id, benchmark="b", task="t")]


def wait_until(condition: Any) -> None:
    """Run the served loop (on this thread, as the tests' thread does) until `condition` holds."""
    for _ in range(1000):
        poll()
        if condition():
            return
        threading.Event().wait(0.01)
    raise AssertionError("timed out")


def test_room_follows_the_answers_in_flight_and_the_backlog() -> None:
    answer = Gated()
    pipeline = AnswerPipeline(answer, answer.turn, width=2)
    try:
        assert pipeline.room == 2
        pipeline.submit(0, sample(0), SPEC)
        pipeline.submit(0, sample(0), SPEC)  # once per key
        pipeline.submit(1, sample(1), SPEC)
        assert (pipeline.in_flight, pipeline.pending, pipeline.room) == (2, 2, 0)
        answer.gate("s1").set()
        assert pipeline.take(1)["id"] == "s1"
        assert (pipeline.in_flight, pipeline.pending, pipeline.room) == (1, 1, 1)
        for n in range(2, 2 * BACKLOG_FACTOR + 1):  # answered ahead of the tests, none taken
            answer.gate(f"s{n}").set()
            pipeline.submit(n, sample(n), SPEC)
        answer.gate("s0").set()
        wait_until(lambda: pipeline.in_flight == 0)
        assert pipeline.pending == 2 * BACKLOG_FACTOR and pipeline.room == 0  # the backlog is full
        assert [pipeline.take(n)["id"] for n in (0, 5)] == ["s0", "s5"]
        assert pipeline.room == 2
    finally:
        for gate in answer.gates.values():
            gate.set()
        pipeline.close()


def test_each_answer_that_comes_starts_the_next_itself() -> None:
    """Width 2 over 7 samples: once the tests' thread started two, the answers start the rest themselves, never
    more than two in flight, each sample once."""
    answer = Gated()
    upcoming = list(range(7))
    most = {"in_flight": 0}

    def ahead(room: int) -> None:
        for _ in range(room):
            if upcoming:
                n = upcoming.pop(0)
                pipeline.submit(n, sample(n), SPEC)
        most["in_flight"] = max(most["in_flight"], pipeline.in_flight)

    pipeline = AnswerPipeline(answer, answer.turn, width=2, ahead=ahead)
    try:
        pipeline.refill()  # what the tests' thread does before it waits
        assert pipeline.in_flight == 2 and upcoming == [2, 3, 4, 5, 6]
        for n in range(7):
            answer.gate(f"s{n}").set()
        wait_until(lambda: not upcoming and pipeline.in_flight == 0)
        assert sorted(answer.started) == [f"s{n}" for n in range(7)] and most["in_flight"] == 2
        assert [pipeline.take(n)["id"] for n in range(7)] == [f"s{n}" for n in range(7)]
    finally:
        for gate in answer.gates.values():
            gate.set()
        pipeline.close()


def test_answers_wait_together_on_the_tests_thread() -> None:
    """Eight answers in flight: all wait at once, all evaluated on the thread that takes them (the served loop
    runs there)."""
    answer = Gated()
    threads = set()

    def evaluated(items: Sequence[tuple[Sample, Any]]) -> list[Record]:
        threads.add(threading.current_thread().name)
        return answer(items)

    pipeline = AnswerPipeline(evaluated, answer.turn, width=8)
    try:
        for n in range(8):
            pipeline.submit(n, sample(n), SPEC)
        wait_until(lambda: len(answer.started) == 8)  # every one waiting at once
        for gate in [answer.gate(f"s{n}") for n in range(8)]:
            gate.set()
        assert [pipeline.take(n)["id"] for n in range(8)] == [f"s{n}" for n in range(8)]
        assert threads == {threading.current_thread().name}
    finally:
        pipeline.close()


def test_a_turn_held_by_another_thread_holds_the_answers_not_the_loop() -> None:
    answer = Gated()
    pipeline = AnswerPipeline(answer, answer.turn, width=2)
    try:
        with answer.turn:  # the tests' thread evaluating (a section's own pass, say)
            pipeline.submit(0, sample(0), SPEC)
            assert wait_for(asyncio.sleep(0.05, result="loop free")) == "loop free"
            assert answer.started == []  # waiting for the turn
        answer.gate("s0").set()
        assert pipeline.take(0)["id"] == "s0"
    finally:
        pipeline.close()


def test_an_answer_waiting_in_its_turn_holds_the_others_not_the_loop() -> None:
    """A wait that keeps the turn (a judge's call in a verdict step): the next answer starts only after it."""
    answer, order = Gated(), []

    def judged(items: Sequence[tuple[Sample, Any]]) -> list[Record]:
        [(one, _)] = items
        order.append(f"start {one.id}")
        wait_for(asyncio.to_thread(answer.gate(one.id).wait, 10))  # the turn kept
        order.append(f"end {one.id}")
        return [new_record(id=one.id, benchmark="b", task="t")]

    pipeline = AnswerPipeline(judged, answer.turn, width=20)
    try:
        pipeline.submit(0, sample(0), SPEC)
        wait_until(lambda: order == ["start s0"])
        threads = threading.active_count()
        for n in range(1, 20):
            pipeline.submit(n, sample(n), SPEC)
            answer.gate(f"s{n}").set()
        assert wait_for(asyncio.sleep(0.05, result="loop free")) == "loop free"
        assert wait_for(asyncio.to_thread(lambda: "executor free")) == "executor free"
        assert order == ["start s0"] and threading.active_count() <= threads + 1  # nineteen wait, on no thread
        answer.gate("s0").set()
        assert [pipeline.take(n)["id"] for n in range(20)] == [f"s{n}" for n in range(20)]
        assert order == [f"{step} s{n}" for n in range(20) for step in ("start", "end")]  # in the order they came
    finally:
        pipeline.close()


def test_an_answer_that_raises_is_raised_by_take_and_leaves_no_slot_taken() -> None:
    def fails(items: Sequence[tuple[Sample, Any]]) -> list[Record]:
        raise RuntimeError("broken")

    pipeline = AnswerPipeline(fails, Turn(), width=1)
    pipeline.submit("k", sample(0), SPEC)
    with pytest.raises(RuntimeError, match="broken"):
        pipeline.take("k")
    assert (pipeline.in_flight, pipeline.pending, pipeline.room) == (0, 0, 1)
    pipeline.close()


def test_a_closed_pipeline_starts_nothing_more() -> None:
    answer = Gated()
    pipeline = AnswerPipeline(answer, answer.turn, width=1, ahead=lambda room: pipeline.submit("next", sample(9), SPEC))
    pipeline.submit("first", sample(0), SPEC)
    wait_until(lambda: answer.started == ["s0"])  # in flight: it ends on its own
    pipeline.close()
    answer.gate("s0").set()
    wait_until(lambda: pipeline.in_flight == 0)
    assert "next" not in pipeline and answer.started == ["s0"]


# -- the cursor into an xdist worker's queue ---------------------------------------------------------


class Worker:
    """xdist's worker plugin as `WorkerQueue` reads it: its real `TestQueue`, and `nextitem_index`."""

    def __init__(self, indices: Sequence[int]) -> None:
        import execnet
        from xdist.remote import TestQueue

        self.torun = TestQueue(execnet.gateway_base.get_execmodel("thread"))
        for index in indices:
            self.torun.put(index)
        self.nextitem_index: Any = None

    def start_next(self) -> None:
        """What xdist's loop does: the next test becomes the running one, the one after it is taken."""
        self.nextitem_index = self.torun.get()


def test_the_worker_queue_cursor_returns_each_index_once_as_tests_are_taken() -> None:
    from pytest_mllm.pytest_compat import WorkerQueue

    worker = Worker(range(10))
    queue = WorkerQueue(worker)
    assert queue.following is None and queue.head(3) == [0, 1, 2]
    worker.start_next()
    worker.start_next()  # test 0 runs, 1 is next
    assert queue.following == 1
    assert queue.unseen(3) == [2, 3, 4]
    assert queue.unseen(2) == [5, 6]
    for _ in range(4):  # the worker takes 2 to 5
        worker.start_next()
    assert queue.unseen(10) == [7, 8, 9]  # not 6 again, and nothing skipped
    for index in (10, 11):  # the controller hands over more
        worker.torun.put(index)
    assert queue.unseen(10) == [10, 11] and queue.unseen(10) == []
    from xdist.remote import Marker

    worker.torun.put(Marker.SHUTDOWN)
    assert queue.unseen(10) == []  # the end-of-queue marker is no test


def test_the_worker_queue_cursor_still_returns_every_index_after_a_steal() -> None:
    from pytest_mllm.pytest_compat import WorkerQueue

    worker = Worker(range(8))
    queue = WorkerQueue(worker)
    assert queue.unseen(3) == [0, 1, 2]
    worker.torun.replace([0, 2, 3, 5, 6, 7])  # xdist took 1 and 4 for another worker
    seen = set(queue.unseen(10))
    while len(worker.torun._items) > 0:
        worker.start_next()
        seen |= set(queue.unseen(10))
    assert seen == {3, 5, 6, 7}  # none lost (returned late at worst), none of the stolen ones


# -- images decoded and encoded once ------------------------------------------------------------------


def test_decoded_images_are_shared_and_read_again_when_the_file_changes(tmp_path: Path) -> None:
    Image.new("RGB", (8, 8), (255, 0, 0)).save(tmp_path / "a.png")
    ref = ImageRef("path", "a.png", root=tmp_path)
    decoded = DecodedImages()
    first = decoded.load(ref)
    assert decoded.load(ImageRef("path", "a.png", root=tmp_path)) is first
    Image.new("RGB", (8, 8), (0, 0, 255)).save(tmp_path / "a.png")
    os.utime(tmp_path / "a.png", ns=(1, 1))  # another modification time, whatever the clock's resolution
    again = decoded.load(ref)
    assert again is not first and again.getpixel((0, 0)) == (0, 0, 255)
    with pytest.raises(ImageError, match="not found"):
        decoded.load(ImageRef("path", "gone.png", root=tmp_path))


def test_decoded_images_keep_at_most_their_budget(tmp_path: Path) -> None:
    refs = []
    for n in range(3):
        Image.new("RGB", (10, 10), (n, 0, 0)).save(tmp_path / f"{n}.png")
        refs.append(ImageRef("path", f"{n}.png", root=tmp_path))
    decoded = DecodedImages(budget_pixels=250)  # two of them
    images = [decoded.load(ref) for ref in refs]
    assert decoded.load(refs[2]) is images[2] and decoded.load(refs[1]) is images[1]
    assert decoded.load(refs[0]) is not images[0]  # the least recently used went first


def test_encoded_images_encode_each_picture_once() -> None:
    encoded = EncodedImages()
    red, blue = Image.new("RGB", (6, 6), (255, 0, 0)), Image.new("RGB", (6, 6), (0, 0, 255))
    part = encoded.content(red)
    assert part["image_url"]["url"].startswith("data:image/png;base64,")
    assert encoded.content(Image.new("RGB", (6, 6), (255, 0, 0))) is part  # the same pixels, another object
    assert encoded.content(blue) is not part and encoded.encoded == 2
    assert encoded.content(red.convert("L")) != part  # another mode is another picture


def test_encoded_images_keep_at_most_their_budget() -> None:
    pictures = [Image.new("RGB", (6, 6), (n, 0, 0)) for n in range(3)]
    size = len(EncodedImages().content(pictures[0])["image_url"]["url"])
    encoded = EncodedImages(budget_bytes=2 * size + size // 2)
    parts = [encoded.content(p) for p in pictures]
    assert encoded.content(pictures[2]) is parts[2] and encoded.encoded == 3
    assert encoded.content(pictures[0]) is not parts[0] and encoded.encoded == 4


def test_an_interrupt_during_another_answer_reaches_the_caller_and_leaves_the_turn_usable() -> None:
    """Ctrl-C while some other answer runs on the loop ends the caller's wait, not just that answer; a caller
    interrupted while it waits for the turn leaves the queue, and the turn is free again afterwards."""
    import os
    import signal
    import time

    from pytest_mllm.engine.served_loop import drive_until, spawn

    def busy() -> str:
        start = time.monotonic()
        while time.monotonic() - start < 1.0:
            pass
        return "busy"

    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    spawn(busy)
    with pytest.raises(KeyboardInterrupt):
        drive_until(spawn(lambda: wait_for(asyncio.sleep(2))))

    turn = Turn()

    def hold() -> str:
        with turn:
            wait_for(asyncio.sleep(0.6))
        return "held"

    held = spawn(hold)
    wait_until(held.running)
    threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        with turn:
            pass
    assert drive_until(held) == "held"
    with turn:  # nobody holds it: entered at once
        pass
