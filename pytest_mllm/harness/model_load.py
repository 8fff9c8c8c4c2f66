"""The model's load as a run shows it: `loading MODEL …` and its load time on the terminal, the load
time kept out of the sample that triggered it, and a failed load stopping the run at once."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from pytest_mllm.engine.evaluator import is_load_failure
from pytest_mllm.pytest_compat import mid_line, worker_id
from pytest_mllm.record import Record

STOPPED = "the model could not be loaded"


class ModelLoadReport:
    """Told by the evaluator when the model starts and ends loading (`__call__`), per process."""

    def __init__(self, config: pytest.Config, announce: bool = True) -> None:
        self.config = config
        self.announce = announce  # False for models that load instantly (baselines, replay): no lines
        self.worker = worker_id(config)
        self.pending: dict[str, Any] | None = None  # a load not yet taken out of a test's duration
        self.loads: list[dict[str, Any]] = []  # the controller's: where and how long each load took

    def __call__(self, name: str, seconds: float | None, where: str | None) -> None:
        if seconds is None:
            self._say(f"loading {name} …")
            return
        self.pending = {"model": name, "seconds": round(seconds, 3), "placement": where}
        if self.worker is None:
            self.loaded(self.pending, None)

    def loaded(self, load: dict[str, Any], worker: str | None) -> None:
        """A load finished here or in an xdist worker: noted for the results and said on the terminal."""
        self.loads.append({**load, "worker": worker})
        where = f" ({load['placement']})" if load.get("placement") else ""
        self._say(f"{f'[{worker}] ' if worker else ''}loaded {load['model']} in {load['seconds']:.1f} s{where}")

    def take_load(self) -> dict[str, Any] | None:
        """The load the test that just ran did, if it did (None for every later test)."""
        load, self.pending = self.pending, None
        return load

    def stop_on_failure(self, session: pytest.Session, records: list[Record]) -> None:
        """A sample the model could not be loaded for stops the run (an xdist worker tells the controller)."""
        if any(is_load_failure(r) for r in records):
            session.shouldstop = STOPPED

    def _say(self, text: str) -> None:
        """A line on the terminal now, even from inside a test (whose output pytest captures)."""
        plugins = self.config.pluginmanager
        reporter, capture = plugins.getplugin("terminalreporter"), plugins.getplugin("capturemanager")
        if reporter is None or self.worker is not None or not self.announce:
            return
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            if mid_line(reporter):  # mid-way through xdist's progress letters
                reporter.write("\n")
            reporter.write_line(f"pytest-mllm: {text}", bold=True)
