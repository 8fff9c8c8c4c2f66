"""The bundled offline VRP benchmark "vrp_shapes": scenes of 3–5 shapes, one of them asked about.

Every image is a pure function of its key, "vrp_shapes/v1/<index>/seed<seed>": a 360×360
canvas holds a 3×3 grid of 108-pixel cells inside an 18-pixel border; 3–5 shapes of
distinct colours sit in distinct cells. The target always occupies a corner cell, so
"the object in the upper left" (etc.) names it unambiguously; the corner cycles with the
source index. Even indices ask a yes/no colour question ("Is the object in the upper left
red? Please answer yes or no."; a wrong colour is that of another object in the scene),
odd indices a four-option shape question ("What shape is the object in the upper left?",
the other objects having other shapes), so a model that looks at the wrong object errs.
Answers (Yes/No, and the correct letter) are balanced per 8 questions of a task.

Each source sample carries `target_region` (the target's box) and metadata "location"
(the locating words, "in the upper left") and "marked_question" (the question with
"{marker}" where the pointer is named), which `expand` uses.
"""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from pytest_mllm.loaders.shapes import BACKGROUND, COLORS, KINDS, Shape, draw_shape
from pytest_mllm.engine.spec import BenchmarkSpec, loader
from pytest_mllm.sample import ImageRef, Sample

SIZE = 360
BORDER = 18
CELL = 108
CORNERS = {(0, 0): "upper left", (0, 2): "upper right", (2, 0): "lower left", (2, 2): "lower right"}
TASKS = ("color", "shape")

_KEY_PREFIX = ("vrp_shapes", "v1")
_MARGIN = 10  # least gap between a shape and its cell's edge
_SIZES = (44, 64)
_LETTERS = "ABCD"
_YES_NO = " Please answer yes or no."


def image_key(index: int, seed: int) -> str:
    """The key that names (and suffices to redraw) one scene."""
    return "/".join((*_KEY_PREFIX, str(index), f"seed{seed}"))


def parse_key(key: str) -> tuple[int, int]:
    """Split a key into (index, seed); ValueError when it is not a vrp_shapes key."""
    parts = key.split("/")
    if len(parts) != 4 or tuple(parts[:2]) != _KEY_PREFIX or not parts[3].startswith("seed"):
        raise ValueError(f"not a vrp_shapes image key: {key!r}")
    try:
        return int(parts[2]), int(parts[3][len("seed"):])
    except ValueError:
        raise ValueError(f"not a vrp_shapes image key: {key!r}") from None


def scene(key: str) -> tuple[tuple[Shape, ...], int]:
    """The shapes a key describes and the position of the target among them."""
    index, seed = parse_key(key)
    rng = random.Random(f"{seed}:vrp:{index}")
    target_cell = list(CORNERS)[(index // 2) % 4]
    others = rng.sample([(r, c) for r in range(3) for c in range(3) if (r, c) != target_cell], rng.randint(2, 4))
    colors = rng.sample(tuple(COLORS), len(others) + 1)
    target_kind = rng.choice(KINDS)
    kinds = [target_kind] + [
        rng.choice([k for k in KINDS if k != target_kind]) if index % 2 else rng.choice(KINDS) for _ in others
    ]
    cells = sorted([target_cell, *others])
    specs = dict(zip([target_cell, *others], zip(kinds, colors)))
    shapes = tuple(_place(rng, cell, *specs[cell]) for cell in cells)
    return shapes, cells.index(target_cell)


def _place(rng: random.Random, cell: tuple[int, int], kind: str, color: str) -> Shape:
    """A shape of random size at a random spot inside grid cell (row, column)."""
    size = rng.randint(*_SIZES)
    x0 = BORDER + cell[1] * CELL + rng.randint(_MARGIN, CELL - _MARGIN - size)
    y0 = BORDER + cell[0] * CELL + rng.randint(_MARGIN, CELL - _MARGIN - size)
    return Shape(kind, color, (x0, y0, x0 + size, y0 + size))


def draw(key: str) -> Image.Image:
    """Draw the 360×360 RGB scene a key names; the same key always gives the same pixels."""
    image = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    canvas = ImageDraw.Draw(image)
    for shape in scene(key)[0]:
        draw_shape(canvas, shape)
    return image


def location_of(shape: Shape) -> str:
    """The locating words for a shape in a corner cell, e.g. "in the upper left"."""
    x0, y0, _, _ = shape.box
    return "in the " + CORNERS[((y0 - BORDER) // CELL, (x0 - BORDER) // CELL)]


def build_vrp_samples(benchmark: str = "vrp_shapes", sources: int = 24, seed: int = 0) -> list[Sample]:
    """`sources` source samples (no variants yet), alternating colour and shape questions."""
    return [_source(benchmark, index, seed) for index in range(sources)]


@loader("vrp_shapes", about="bundled, drawn on the spot", generated=True, options={"sources": "", "seed": ""})
def load_vrp_shapes(spec: BenchmarkSpec, root: object = None) -> list[Sample]:
    """The spec's benchmark drawn with its `loader_options`."""
    return build_vrp_samples(spec.name, **spec.loader_options)


def _source(benchmark: str, index: int, seed: int) -> Sample:
    key = image_key(index, seed)
    shapes, target_at = scene(key)
    target = shapes[target_at]
    rng = random.Random(f"{seed}:vrp:{index}:question")
    location = location_of(target)
    j = index // 2  # the question's number within its task
    name = f"vrp_{index:03d}.png"
    common = {
        "image_key": key, "image_size": [SIZE, SIZE], "shapes": [s.as_dict() for s in shapes],
        "target": target_at, "location": location,
    }
    if index % 2 == 0:
        asked = target.color if (j + j // 4) % 2 == 0 else rng.choice([s.color for s in shapes if s is not target])
        template = "Is the object {where} " + asked + "?" + _YES_NO
        choices: tuple[tuple[str, str], ...] = ()
        task, answer_type, answer = "color", "yes_no", "Yes" if asked == target.color else "No"
    else:
        options = rng.sample([k for k in KINDS if k != target.kind], 3)
        slot = (j + j // 4) % 4
        options.insert(slot, target.kind)
        template = "What shape is the object {where}?"
        task, answer_type, answer = "shape", "choice", _LETTERS[slot]
        choices = tuple(zip(_LETTERS, options))
        asked = target.kind
    return Sample(
        id=f"{task}::{name}",
        benchmark=benchmark,
        task=task,
        question=template.replace("{where}", location),
        answer=answer,
        answer_type=answer_type,  # type: ignore[arg-type]
        images=(ImageRef(kind="generated", value=key, generator=draw, label=name),),
        choices=choices,
        target_region=target.box,
        metadata={**common, "asked": asked, "marked_question": template.replace("{where}", "marked by {marker}")},
    )
