"""pytest-xdist glue: the controller's view of collection (what a worker has queued is read in
`pytest_compat.queued_indices`).

`XdistHooks` is registered only when xdist is installed, as pytest-randomly does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest


class XdistHooks:
    """The controller learns what the workers collected (the tests of a run with a task job)."""

    def __init__(self, on_collected: Callable[[Sequence[str]], None]) -> None:
        self._on_collected = on_collected
        self._seen = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self._seen:  # every worker collects the same ids
            self._seen = True
            self._on_collected(ids)
