"""MyVLM: the team's (deliberately tiny) vision-language model.

It is a heuristic, not a neural network, but it is a real model in the sense that matters
for the CI gate: it only sees what a VLM sees (the rendered prompt and the image pixels),
never the benchmark's answer key, so its scores move when its perception code changes.

How it "sees" an image (`MyVLM.see`):

1. foreground mask: every pixel that differs clearly from the white background;
2. segmentation by recursive XY-cuts: split the mask along empty rows or columns until
   each piece holds one object;
3. per object: the shape from pixel statistics of its bounding box (how much of the box is
   filled, and how much of its top and bottom rows), and the colour name nearest to the
   object's dominant non-outline colour.

What it can answer (`MyVLM.answer`): "Is there a <shape> …?", "Is there one / Are there N
<shapes> …?", "Is the <shape> <colour>?", and multiple-choice questions about the shape or
colour of the object. It has no spatial reasoning yet: for anything else (e.g. "Is the
circle to the left of the square?") it abstains with "No", the conservative answer.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from PIL import Image, ImageChops, ImageStat

from pytest_mllm.sample import Request, Response

Box = tuple[int, int, int, int]

#: Reference colours the model can name (common RGB values, not the benchmark's palette).
COLOUR_NAMES: dict[str, tuple[int, int, int]] = {
    "red": (255, 0, 0),
    "green": (0, 128, 0),
    "blue": (0, 0, 255),
    "yellow": (255, 255, 0),
    "purple": (128, 0, 128),
    "orange": (255, 165, 0),
    "pink": (255, 192, 203),
    "brown": (139, 69, 19),
    "gray": (128, 128, 128),
}
SHAPE_NAMES = ("circle", "square", "triangle", "cross")
_PLURALS = {"circles": "circle", "squares": "square", "triangles": "triangle", "crosses": "cross"}
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5}

_BACKGROUND = (255, 255, 255)
_FOREGROUND_THRESHOLD = 24  # summed-luma difference from the background that counts as ink
_MIN_OBJECT_PIXELS = 64  # smaller specks are noise, not objects
_OUTLINE_MAX_CHANNEL = 70  # colours this dark are outlines, not an object's fill

_OPTION = re.compile(r"^\s*([A-Z])[.)]\s*(.+?)\s*$", re.MULTILINE)
_COUNT = re.compile(r"\b(?:is there (one)|are there (\w+)) (\w+) in the image\b", re.IGNORECASE)
_EXISTS = re.compile(r"\bis there an? (\w+) in the image\b", re.IGNORECASE)
_ATTRIBUTE = re.compile(r"\bis the (\w+) (\w+)\s*\?", re.IGNORECASE)


@dataclass(frozen=True)
class SeenObject:
    """One object the model found: where it is and what it looks like."""

    box: Box  # half-open pixel box (x0, y0, x1, y1)
    shape: str  # one of SHAPE_NAMES
    colour: str  # one of COLOUR_NAMES
    fill: float  # share of the bounding box covered by the object


def foreground_mask(image: Image.Image) -> Image.Image:
    """A mode-"L" mask: 255 where the pixel is not background, 0 elsewhere."""
    rgb = image.convert("RGB")
    diff = ImageChops.difference(rgb, Image.new("RGB", rgb.size, _BACKGROUND)).convert("L")
    return diff.point(lambda v: 255 if v > _FOREGROUND_THRESHOLD else 0)


def _runs(profile: Sequence[int]) -> list[tuple[int, int]]:
    """Half-open index ranges where `profile` is non-zero."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, value in enumerate(profile):
        if value and start is None:
            start = i
        elif not value and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, len(profile)))
    return runs


def _profile(mask: Image.Image, box: Box, axis: str) -> list[int]:
    """Per-column (axis "x") or per-row (axis "y") ink of `mask` inside `box` (0 = empty)."""
    crop = mask.crop(box)
    w, h = crop.size
    size = (w, 1) if axis == "x" else (1, h)
    return list(crop.resize(size, Image.Resampling.BOX).tobytes())  # mode L: one byte per pixel


def segment(mask: Image.Image, box: Box | None = None) -> list[Box]:
    """Object boxes by recursive XY-cut: split along empty columns, then empty rows, …."""
    x0, y0, x1, y1 = box or (0, 0, *mask.size)
    tight = mask.crop((x0, y0, x1, y1)).getbbox()
    if tight is None:
        return []
    x0, y0, x1, y1 = x0 + tight[0], y0 + tight[1], x0 + tight[2], y0 + tight[3]
    for axis in ("x", "y"):
        pieces = _runs(_profile(mask, (x0, y0, x1, y1), axis))
        if len(pieces) > 1:
            boxes: list[Box] = []
            for a, b in pieces:
                sub = (x0 + a, y0, x0 + b, y1) if axis == "x" else (x0, y0 + a, x1, y0 + b)
                boxes.extend(segment(mask, sub))
            return boxes
    area = ImageStat.Stat(mask.crop((x0, y0, x1, y1))).sum[0] / 255
    return [(x0, y0, x1, y1)] if area >= _MIN_OBJECT_PIXELS else []


