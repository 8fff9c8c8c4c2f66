"""The bundled offline benchmark "shapes": procedurally drawn images, no download needed.

Every image is a pure function of its key, "shapes/v1/<task>/<index>/seed<seed>": the
layout is re-derived from a private RNG seeded with (seed, task, index), so `draw(key)`
gives identical pixels in any process. The yes/no tasks (existence, count, color,
position) come in MME-style pairs, one "Yes" then one "No" question per image; "choice"
is a four-option multiple-choice task.

Shape boxes are half-open pixel boxes (x0, y0, x1, y1), as `Image.crop` takes them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, NamedTuple

from PIL import Image, ImageDraw

from pytest_mllm.engine.spec import BenchmarkSpec, loader
from pytest_mllm.sample import ImageRef, Sample

TASKS = ("existence", "count", "color", "position", "choice")
KINDS = ("circle", "square", "triangle", "cross")
COLORS: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "green": (30, 160, 60),
    "blue": (30, 80, 220),
    "yellow": (245, 215, 25),
    "purple": (135, 55, 185),
    "orange": (245, 135, 25),
}
SIZE = 224
BACKGROUND = (255, 255, 255)
OUTLINE = (30, 30, 30)

Box = tuple[int, int, int, int]

_KEY_PREFIX = ("shapes", "v1")
_OUTLINE_WIDTH = 3
_MARGIN = 8  # least gap between a shape and its grid cell's (or the canvas') edge
_HALF = SIZE // 2
_LETTERS = "ABCD"
_YES_NO = " Please answer yes or no."
_SHAPE_QUESTION = "Which shape is shown in the image?"
_COLOR_QUESTION = "What colour is the shape?"
_PLURALS = {"circle": "circles", "square": "squares", "triangle": "triangles", "cross": "crosses"}
_NUMBERS = ("zero", "one", "two", "three", "four")


@dataclass(frozen=True)
class Shape:
    """One filled shape: its kind, colour name and half-open pixel box."""

    kind: str
    color: str
    box: Box

    @property
    def center(self) -> tuple[int, int]:
        """The box's centre pixel (always inside the filled shape)."""
        x0, y0, x1, y1 = self.box
        return (x0 + x1) // 2, (y0 + y1) // 2

    def as_dict(self) -> dict[str, Any]:
        """A JSON-friendly description for sample metadata."""
        return {"shape": self.kind, "color": self.color, "box": list(self.box)}


class _Question(NamedTuple):
    text: str
    target: Box | None
    asked: dict[str, Any]


def image_key(task: str, index: int, seed: int) -> str:
    """The key that names (and suffices to redraw) one image."""
    return "/".join((*_KEY_PREFIX, task, str(index), f"seed{seed}"))


def parse_key(key: str) -> tuple[str, int, int]:
    """Split a key into (task, index, seed); ValueError when it is not a shapes key."""
    parts = key.split("/")
    if (
        len(parts) != 5
        or tuple(parts[:2]) != _KEY_PREFIX
        or parts[2] not in TASKS
        or not parts[4].startswith("seed")
    ):
        raise ValueError(f"not a shapes image key: {key!r}")
    try:
        return parts[2], int(parts[3]), int(parts[4][len("seed") :])
    except ValueError:
        raise ValueError(f"not a shapes image key: {key!r}") from None


def scene(key: str) -> tuple[Shape, ...]:
    """The shapes an image key describes, re-derived from the key's private RNG."""
    task, index, seed = parse_key(key)
    rng = random.Random(f"{seed}:{task}:{index}")
    colors = tuple(COLORS)
    if task == "existence":
        kinds = rng.sample(KINDS, rng.randint(1, 3))
        return _grid(rng, [(kind, rng.choice(colors)) for kind in kinds])
    if task == "count":
        kind, color = rng.choice(KINDS), rng.choice(colors)
        return _grid(rng, [(kind, color)] * rng.randint(1, 4))
    if task == "position":
        return _side_by_side(rng, [(kind, rng.choice(colors)) for kind in rng.sample(KINDS, 2)])
    return (_single(rng, rng.choice(KINDS), rng.choice(colors)),)


