"""Drawing a VRP variant onto an image: a pointer around the target, and the question text.

Geometry, all scaled with the image's shorter side m = min(width, height):

* pointer line width max(2, round(0.01·m)); a gap of one line width separates it from
  the target. "box" is the target's box grown by gap + width; "ellipse" circumscribes the
  target's box (semi-axes √2·half-size, the ellipse through its corners) grown the same
  way. The pointer is clamped to the original image, never drawn into a text band.
* text (intervention "full"): font size max(10, round(m / 20)), centred lines wrapped to
  the image width (a word wider than a line is broken between characters), on a white
  backing box, in the pointer's colour. The block sits at the upper or lower edge, over
  image rows that are plain (one colour across the whole width, like a blank margin, and
  so clear of the pointer and of any object); when too few rows there are plain, the
  canvas is extended at that edge by a white band just tall enough, and it is widened
  (image centred) when a single character is wider than the image. So the text neither
  hides image content nor is ever clipped; `Rendered.canvas_offset` says where the
  original image's (0, 0) landed.

Colours: red (255, 0, 0), blue (0, 0, 255), and black for "default" (the usual default
stroke of drawing tools; the paper does not name its default colour).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from pytest_mllm.vrp.fonts import load_font
from pytest_mllm.vrp.variants import Variant

Box = tuple[int, int, int, int]  # inclusive pixel box (left, top, right, bottom), as ImageDraw takes it

RGB: dict[str, tuple[int, int, int]] = {"red": (255, 0, 0), "blue": (0, 0, 255), "default": (0, 0, 0)}
COLOR_WORDS = {"red": "red", "blue": "blue", "default": "black"}  # how a question names the colour
WHITE = (255, 255, 255)
FULL_PROMPT = "Answer the question shown in the image."


@dataclass(frozen=True)
class Rendered:
    """A rendered variant: the RGB image, the text prompt, and where things were drawn.

    `canvas_offset` is (dx, dy), the position of the original image in the canvas;
    `pointer_box` and `text_box` are inclusive boxes in canvas pixels (None when not drawn).
    """

    image: Image.Image
    prompt: str
    font_used: str | None
    canvas_offset: tuple[int, int]
    pointer_box: Box | None = None
    text_box: Box | None = None


@dataclass(frozen=True)
class _TextBlock:
    """Laid-out lines: (text, x, baseline y) relative to the block's ink box at (0, 0)."""

    lines: tuple[tuple[str, int, int], ...]
    width: int
    height: int


def to_rgb(image: Image.Image) -> Image.Image:
    """`image` as RGB; transparent pixels are composited over white, not over black."""
    if image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info):
        rgba = image.convert("RGBA")
        return Image.alpha_composite(Image.new("RGBA", rgba.size, WHITE + (255,)), rgba).convert("RGB")
    return image.convert("RGB")


def check_region(region: tuple[float, float, float, float], size: tuple[int, int]) -> None:
    """ValueError unless `region` is a non-empty (x0, y0, x1, y1) box inside an image of `size`."""
    width, height = size
    where = f"target region {tuple(region)} on the {width}×{height} image"
    if len(region) != 4 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in region):
        raise ValueError(f"{where}: need four finite numbers x0, y0, x1, y1")
    x0, y0, x1, y1 = region
    if x0 >= x1 or y0 >= y1:
        raise ValueError(f"{where} is inverted or empty: need x0 < x1 and y0 < y1")
    if x0 < 0 or y0 < 0 or x1 > width or y1 > height:
        raise ValueError(
            f"{where} lies (partly) outside the image: need 0 ≤ x0 < x1 ≤ {width}, 0 ≤ y0 < y1 ≤ {height}"
        )


def line_width(size: tuple[int, int]) -> int:
    """The pointer's stroke width for an image of `size`."""
    return max(2, round(0.01 * min(size)))


def font_size(size: tuple[int, int]) -> int:
    """The text's pixel size for an image of `size`."""
    return max(10, round(min(size) / 20))


def pointer_box(region: tuple[float, float, float, float], shape: str, size: tuple[int, int]) -> Box:
    """The pointer's outer box around `region` (half-open pixels), clamped to the image."""
    stroke = line_width(size)
    x0, y0, x1, y1 = math.floor(region[0]), math.floor(region[1]), math.ceil(region[2]) - 1, math.ceil(region[3]) - 1
    grow = 2 * stroke
    if shape == "ellipse":
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        rx, ry = (x1 - x0 + 1) / 2 * math.sqrt(2) + grow, (y1 - y0 + 1) / 2 * math.sqrt(2) + grow
        left, top, right, bottom = math.floor(cx - rx), math.floor(cy - ry), math.ceil(cx + rx), math.ceil(cy + ry)
    else:
        left, top, right, bottom = x0 - grow, y0 - grow, x1 + grow, y1 + grow
    width, height = size
    return max(0, left), max(0, top), min(width - 1, right), min(height - 1, bottom)


