"""A run cut short says so: SIGINT, SIGTERM and SIGHUP become pytest's own interruption (a KeyboardInterrupt), so the
session still ends, scores what it gathered and writes every output, each marked with why the run is not a full
run (`shortfall.Shortfall`); the previous handlers come back when the run ends.

Only a signal whose handler is the default one is taken over: an ignored SIGHUP (`nohup`) stays ignored, and a
handler of someone else's stays theirs. In an xdist worker the same holds: its interruption ends its session,
which stops the whole run (xdist's own rule), and it tells the controller which signal it got. A signal that
arrives while the outputs are being written waits for them; a second one then ends the process as it would have.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from types import FrameType
from typing import Any

import pytest

from pytest_mllm.pytest_compat import worker_id, worker_pid
from pytest_mllm.shortfall import Shortfall, interrupted, stopped

SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")


class SignalInterrupt(KeyboardInterrupt):
    """A signal the run got ("SIGTERM received"): pytest ends the session as on Ctrl-C."""


class Interruption:
    """One process's view of how its run ended: the signals it took over, the tests that reported, what
    interrupted it."""

    def __init__(self) -> None:
        self.received: str | None = None  # the first signal this process got
        self.worker_interruption: str | None = None  # as a worker told the controller: "SIGTERM in worker gw1"
        self.caught: BaseException | None = None  # what pytest's interruption carried
        self.finishing = False  # the outputs are being written: a signal waits for them
        self._signalled_while_finishing = False
        self._previous: dict[signal.Signals, Any] = {}
        self._done: set[str] = set()
        self._workers: dict[int, int] = {}  # the controller's: id(node) → a running xdist worker's process id

    # -- the handlers --------------------------------------------------------------------------------

    def install(self) -> None:
        """Take over SIGINT, SIGTERM and SIGHUP where their handler is the default one (main thread only)."""
        for name in SIGNALS:
            number = getattr(signal, name, None)  # no SIGHUP on Windows
            if number is None or signal.getsignal(number) not in (signal.SIG_DFL, signal.default_int_handler):
                continue
            try:
                self._previous[number] = signal.signal(number, self._handle)
            except ValueError:  # not the main thread: pytest's own handling stays
                return

    def restore(self) -> None:
        """The handlers as they were before the run (a handler set since by someone else is left)."""
        for number, previous in self._previous.items():
            if signal.getsignal(number) == self._handle:
                signal.signal(number, previous)
        self._previous.clear()

    def _handle(self, number: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True  # pytest shows where the signal landed, not this line
        name = signal.Signals(number).name
        self.received = self.received or name
        if not self.finishing:
            raise SignalInterrupt(f"{name} received")
        if self._signalled_while_finishing:  # asked twice: the previous handler's way, now
            self.restore()
            signal.raise_signal(number)
        self._signalled_while_finishing = True

    # -- what the run learns -----------------------------------------------------------------------

    def reported(self, report: pytest.TestReport) -> None:
        """A test that reported its outcome (its call, or a setup that failed or skipped) counts as done."""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self._done.add(report.nodeid)

    def interrupted_by(self, exception: BaseException) -> None:
        """pytest's interruption (`pytest_keyboard_interrupt`): what it carried."""
        self.caught = exception

    def tell_controller(self, config: pytest.Config, exitstatus: int) -> None:
        """An xdist worker's interruption, for the controller (`worker_done`): "SIGTERM in worker gw1"."""
        if self.received or exitstatus == pytest.ExitCode.INTERRUPTED:
            said = f"{self.received or self._cause() or 'KeyboardInterrupt'} in worker {worker_id(config)}"
            config.workeroutput["mllm_interrupted"] = json.dumps(said)  # type: ignore[attr-defined]

    def worker_started(self, node: Any) -> None:
        """xdist: a worker is ready (its process is stopped at once when the controller is interrupted)."""
        pid = worker_pid(node)
        if pid is not None:
            self._workers[id(node)] = pid

    def stop_workers(self) -> None:
        """The controller was interrupted: its running workers get SIGTERM, which ends their sessions now (each
        takes it over as the controller does) rather than after their queued tests and xdist's timeout."""
        for pid in self._workers.values():
            with contextlib.suppress(OSError):  # gone already
                os.kill(pid, signal.SIGTERM)
        self._workers.clear()

    def worker_done(self, node: Any) -> None:
        """xdist: the signal a worker got, if any (the first worker's to say); its process is no longer ours."""
        self._workers.pop(id(node), None)
        raw = getattr(node, "workeroutput", {}).get("mllm_interrupted")
        if raw and self.worker_interruption is None:
            self.worker_interruption = json.loads(raw)

    def shortfall(self, session: pytest.Session, exitstatus: int) -> Shortfall | None:
        """Why the run ended before its tests did, or None: interrupted (a signal, a KeyboardInterrupt, pytest.exit,
        an xdist worker's interruption), or stopped early by pytest itself (-x, --maxfail, a model not loaded)."""
        done, selected = len(self._done), len(session.items) or session.testscollected
        if exitstatus == pytest.ExitCode.INTERRUPTED or self.received:
            cause = self._cause()
            if cause is not None:
                return interrupted(cause, done, selected)
        why = session.shouldstop or session.shouldfail or (str(self.caught) if self.caught is not None else "")
        return stopped(str(why), done, selected) if why else None

    def _cause(self) -> str | None:
        """The signal or exception that interrupted the run; None for xdist's stop on a failure (-x, --maxfail)."""
        if self.received or self.worker_interruption:
            return self.received or self.worker_interruption
        caught = self.caught
        if caught is None or type(caught) is KeyboardInterrupt:
            return "KeyboardInterrupt"
        if isinstance(caught, pytest.exit.Exception):
            return f"pytest.exit({caught.msg!r})"
        if "keyboard-interrupt" in str(caught):  # xdist: "<WorkerController gw0> received keyboard-interrupt"
            return "KeyboardInterrupt in a worker"
        return None
