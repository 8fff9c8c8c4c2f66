"""Why a run is not a full run: each reason a `Shortfall` (interrupted by a signal, stopped early, limited to N
samples per task), a run's reasons a list of them. The gates and every output read the list: while it holds a
reason, no gate passes and each output says why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

# interrupted: a signal (SIGINT, SIGTERM, SIGHUP), a KeyboardInterrupt, pytest.exit, an xdist worker's interruption;
# stopped: pytest stopped early on its own (-x, --maxfail, a model that could not be loaded);
# limited: --mllm-limit left samples out
ShortfallKind = Literal["interrupted", "stopped", "limited"]


@dataclass(frozen=True)
class Shortfall:
    """One reason a run is not a full run: its kind, the sentence that says it ("interrupted: SIGTERM after 5 of
    20 tests", "limited to 2 samples per task"), and its figures for a program to read."""

    kind: ShortfallKind
    reason: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "reason": self.reason, **self.details}

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> Shortfall:
        """An entry of a results file's `incomplete` list (`to_json`'s form)."""
        details = {k: v for k, v in entry.items() if k not in ("kind", "reason")}
        return cls(entry.get("kind", "interrupted"), str(entry["reason"]), details)


def interrupted(cause: str, done: int, selected: int) -> Shortfall:
    """A run cut short by `cause` (a signal's name, "KeyboardInterrupt", pytest.exit's reason) after `done` of its
    `selected` tests."""
    return Shortfall("interrupted", f"interrupted: {cause} after {done} of {selected} tests",
                     {"cause": cause, "tests_done": done, "tests_selected": selected})


def stopped(cause: str, done: int, selected: int) -> Shortfall:
    """A run pytest stopped early on its own (`cause`: pytest's reason, "stopping after 1 failures")."""
    return Shortfall("stopped", f"stopped early ({cause}) after {done} of {selected} tests",
                     {"cause": cause, "tests_done": done, "tests_selected": selected})


def limited(per_task: int, kept: int | None = None, total: int | None = None) -> Shortfall:
    """A run of at most `per_task` samples per task (`kept` of `total` sample tests, where known)."""
    counted = f" ({kept} of {total} sample tests)" if kept is not None and total is not None else ""
    figures = {"kept": kept, "total": total} if kept is not None and total is not None else {}
    return Shortfall("limited", f"limited to {per_task} samples per task{counted}", {"per_task": per_task, **figures})


def run_was(shortfalls: Sequence[Shortfall]) -> str:
    """"the run was interrupted: SIGTERM after 5 of 20 tests; and limited to 2 samples per task"."""
    return "the run was " + "; and ".join(s.reason for s in shortfalls)


def not_passed(shortfalls: Sequence[Shortfall]) -> str:
    """Why a gate that its value would pass is not passed: "not passed: the run was interrupted: …"."""
    return f"not passed: {run_was(shortfalls)}"


def headline(shortfalls: Sequence[Shortfall]) -> str:
    """One line for the terminal and the summaries: "incomplete run: interrupted: …; limited to …"."""
    return "incomplete run: " + "; ".join(s.reason for s in shortfalls)