def render(image: Image.Image, region: tuple[float, float, float, float], question: str, variant: Variant) -> Rendered:
    """Draw `variant` for the target `region` of `image`; the same inputs give the same pixels.

    `question` is the text for this intervention: for "none" the question with the location
    description, for "partial"/"full" the question naming the marker. It becomes the prompt
    for "none" and "partial"; for "full" it is drawn on the image and the prompt is
    `FULL_PROMPT`.
    """
    base = to_rgb(image)
    check_region(region, base.size)
    if variant.intervention == "none":
        return Rendered(base, question, None, (0, 0))
    color = RGB[variant.color]
    box = pointer_box(region, variant.shape, base.size)
    draw = ImageDraw.Draw(base)  # ImageDraw does not antialias shapes
    outline = draw.ellipse if variant.shape == "ellipse" else draw.rectangle
    outline(box, outline=color, width=line_width(base.size))
    if variant.intervention == "partial":
        return Rendered(base, question, None, (0, 0), pointer_box=box)
    size = font_size(base.size)
    font, used = load_font(variant.font, size)
    return _with_text(base, box, question, variant.position, (font, size, used), color)


def _with_text(
    image: Image.Image,
    box: Box,
    text: str,
    position: str,
    typeface: tuple[ImageFont.FreeTypeFont, int, str],
    color: tuple[int, int, int],
) -> Rendered:
    """`image` with `text` at its upper or lower edge, extending the canvas as needed.

    `typeface` is the font, its pixel size, and what it is (for `Rendered.font_used`).
    """
    font, size, used = typeface
    width, height = image.size
    margin = max(2, size // 3)
    block = _layout(text, font, size, width - 2 * margin)
    if block.height == 0:
        return Rendered(image, FULL_PROMPT, used, (0, 0), pointer_box=box)
    need = block.height + 2 * margin  # the block and a margin on either side of it
    band = max(0, need - _plain_rows(image, position == "upper", need))
    canvas_w = max(width, block.width + 2 * margin)
    dx, dy = (canvas_w - width) // 2, band if position == "upper" else 0
    canvas = Image.new("RGB", (canvas_w, height + band), WHITE)
    canvas.paste(image, (dx, dy))
    left = (canvas_w - block.width) // 2
    top = margin if position == "upper" else canvas.height - margin - block.height
    text_box = (left, top, left + block.width - 1, top + block.height - 1)
    pad = margin // 2  # the white backing box reaches this far around the text
    draw = ImageDraw.Draw(canvas)
    draw.rectangle(
        (max(0, left - pad), max(0, top - pad),
         min(canvas_w - 1, text_box[2] + pad), min(canvas.height - 1, text_box[3] + pad)),
        fill=WHITE,
    )
    for line, x, y in block.lines:
        draw.text((left + x, top + y), line, fill=color, font=font, anchor="ls")
    shifted = (box[0] + dx, box[1] + dy, box[2] + dx, box[3] + dy)
    return Rendered(canvas, FULL_PROMPT, used, (dx, dy), pointer_box=shifted, text_box=text_box)


def _plain_rows(image: Image.Image, from_top: bool, limit: int) -> int:
    """How many rows (up to `limit`) from the top or bottom edge are all one colour."""
    width, height = image.size
    first = None
    for n in range(min(limit, height)):
        y = n if from_top else height - 1 - n
        colors = image.crop((0, y, width, y + 1)).getcolors(1)  # None when the row has two or more
        if colors is None or (first is not None and colors[0][1] != first):
            return n
        first = colors[0][1]
    return min(limit, height)


def _layout(text: str, font: ImageFont.FreeTypeFont, size: int, max_width: int) -> _TextBlock:
    """Wrap `text` into centred lines no wider than `max_width` (or than its widest character)."""
    limit = max([max_width] + [_width(font, ch) for ch in set(text) if not ch.isspace()])
    lines = [line for paragraph in text.splitlines() for line in _wrap(font, paragraph, limit)]
    inked = [(i, line, _ink(font, line)) for i, line in enumerate(lines) if line]
    if not inked:
        return _TextBlock((), 0, 0)
    ascent, descent = font.getmetrics()
    pitch = ascent + descent + max(1, size // 5)
    block_w = max(right - left for _, _, (left, _, right, _) in inked)
    top = min(i * pitch + t for i, _, (_, t, _, _) in inked)
    bottom = max(i * pitch + b for i, _, (_, _, _, b) in inked)
    placed = tuple(
        (line, (block_w - (right - left)) // 2 - left, i * pitch - top)
        for i, line, (left, _, right, _) in inked
    )
    return _TextBlock(placed, block_w, bottom - top)


def _ink(font: ImageFont.FreeTypeFont, text: str) -> tuple[int, int, int, int]:
    """The ink box of `text` drawn with its baseline origin at (0, 0)."""
    left, top, right, bottom = font.getbbox(text, anchor="ls")
    return int(left), int(top), int(right), int(bottom)


def _width(font: ImageFont.FreeTypeFont, text: str) -> int:
    left, _, right, _ = _ink(font, text)
    return right - left


def _wrap(font: ImageFont.FreeTypeFont, paragraph: str, limit: int) -> list[str]:
    """Greedy word wrap by ink width; a word wider than `limit` is split between characters."""
    lines: list[str] = []
    current = ""
    for word in paragraph.split():
        candidate = f"{current} {word}" if current else word
        if _width(font, candidate) <= limit:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = ""
        for ch in word:
            if current and _width(font, current + ch) > limit:
                lines.append(current)
                current = ""
            current += ch
    lines.append(current)
    return lines