def classify_shape(mask: Image.Image, box: Box) -> tuple[str, float]:
    """(shape name, fill ratio) of the object in `box`, from three pixel statistics.

    A square fills its box (~1.0), a circle ~π/4, a triangle and a cross about half of it;
    those two differ at the top: a triangle's apex is a few pixels wide, a cross's top arm
    is a third of the box.
    """
    crop = mask.crop(box)
    w, h = crop.size
    fill = ImageStat.Stat(crop).mean[0] / 255
    band = max(1, h // 10)
    top = ImageStat.Stat(crop.crop((0, 0, w, band))).mean[0] / 255
    if fill >= 0.9:
        return "square", fill
    if fill >= 0.7:
        return "circle", fill
    return ("triangle" if top < 0.2 else "cross"), fill


def name_colour(image: Image.Image, mask: Image.Image, box: Box) -> str:
    """The colour name nearest to the most common non-outline colour of the object in `box`."""
    pixels = Image.composite(image.convert("RGB"), Image.new("RGB", image.size, _BACKGROUND), mask).crop(box)
    counts = pixels.getcolors(maxcolors=box_area(box) + 1) or []
    fills = [(n, c) for n, c in counts if c != _BACKGROUND and max(c) > _OUTLINE_MAX_CHANNEL]
    if not fills:
        return "gray"
    _, (r, g, b) = max(fills)
    return min(COLOUR_NAMES, key=lambda name: sum((p - q) ** 2 for p, q in zip((r, g, b), COLOUR_NAMES[name])))


def box_area(box: Box) -> int:
    """Pixels in a half-open box."""
    return max(0, box[2] - box[0]) * max(0, box[3] - box[1])


def _singular(word: str) -> str:
    word = word.lower()
    return _PLURALS.get(word, word)


class MyVLM:
    """A tiny pixel-heuristic VLM that follows the `pytest_mllm.sample.Model` protocol."""

    needs_images = True

    def __init__(self, name: str = "my-vlm") -> None:
        self.name = name
        # What pytest-mllm's response cache keys answers by: the digest of this file, so an edit of the
        # model invalidates them and an unchanged model is answered from .mllm_cache/ (CI restores it).
        self.identity = f"{name}@{hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]}"

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request, in order (the plugin batches requests)."""
        responses = []
        for request in requests:
            start = time.perf_counter()
            text = self.answer(request.prompt, request.images[0] if request.images else None)
            responses.append(Response(text, latency_s=time.perf_counter() - start))
        return responses

    def see(self, image: Image.Image) -> list[SeenObject]:
        """The objects in an image, left to right / top to bottom."""
        mask = foreground_mask(image)
        objects = []
        for box in segment(mask):
            shape, fill = classify_shape(mask, box)
            objects.append(SeenObject(box, shape, name_colour(image, mask, box), fill))
        return objects

    def answer(self, prompt: str, image: Image.Image | None) -> str:
        """The model's reply to one prompt about one image: "Yes", "No" or an option letter."""
        objects = self.see(image) if image is not None else []
        options = _OPTION.findall(prompt)
        if options:
            return self._choose(options, objects)
        return "Yes" if self._holds(prompt, objects) else "No"

    @staticmethod
    def _choose(options: list[tuple[str, str]], objects: list[SeenObject]) -> str:
        """The letter of the option naming the main object's shape or colour (else the first)."""
        if objects:
            main = max(objects, key=lambda o: box_area(o.box))
            for letter, text in options:
                if text.strip().lower() in (main.shape, main.colour):
                    return letter
        return options[0][0]

    @staticmethod
    def _holds(prompt: str, objects: list[SeenObject]) -> bool:
        """Whether the yes/no question in `prompt` is true of `objects` (False when not understood)."""
        shapes = [o.shape for o in objects]
        if match := _COUNT.search(prompt):
            one, number, noun = match.groups()
            wanted = 1 if one else _NUMBERS.get(number.lower())
            return wanted is not None and shapes.count(_singular(noun)) == wanted
        if match := _EXISTS.search(prompt):
            return _singular(match.group(1)) in shapes
        if (match := _ATTRIBUTE.search(prompt)) and match.group(2).lower() in COLOUR_NAMES:
            shape, colour = _singular(match.group(1)), match.group(2).lower()
            return any(o.shape == shape and o.colour == colour for o in objects)
        return False  # not a skill of this model (yet): abstain with the conservative answer
