"""The decaying edit budget: "edit at most {counter} words" in round r of N.

TP-Eval limits how many words the optimizer may change in a round, and lets the limit
shrink as the optimization goes on: early rounds explore, late rounds polish. The paper
does not publish the exact schedule (nor could we find it in public material), so this
module uses a documented linear decay of whole words:

    budget(r) = floor + ((start − floor) · (N − r)) // (N − 1)      for N > 1, r = 1..N

which is ``start`` in round 1, ``floor`` in round N, and never increases. ``start`` is the
number of words of the original prompt, at least ``MIN_START`` (so a three-word prompt can
still grow a clause); ``floor`` is ``FLOOR`` words.
"""

from __future__ import annotations

MIN_START = 6
FLOOR = 2


def edit_start(original: str) -> int:
    """The round-1 budget for an original prompt: its word count, at least MIN_START."""
    return max(len(original.split()), MIN_START)


def edit_budget(round_index: int, rounds: int, start: int, floor: int) -> int:
    """How many words round `round_index` (1-based) of `rounds` may edit.

    Linear from `start` (round 1) down to `floor` (the last round); rounds past the last
    stay at `floor`. A `start` below `floor` is raised to `floor`.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if round_index < 1:
        raise ValueError(f"round_index starts at 1, got {round_index}")
    if floor < 0:
        raise ValueError(f"floor must not be negative, got {floor}")
    start = max(start, floor)
    if rounds == 1:
        return start if round_index == 1 else floor
    left = max(rounds - round_index, 0)
    return floor + (start - floor) * left // (rounds - 1)
