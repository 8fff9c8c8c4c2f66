"""VRPTEST variants: which visual referring prompt is drawn onto a source sample.

A `Variant` fixes one option per metamorphic relation (MR). "none" in an option means the
relation does not apply at that intervention level:

| level   | drawn             | prompt                      | colour           | shape       | font        | position    |
|---------|-------------------|-----------------------------|------------------|-------------|-------------|-------------|
| none    | nothing           | question, location in words | default          | none        | none        | none        |
| partial | pointer           | question naming the pointer | red/blue/default | box/ellipse | none        | none        |
| full    | pointer, question | a generic instruction       | red/blue/default | box/ellipse | arial/times | upper/lower |

The colour applies to the pointer and to the rendered text alike.

**Default grid** (`default_grid`, the paper's 4 partial + 8 full per source, plus 1 none):

* partial: colour {red, blue} × shape {box, ellipse} = 4.
* full: colour {red, blue} × shape {box, ellipse} × font {arial, times} = 8, with the
  position set by parity: "upper" when an even number of (blue, ellipse, times) is chosen,
  else "lower". This is the 2^(4-1) half fraction with defining relation I = C·S·F·P:
  every option of every MR appears in 4 of the 8, and every pair of MRs is fully crossed
  (each of its 4 combinations appears twice), so each radar axis is covered by a balanced
  set of variants and no two MRs are confounded.

The "default" colour is left out of the default grid (the paper's axes name only red and
blue); `full_grid` adds it: 1 none + 6 partial + 24 full = 31 variants.

**Radar axes** (the paper's figure): Base (intervention none), C_Red, C_Blue, Cir (ellipse),
Rect (box), Arial, TNR (times), Pos_Upper, Pos_Lower. A variant contributes to the axis of
each option it sets; the default colour contributes to no colour axis.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

Intervention = Literal["none", "partial", "full"]
Color = Literal["red", "blue", "default"]
Font = Literal["arial", "times", "none"]
Shape = Literal["box", "ellipse", "none"]
Position = Literal["upper", "lower", "none"]

INTERVENTIONS: tuple[Intervention, ...] = ("none", "partial", "full")
COLORS: tuple[Color, ...] = ("red", "blue", "default")
FONTS: tuple[Font, ...] = ("arial", "times", "none")
SHAPES: tuple[Shape, ...] = ("box", "ellipse", "none")
POSITIONS: tuple[Position, ...] = ("upper", "lower", "none")
RADAR_AXES = ("Base", "C_Red", "C_Blue", "Pos_Upper", "Pos_Lower", "Arial", "TNR", "Cir", "Rect")

_AXIS = {
    "red": "C_Red", "blue": "C_Blue", "upper": "Pos_Upper", "lower": "Pos_Lower",
    "arial": "Arial", "times": "TNR", "ellipse": "Cir", "box": "Rect",
}
_MARKED: tuple[Color, ...] = ("red", "blue")  # the colours of the default grid
_POINTERS: tuple[Shape, ...] = ("box", "ellipse")
_TEXT_FONTS: tuple[Font, ...] = ("arial", "times")
_TEXT_POSITIONS: tuple[Position, ...] = ("upper", "lower")


@dataclass(frozen=True)
class Variant:
    """One VRP variant; construction checks the options and the MR constraints."""

    intervention: Intervention
    color: Color = "default"
    font: Font = "none"
    shape: Shape = "none"
    position: Position = "none"

    def __post_init__(self) -> None:
        for name, value, allowed in (
            ("intervention", self.intervention, INTERVENTIONS),
            ("color", self.color, COLORS),
            ("font", self.font, FONTS),
            ("shape", self.shape, SHAPES),
            ("position", self.position, POSITIONS),
        ):
            if value not in allowed:
                raise ValueError(f"unknown VRP {name} {value!r}; choose one of {', '.join(allowed)}")
        problems = []
        if self.intervention == "none":
            if (self.color, self.font, self.shape, self.position) != ("default", "none", "none", "none"):
                problems.append("intervention 'none' draws nothing: leave color, font, shape and position unset")
        else:
            if self.shape == "none":
                problems.append(f"intervention {self.intervention!r} needs a pointer shape (box or ellipse)")
            text_set = (self.font != "none", self.position != "none")
            if self.intervention == "partial" and any(text_set):
                problems.append("intervention 'partial' renders no text: font and position must be 'none'")
            if self.intervention == "full" and not all(text_set):
                problems.append("intervention 'full' renders the question: give a font and a position")
        if problems:
            raise ValueError(f"invalid VRP variant {self!r}: " + "; ".join(problems))

    @property
    def id(self) -> str:
        """A stable short id: the intervention, then the options that apply, e.g. "partial-red-box"."""
        if self.intervention == "none":
            return "none"
        parts: list[str] = [self.intervention, self.color]
        if self.intervention == "full":
            parts.append(self.font)
        parts.append(self.shape)
        if self.intervention == "full":
            parts.append(self.position)
        return "-".join(parts)

    @classmethod
    def from_id(cls, text: str) -> Variant:
        """The variant whose `id` is `text`; ValueError for anything else."""
        parts = text.split("-")
        try:
            if parts == ["none"]:
                return cls("none")
            if parts[0] == "partial" and len(parts) == 3:
                return cls("partial", color=parts[1], shape=parts[2])  # type: ignore[arg-type]
            if parts[0] == "full" and len(parts) == 5:
                return cls("full", color=parts[1], font=parts[2], shape=parts[3],  # type: ignore[arg-type]
                           position=parts[4])  # type: ignore[arg-type]
        except ValueError as exc:
            raise ValueError(f"not a VRP variant id: {text!r} ({exc})") from None
        raise ValueError(
            f"not a VRP variant id: {text!r}; expected 'none', 'partial-<color>-<shape>' "
            "or 'full-<color>-<font>-<shape>-<position>'"
        )

    @property
    def radar_axes(self) -> tuple[str, ...]:
        """The paper's radar axes this variant contributes to, in `RADAR_AXES` order."""
        if self.intervention == "none":
            return ("Base",)
        axes = {_AXIS[o] for o in (self.color, self.font, self.shape, self.position) if o in _AXIS}
        return tuple(a for a in RADAR_AXES if a in axes)


