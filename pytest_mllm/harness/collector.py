"""The run and Python's cyclic garbage collector: the objects that live to the end of the session
(torch's and transformers' modules, about a million of them, the model, the collected tests) are
moved out of its sight, once the model is loaded and again at interpreter exit."""

from __future__ import annotations

import atexit
import functools
import gc


def freeze_survivors() -> None:
    """After the first batch (the model is loaded). Unfrozen, every full collection walks them all:
    0.15-0.2 s, which a run pays every few hundred tests. Frozen objects are still freed as usual when
    their last reference goes (a model is: it holds no cycles)."""
    gc.freeze()


@functools.cache  # once per process
def lighter_exit() -> None:
    """At interpreter exit, one garbage collection (what is garbage then is still finalized), then the
    survivors frozen: the interpreter's own collections while it shuts down would walk them again,
    0.6-0.8 s after every run with torch imported."""
    atexit.register(_collect_and_freeze)


def _collect_and_freeze() -> None:
    gc.collect()
    gc.freeze()
