"""pytest-xdist glue: what a worker has queued (for batching), and the controller's view of collection.

`XdistHooks` is registered only when xdist is installed, as pytest-randomly does.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import pytest


def queued_indices(config: pytest.Config, limit: int) -> list[int] | None:
    """Indices of the tests an xdist worker has been handed and not yet started (None outside xdist).

    xdist keeps them in its worker plugin's `torun` queue and `nextitem_index`: not a public API,
    so where it is missing batching looks ahead in the collection instead.
    """
    if not hasattr(config, "workerinput"):
        return None
    for plugin in config.pluginmanager.get_plugins():
        queue = getattr(plugin, "torun", None)
        if queue is not None and hasattr(plugin, "nextitem_index"):
            with queue.lock() as queued:
                pending = [i for i in itertools.islice(queued, limit) if isinstance(i, int)]
            following = plugin.nextitem_index
            return ([following] if isinstance(following, int) else []) + pending
    return None


class XdistHooks:
    """The controller learns what the workers collected (the tests of a TP-Eval optimization run)."""

    def __init__(self, on_collected: Callable[[Sequence[str]], None]) -> None:
        self._on_collected = on_collected
        self._seen = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if not self._seen:  # every worker collects the same ids
            self._seen = True
            self._on_collected(ids)