def default_grid() -> list[Variant]:
    """1 none + 4 partial + 8 full variants per source (see the module docstring)."""
    grid = [Variant("none")]
    grid += [Variant("partial", color=c, shape=s) for c in _MARKED for s in _POINTERS]
    for color, shape, font in itertools.product(_MARKED, _POINTERS, _TEXT_FONTS):
        odd = (color == "blue") + (shape == "ellipse") + (font == "times")
        grid.append(Variant("full", color=color, font=font, shape=shape, position="lower" if odd % 2 else "upper"))
    return grid


def full_grid() -> list[Variant]:
    """Every valid variant: 1 none + 6 partial + 24 full."""
    grid = [Variant("none")]
    grid += [Variant("partial", color=c, shape=s) for c in COLORS for s in _POINTERS]
    grid += [
        Variant("full", color=c, font=f, shape=s, position=p)
        for c, f, s, p in itertools.product(COLORS, _TEXT_FONTS, _POINTERS, _TEXT_POSITIONS)
    ]
    return grid


def variants(interventions: tuple[Intervention, ...] = INTERVENTIONS) -> SearchStrategy[Variant]:
    """A hypothesis strategy drawing valid variants of the given intervention levels."""
    from hypothesis import strategies as st  # a test dependency: imported only when asked for

    colors, pointers = st.sampled_from(COLORS), st.sampled_from(_POINTERS)
    levels = {
        "none": st.just(Variant("none")),
        "partial": st.builds(Variant, st.just("partial"), color=colors, shape=pointers),
        "full": st.builds(
            Variant, st.just("full"), color=colors, font=st.sampled_from(_TEXT_FONTS),
            shape=pointers, position=st.sampled_from(_TEXT_POSITIONS),
        ),
    }
    return st.one_of(*(levels[i] for i in interventions))