def _grid(rng: random.Random, specs: list[tuple[str, str]]) -> tuple[Shape, ...]:
    """Shapes in distinct cells of a 2×2 grid, each sized and placed at random in its cell."""
    shapes = []
    for cell, (kind, color) in zip(rng.sample(range(4), len(specs)), specs):
        size = rng.randint(56, 84)
        x0 = (cell % 2) * _HALF + rng.randint(_MARGIN, _HALF - _MARGIN - size)
        y0 = (cell // 2) * _HALF + rng.randint(_MARGIN, _HALF - _MARGIN - size)
        shapes.append(Shape(kind, color, (x0, y0, x0 + size, y0 + size)))
    return tuple(shapes)


def _side_by_side(rng: random.Random, specs: list[tuple[str, str]]) -> tuple[Shape, ...]:
    """Two shapes in a row or a column: the first left of (or above) the second.

    Along the other axis both centres stay within 12 px of the canvas centre, so the
    shapes always overlap there and exactly one of left/right/above/below holds.
    """
    horizontal = rng.random() < 0.5
    shapes = []
    for half, (kind, color) in enumerate(specs):
        size = rng.randint(56, 88)
        along = half * _HALF + rng.randint(_MARGIN, _HALF - _MARGIN - size)
        across = rng.randint(_HALF - 12, _HALF + 12) - size // 2
        x0, y0 = (along, across) if horizontal else (across, along)
        shapes.append(Shape(kind, color, (x0, y0, x0 + size, y0 + size)))
    return tuple(shapes)


def _single(rng: random.Random, kind: str, color: str) -> Shape:
    """One large shape placed at random on the canvas."""
    size = rng.randint(90, 140)
    x0 = rng.randint(2 * _MARGIN, SIZE - 2 * _MARGIN - size)
    y0 = rng.randint(2 * _MARGIN, SIZE - 2 * _MARGIN - size)
    return Shape(kind, color, (x0, y0, x0 + size, y0 + size))


def draw(key: str) -> Image.Image:
    """Draw the 224×224 RGB image a key names; the same key always gives the same pixels."""
    image = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    canvas = ImageDraw.Draw(image)  # ImageDraw does not antialias
    for shape in scene(key):
        draw_shape(canvas, shape)
    return image


def draw_shape(canvas: ImageDraw.ImageDraw, shape: Shape) -> None:
    """Fill one shape with its colour and a dark outline, all inside its box."""
    x0, y0, x1, y1 = shape.box
    right, bottom = x1 - 1, y1 - 1  # ImageDraw boxes include their last pixel
    style: dict[str, Any] = {
        "fill": COLORS[shape.color], "outline": OUTLINE, "width": _OUTLINE_WIDTH
    }
    if shape.kind == "circle":
        canvas.ellipse((x0, y0, right, bottom), **style)
    elif shape.kind == "square":
        canvas.rectangle((x0, y0, right, bottom), **style)
    elif shape.kind == "triangle":
        canvas.polygon([((x0 + right) // 2, y0), (right, bottom), (x0, bottom)], **style)
    else:
        t = (x1 - x0) // 3  # arm offset: the bars are the middle third
        canvas.polygon(
            [
                (x0 + t, y0), (right - t, y0), (right - t, y0 + t), (right, y0 + t),
                (right, bottom - t), (right - t, bottom - t), (right - t, bottom), (x0 + t, bottom),
                (x0 + t, bottom - t), (x0, bottom - t), (x0, y0 + t), (x0 + t, y0 + t),
            ],
            **style,
        )


def build_samples(
    benchmark: str = "shapes", images_per_task: int = 40, seed: int = 0
) -> list[Sample]:
    """All samples, task by task in `TASKS` order; fully determined by `seed`."""
    samples: list[Sample] = []
    for task in TASKS:
        for index in range(images_per_task):
            samples.extend(_image_samples(benchmark, task, index, seed))
    return samples


@loader("shapes", about="bundled, drawn on the spot", generated=True, options={"images_per_task": "", "seed": ""})
def load_shapes(spec: BenchmarkSpec, root: object = None) -> list[Sample]:
    """The spec's benchmark drawn with its `loader_options`."""
    return build_samples(spec.name, **spec.loader_options)


def _image_samples(benchmark: str, task: str, index: int, seed: int) -> list[Sample]:
    """The samples asked about one image: a yes/no pair, or one multiple-choice question."""
    key = image_key(task, index, seed)
    shapes = scene(key)
    rng = random.Random(f"{seed}:{task}:{index}:questions")
    name = f"img_{index:03d}"
    image = ImageRef(kind="generated", value=key, generator=draw, label=f"{name}.png")
    base = {"image_key": key, "image_size": [SIZE, SIZE], "shapes": [s.as_dict() for s in shapes]}
    if task == "choice":
        return [_choice_sample(benchmark, index, shapes[0], rng, image, base)]
    yes, no = _QUESTION_PAIRS[task](shapes, rng)
    return [
        Sample(
            id=f"{task}::{name}.png::q{n}",
            benchmark=benchmark,
            task=task,
            question=question.text + _YES_NO,
            answer=answer,
            answer_type="yes_no",
            images=(image,),
            pair_group=f"{task}::{name}",
            target_region=question.target,
            metadata={**base, "asked": question.asked},
        )
        for n, (question, answer) in enumerate(((yes, "Yes"), (no, "No")), start=1)
    ]


def _existence(shapes: tuple[Shape, ...], rng: random.Random) -> tuple[_Question, _Question]:
    present = rng.choice(shapes)
    absent = rng.choice([k for k in KINDS if k not in {s.kind for s in shapes}])
    return (
        _Question(f"Is there a {present.kind} in the image?", present.box, {"shape": present.kind}),
        _Question(f"Is there a {absent} in the image?", None, {"shape": absent}),
    )


def _count(shapes: tuple[Shape, ...], rng: random.Random) -> tuple[_Question, _Question]:
    kind, n = shapes[0].kind, len(shapes)
    wrong = rng.choice([m for m in range(1, 5) if m != n])
    return (
        _Question(_count_text(kind, n), None, {"shape": kind, "count": n}),
        _Question(_count_text(kind, wrong), None, {"shape": kind, "count": wrong}),
    )


def _count_text(kind: str, n: int) -> str:
    if n == 1:
        return f"Is there one {kind} in the image?"
    return f"Are there {_NUMBERS[n]} {_PLURALS[kind]} in the image?"


def _color(shapes: tuple[Shape, ...], rng: random.Random) -> tuple[_Question, _Question]:
    shape = shapes[0]
    wrong = rng.choice([c for c in COLORS if c != shape.color])
    return (
        _Question(f"Is the {shape.kind} {shape.color}?", shape.box, {"color": shape.color}),
        _Question(f"Is the {shape.kind} {wrong}?", shape.box, {"color": wrong}),
    )


def _position(shapes: tuple[Shape, ...], rng: random.Random) -> tuple[_Question, _Question]:
    first, second = shapes
    horizontal = first.box[2] <= second.box[0]
    before, after = ("to the left of", "to the right of") if horizontal else ("above", "below")
    a_first = rng.random() < 0.5
    a, b = (first, second) if a_first else (second, first)
    true, false = (before, after) if a_first else (after, before)

    def ask(relation: str) -> _Question:
        asked = {"a": a.kind, "relation": relation, "b": b.kind}
        return _Question(f"Is the {a.kind} {relation} the {b.kind}?", a.box, asked)

    return ask(true), ask(false)


_QUESTION_PAIRS = {"existence": _existence, "count": _count, "color": _color, "position": _position}


def _choice_sample(
    benchmark: str,
    index: int,
    shape: Shape,
    rng: random.Random,
    image: ImageRef,
    base: dict[str, Any],
) -> Sample:
    """A four-option question about the shape's kind (even index) or colour (odd index).

    The correct letter cycles A, B, C, D per category, so each letter is equally often right.
    """
    if index % 2 == 0:
        category, question, correct, pool = "shape", _SHAPE_QUESTION, shape.kind, KINDS
    else:
        category, question, correct, pool = "color", _COLOR_QUESTION, shape.color, tuple(COLORS)
    options = rng.sample([o for o in pool if o != correct], 3)
    slot = (index // 2) % 4
    options.insert(slot, correct)
    return Sample(
        id=f"choice::img_{index:03d}.png",
        benchmark=benchmark,
        task="choice",
        question=question,
        answer=_LETTERS[slot],
        answer_type="choice",
        images=(image,),
        choices=tuple(zip(_LETTERS, options)),
        target_region=shape.box,
        category=category,
        l2_category="perception",
        metadata={**base, "asked": {"category": category, "correct": correct}},
    )
