"""Difficulty from a panel of judges: how many answer a sample correctly, and what class that makes.

LIME-M's two published cut-offs, kept as presets:

* ``code`` — the public curation pipeline, run with 9 judge models: easy 5–9 correct,
  middle 3–4, hard 1–2; a sample no judge answers (0) goes to review.
* ``paper`` — the paper's text, 10 judges: easy ≥ 6, middle 3–5, hard < 2. That leaves 2
  correct answers in no class; we count 2 as hard (the public README's rule "N ≤ 2 is hard"
  and the code preset agree), so the paper preset reads easy ≥ 6, middle 3–5, hard 1–2.

The public pipeline's README states yet another split for its 9 judges (easy ≥ 6, middle 3–5,
hard ≤ 2); pass ``--easy-min 6 --hard-max 2`` for that reading. Whatever the preset, a sample
no judge answers is not "hard": the pipeline sends those to a double check instead.

A preset is scaled to the panel's size as fractions of the panel: ``easy_min = ⌈e·n/N⌉`` and
``hard_max = ⌊h·n/N⌋`` for a preset defined as easy ≥ e, hard ≤ h with N judges (exact
rational arithmetic, so the defining size gives the preset back). Hard keeps at least one count
and easy starts above hard. Scaled to 10 judges the code preset gives the paper's cut-offs.

A judge whose answer errored is unknown, never wrong: a sample's class is known only when every
way the unknown judges could have answered gives the same class; otherwise it is "unknown".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

EASY, MIDDLE, HARD, UNANSWERED, UNKNOWN = "easy", "middle", "hard", "unanswered", "unknown"
CLASSES = (EASY, MIDDLE, HARD, UNANSWERED, UNKNOWN)


@dataclass(frozen=True)
class Preset:
    """Published cut-offs: easy from `easy_min` correct, hard up to `hard_max`, with `judges` judges."""

    name: str
    judges: int
    easy_min: int
    hard_max: int
    source: str


PRESETS: dict[str, Preset] = {
    "code": Preset("code", 9, 5, 2, "LIME-M's public curation code, 9 judges: easy 5-9, middle 3-4, hard 1-2"),
    "paper": Preset("paper", 10, 6, 2, "LIME-M paper, 10 judges: easy >= 6, middle 3-5, hard < 2 "
                                      "(2, in no class there, is counted as hard)"),
}
DEFAULT_PRESET = "code"


class ThresholdError(ValueError):
    """Cut-offs that cannot classify: the message says which bound and why."""


@dataclass(frozen=True)
class Thresholds:
    """Cut-offs in counts of correct judges for a panel of `panel` judges."""

    panel: int
    easy_min: int  # this many correct or more: easy
    hard_max: int  # 1 … hard_max correct: hard; 0: unanswered; in between: middle
    origin: str

    def class_of(self, correct: int) -> str:
        """The class of a sample that exactly `correct` judges answer correctly."""
        if correct <= 0:
            return UNANSWERED
        if correct <= self.hard_max:
            return HARD
        if correct < self.easy_min:
            return MIDDLE
        return EASY

    def classify(self, correct: int, unknown: int = 0) -> str:
        """The class, or UNKNOWN when the `unknown` judges' answers could change it."""
        low, high = self.class_of(correct), self.class_of(correct + unknown)
        return low if low == high else UNKNOWN

    def ranges(self) -> dict[str, tuple[int, int] | None]:
        """Each class's inclusive range of correct counts (None where a class is empty)."""
        def span(low: int, high: int) -> tuple[int, int] | None:
            return (low, high) if low <= high else None

        return {EASY: span(self.easy_min, self.panel), MIDDLE: span(self.hard_max + 1, self.easy_min - 1),
                HARD: span(1, self.hard_max), UNANSWERED: (0, 0)}

    def describe(self) -> str:
        """E.g. "easy 3-5 · middle 2 · hard 1 · unanswered 0 (of 5 judges)"."""
        parts = []
        for name, span in self.ranges().items():
            if span is None:
                parts.append(f"{name} none")
            else:
                parts.append(f"{name} {span[0]}" if span[0] == span[1] else f"{name} {span[0]}-{span[1]}")
        return " · ".join(parts) + f" (correct judges of {self.panel})"


def scale(preset: Preset, panel: int) -> tuple[int, int]:
    """(easy_min, hard_max) of `preset` for a panel of `panel` judges, as fractions of the panel."""
    easy_min = math.ceil(Fraction(preset.easy_min * panel, preset.judges))
    hard_max = max(1, math.floor(Fraction(preset.hard_max * panel, preset.judges)))
    return max(easy_min, hard_max + 1), hard_max


def thresholds(panel: int, preset: str = DEFAULT_PRESET, *, easy_min: int | None = None,
               hard_max: int | None = None) -> Thresholds:
    """Cut-offs for a panel: the preset scaled to it, with either bound set directly if given."""
    if panel < 2:
        raise ThresholdError(f"difficulty needs a panel of at least 2 judges, got {panel}")
    if preset not in PRESETS:
        raise ThresholdError(f"unknown threshold preset {preset!r}; use {' or '.join(PRESETS)}")
    chosen = PRESETS[preset]
    scaled_easy, scaled_hard = scale(chosen, panel)
    origin = (f"{preset} preset ({chosen.source})" if panel == chosen.judges
              else f"{preset} preset ({chosen.source}) scaled to {panel} judges")
    if easy_min is not None or hard_max is not None:
        given = ", ".join(f"{flag} {value}" for flag, value in (("--easy-min", easy_min), ("--hard-max", hard_max))
                          if value is not None)
        origin = f"{given}; otherwise the {origin}"
    easy = scaled_easy if easy_min is None else easy_min
    hard = scaled_hard if hard_max is None else hard_max
    if not 1 <= easy <= panel:
        raise ThresholdError(f"--easy-min {easy} must be between 1 and the panel's {panel} judges")
    if not 0 <= hard < easy:
        raise ThresholdError(f"--hard-max {hard} must be at least 0 and below the easy bound {easy} "
                             "(hard counts come before middle and easy ones)")
    return Thresholds(panel, easy, hard, origin)
