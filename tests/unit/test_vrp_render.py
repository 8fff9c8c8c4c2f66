"""Drawing VRP variants: pinned pixels, the font chain, geometry, and bad inputs."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageChops, ImageDraw

from pytest_mllm.vrp import fonts
from pytest_mllm.vrp.render import (
    FULL_PROMPT,
    RGB,
    WHITE,
    Rendered,
    check_region,
    font_size,
    line_width,
    render,
    to_rgb,
)
from pytest_mllm.vrp.variants import Variant, variants

QUESTION = "Is the object marked by the red box orange? Please answer yes or no."
PARTIAL = Variant("partial", color="red", shape="box")
FULL_UPPER = Variant("full", color="red", font="arial", shape="box", position="upper")
FULL_LOWER = Variant("full", color="blue", font="times", shape="ellipse", position="lower")


def digest(image: Image.Image) -> str:
    return hashlib.sha256(f"{image.mode}{image.size}".encode() + image.tobytes()).hexdigest()


def scene(size: tuple[int, int] = (224, 224)) -> Image.Image:
    """A white image with a few filled rectangles: the target at (80, 90)–(130, 140)."""
    image = Image.new("RGB", size, WHITE)
    draw = ImageDraw.Draw(image)
    draw.rectangle((80, 90, 129, 139), fill=(245, 135, 25))
    draw.rectangle((20, 30, 50, 60), fill=(30, 160, 60))
    draw.rectangle((160, 170, 200, 200), fill=(135, 55, 185))
    return image


REGION = (80, 90, 130, 140)


def system_font(name: str) -> Path | None:
    """A font file installed on this machine (searching the default folders), if any."""
    return fonts._index(fonts.FONT_DIRS).get(name.lower())


@pytest.fixture
def font_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder that replaces the font search path (so Pillow's default font is used)."""
    folder = tmp_path / "fonts"
    folder.mkdir()
    monkeypatch.setenv(fonts.ENV_VAR, str(folder))
    return folder


def install(folder: Path, *names: str) -> None:
    """Copy system fonts into `folder`, skipping the test when one is not installed."""
    for name in names:
        found = system_font(name)
        if found is None:
            pytest.skip(f"font {name} is not installed here")
        shutil.copy(found, folder / name)


# ---- pinned pixels ------------------------------------------------------------------------
# These hashes depend on the Pillow and FreeType builds (glyphs are antialiased), like the
# repository's fixture images: pinned with Pillow 13.0.0 and FreeType 2.14.3. If an
# upgrade changes them, look at the images again and re-pin. Real fonts are checked only
# where the very font file pinned here (by its sha256) is installed.

GOLDEN_NO_TEXT = {
    "partial-blue-ellipse": "3aa61abe7dbec3b01c6b42c19bb525f42637e902ba8a28667df2de123fe1557a",
    "partial-red-box": "039d1948a8180cc9248addf9dd18f5bea24697ec21bcde732c6c6e0675378776",
}
GOLDEN_PILLOW_DEFAULT = {
    "full-blue-times-ellipse-lower": "0f516f334aba4805d326e137c864fe1f830f901582ce3b8928389c08eee0df40",
    "full-red-arial-box-upper": "289919570a95be177942822a9c7427cdfab4ef7411397995689095f962a2adcf",
}
GOLDEN_FONTS = {  # font file: (its sha256 — Debian 12's fonts-liberation 1.07.4, fonts-dejavu 2.37 —, the image's)
    "LiberationSans-Regular.ttf": (
        "f8ace1f892b2bd9dc1792ba7f097fa7588f84fed48321480e04de5390828221f",
        "df6addf73620d3f9e4c2484d7697286ed02acc39350adfe18ba456d8de790f3a",
    ),
    "LiberationSerif-Regular.ttf": (
        "1c9c77c2cd0f3c2d2aeef53ea50a4d5d3d684ac73a431d7c70d7864887d194a3",
        "a9bc6f80352dc4042b50b810923aa6db3affde7084f413ca749488a3ed67776d",
    ),
    "DejaVuSans.ttf": (
        "abdc775b21b1bc470d50c97e790d276f2054b7504e56e5bd3e64f48d68582322",
        "ec2983baec74290447388f2b43b8c5350c86b7acdd768a2168682b5057795cf3",
    ),
    "DejaVuSerif.ttf": (
        "13e61509f5c81d7c3132810f4f903e3523df89c802bf6e0674621e8f659cdfe1",
        "dbada64534e05e14136d4e4094935e0fce38201859bd754ea9e1dbe42cf13222",
    ),
}


@pytest.mark.parametrize("variant_id", sorted(GOLDEN_NO_TEXT))
def test_golden_pointer_only(variant_id: str) -> None:
    rendered = render(scene(), REGION, QUESTION, Variant.from_id(variant_id))
    assert digest(rendered.image) == GOLDEN_NO_TEXT[variant_id]


@pytest.mark.parametrize("variant_id", sorted(GOLDEN_PILLOW_DEFAULT))
def test_golden_pillow_default_font(variant_id: str, font_dir: Path) -> None:
    rendered = render(scene(), REGION, QUESTION, Variant.from_id(variant_id))
    assert rendered.font_used == fonts.PILLOW_DEFAULT
    assert digest(rendered.image) == GOLDEN_PILLOW_DEFAULT[variant_id]


@pytest.mark.parametrize("name", sorted(GOLDEN_FONTS))
def test_golden_real_fonts(name: str, font_dir: Path) -> None:
    install(font_dir, name)
    file_digest, image_digest = GOLDEN_FONTS[name]
    if hashlib.sha256((font_dir / name).read_bytes()).hexdigest() != file_digest:
        pytest.skip(f"the installed {name} is another version than the pinned one")
    family = "times" if "Serif" in name else "arial"
    variant = Variant("full", color="red", font=family, shape="box", position="upper")  # type: ignore[arg-type]
    rendered = render(scene(), REGION, QUESTION, variant)
    assert rendered.font_used == str(font_dir / name)
    assert digest(rendered.image) == image_digest


def test_same_inputs_same_pixels() -> None:
    for variant in (PARTIAL, FULL_UPPER, FULL_LOWER):
        first, second = (render(scene(), REGION, QUESTION, variant) for _ in range(2))
        assert digest(first.image) == digest(second.image)
        assert (first.pointer_box, first.text_box, first.canvas_offset) == (
            second.pointer_box, second.text_box, second.canvas_offset
        )


# ---- fonts --------------------------------------------------------------------------------


def test_font_chain_falls_back_to_pillow_default(font_dir: Path) -> None:
    for family in ("arial", "times"):
        font, used = fonts.load_font(family, 20)
        assert used == fonts.PILLOW_DEFAULT
        assert font.size == 20


def test_font_chain_takes_dejavu_when_liberation_is_missing(font_dir: Path) -> None:
    install(font_dir, "DejaVuSans.ttf")
    assert fonts.load_font("arial", 16)[1] == str(font_dir / "DejaVuSans.ttf")
    assert fonts.load_font("times", 16)[1] == fonts.PILLOW_DEFAULT  # no serif font there


def test_font_chain_prefers_liberation(font_dir: Path) -> None:
    install(font_dir, "DejaVuSans.ttf", "DejaVuSerif.ttf", "LiberationSans-Regular.ttf", "LiberationSerif-Regular.ttf")
    assert fonts.load_font("arial", 16)[1] == str(font_dir / "LiberationSans-Regular.ttf")
    assert fonts.load_font("times", 16)[1] == str(font_dir / "LiberationSerif-Regular.ttf")


def test_font_search_folders_without_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(fonts.ENV_VAR, raising=False)
    nested = tmp_path / "truetype" / "dejavu"
    nested.mkdir(parents=True)
    install(nested, "DejaVuSerif.ttf")
    monkeypatch.setattr(fonts, "FONT_DIRS", (tmp_path / "missing", tmp_path))
    assert fonts.font_dirs() == (tmp_path / "missing", tmp_path)
    assert fonts.find_font_file("times") == nested / "DejaVuSerif.ttf"  # found recursively
    assert fonts.find_font_file("arial") is None


def test_override_lists_several_folders_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    install(first, "DejaVuSans.ttf")
    install(second, "DejaVuSans.ttf")
    monkeypatch.setenv(fonts.ENV_VAR, f"{first}{os.pathsep}{second}")
    assert fonts.find_font_file("arial") == first / "DejaVuSans.ttf"


def test_unknown_font_family_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown VRP font 'comic'"):
        fonts.load_font("comic", 12)


# ---- geometry -----------------------------------------------------------------------------


def changed_box(before: Image.Image, after: Image.Image) -> tuple[int, int, int, int] | None:
    return ImageChops.difference(before, after).getbbox()


def inside(box: tuple[int, int, int, int], size: tuple[int, int]) -> bool:
    return 0 <= box[0] <= box[2] < size[0] and 0 <= box[1] <= box[3] < size[1]


def test_none_draws_nothing() -> None:
    rendered = render(scene(), REGION, QUESTION, Variant("none"))
    assert rendered == Rendered(rendered.image, QUESTION, None, (0, 0))
    assert changed_box(scene(), rendered.image) is None


def test_partial_draws_only_the_pointer_around_the_target() -> None:
    rendered = render(scene(), REGION, QUESTION, PARTIAL)
    assert rendered.prompt == QUESTION and rendered.font_used is None and rendered.canvas_offset == (0, 0)
    box = rendered.pointer_box
    assert box is not None
    assert box[0] < REGION[0] and box[1] < REGION[1] and box[2] >= REGION[2] and box[3] >= REGION[3]
    changed = changed_box(scene(), rendered.image)
    assert changed == (box[0], box[1], box[2] + 1, box[3] + 1)
    target = scene().crop(REGION)
    assert changed_box(target, rendered.image.crop(REGION)) is None  # the target stays visible
    assert rendered.image.getpixel((box[0], (box[1] + box[3]) // 2)) == RGB["red"]


def test_ellipse_circumscribes_the_target() -> None:
    rendered = render(scene(), REGION, QUESTION, Variant("partial", color="blue", shape="ellipse"))
    box = rendered.pointer_box
    assert box is not None
    width = REGION[2] - REGION[0]
    assert box[2] - box[0] + 1 >= round(width * 2**0.5)  # passes outside the target's corners
    assert changed_box(scene().crop(REGION), rendered.image.crop(REGION)) is None
    top_middle = ((box[0] + box[2]) // 2, box[1])
    assert rendered.image.getpixel(top_middle) == RGB["blue"]


def test_default_colour_is_black() -> None:
    rendered = render(scene(), REGION, QUESTION, Variant("partial", shape="box"))
    box = rendered.pointer_box
    assert box is not None
    assert rendered.image.getpixel((box[0], box[1])) == (0, 0, 0)


def test_full_prompt_text_and_padding() -> None:
    rendered = render(scene(), REGION, QUESTION, FULL_UPPER)
    assert rendered.prompt == FULL_PROMPT
    text_box, pointer = rendered.text_box, rendered.pointer_box
    assert text_box is not None and pointer is not None
    assert inside(text_box, rendered.image.size)
    assert text_box[3] < pointer[1]  # the text sits above the pointer
    dx, dy = rendered.canvas_offset
    assert rendered.image.size == (224 + 2 * dx, 224 + dy)
    original = rendered.image.crop((dx, dy, dx + 224, dy + 224))
    assert changed_box(scene().crop(REGION), original.crop(REGION)) is None


def test_text_goes_on_plain_rows_without_padding() -> None:
    """A tall blank margin below the objects takes the text; the canvas keeps its size."""
    image = scene((224, 400))
    rendered = render(image, REGION, QUESTION, FULL_LOWER)
    assert rendered.canvas_offset == (0, 0) and rendered.image.size == image.size
    assert rendered.text_box is not None and rendered.text_box[1] > 200


def test_text_never_covers_image_content() -> None:
    """Texture everywhere: every row is busy, so the text gets a band of its own."""
    image = Image.effect_noise((160, 160), 60).convert("RGB")
    for variant in (FULL_UPPER, FULL_LOWER):
        rendered = render(image, (40, 40, 100, 100), QUESTION, variant)
        dx, dy = rendered.canvas_offset
        pasted = rendered.image.crop((dx, dy, dx + 160, dy + 160))
        pointer = rendered.pointer_box
        assert pointer is not None
        masked = [im.copy() for im in (image, pasted)]
        for im in masked:
            ImageDraw.Draw(im).rectangle((pointer[0] - dx, pointer[1] - dy, pointer[2] - dx, pointer[3] - dy), fill=0)
        assert changed_box(*masked) is None


def text_ink(rendered: Rendered, base: Image.Image) -> tuple[int, int, int, int] | None:
    """The box of everything drawn outside the pointer: the text's ink (and its backing)."""
    dx, dy = rendered.canvas_offset
    expected = Image.new("RGB", rendered.image.size, WHITE)
    expected.paste(base, (dx, dy))
    drawn = rendered.image.copy()
    pointer = rendered.pointer_box
    assert pointer is not None
    for im in (expected, drawn):
        ImageDraw.Draw(im).rectangle(pointer, fill=WHITE)
    return changed_box(expected, drawn)


def test_long_question_wraps_and_pads_never_clipped() -> None:
    base = Image.new("RGB", (96, 96), WHITE)
    region = (30, 30, 60, 60)
    heights = []
    for words in (5, 40, 160):
        question = " ".join(["lengthy"] * words) + "?"
        rendered = render(base, region, question, FULL_UPPER)
        assert rendered.text_box is not None
        assert inside(rendered.text_box, rendered.image.size)
        ink = text_ink(rendered, base)
        assert ink is not None
        box = rendered.text_box
        assert box[0] <= ink[0] and box[1] <= ink[1] and ink[2] <= box[2] + 1 and ink[3] <= box[3] + 1
        assert rendered.image.width == 96  # wrapped, not widened
        heights.append(rendered.image.height)
    assert heights[0] < heights[1] < heights[2]
    assert heights[2] > 96 * 3


def test_tiny_image_still_renders() -> None:
    base = Image.new("RGB", (8, 8), (10, 20, 30))
    for variant in (PARTIAL, Variant("partial", color="blue", shape="ellipse"), FULL_UPPER, FULL_LOWER):
        rendered = render(base, (2, 2, 6, 6), QUESTION, variant)
        assert rendered.image.mode == "RGB"
        assert line_width(base.size) >= 1
        assert rendered.pointer_box is not None and inside(rendered.pointer_box, rendered.image.size)
        dx, dy = rendered.canvas_offset
        if variant.intervention == "full":
            assert rendered.text_box is not None and inside(rendered.text_box, rendered.image.size)
            assert rendered.image.height > 8 and rendered.image.width >= 8
            pointer = rendered.pointer_box
            assert dx <= pointer[0] and pointer[2] < dx + 8 and dy <= pointer[1] and pointer[3] < dy + 8


def test_region_touching_the_edges() -> None:
    base = scene()
    for region in ((0, 0, 224, 224), (0, 0, 1, 1), (223, 223, 224, 224), (0.5, 10.25, 40.75, 223.9)):
        for variant in (PARTIAL, FULL_LOWER):
            rendered = render(base, region, QUESTION, variant)
            assert rendered.pointer_box is not None and inside(rendered.pointer_box, rendered.image.size)


def test_scaling_with_image_size() -> None:
    assert line_width((224, 224)) == 2 and line_width((1000, 800)) == 8
    assert font_size((224, 224)) == 11 and font_size((100, 100)) == 10 and font_size((2000, 1000)) == 50


# ---- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("region", "message"),
    [
        ((10, 10, 300, 50), "outside the image"),
        ((-1, 10, 50, 50), "outside the image"),
        ((10, 10, 50, 225), "outside the image"),
        ((50, 10, 10, 50), "inverted or empty"),
        ((10, 50, 50, 10), "inverted or empty"),
        ((10, 10, 10, 50), "inverted or empty"),
        ((10, 10, float("nan"), 50), "four finite numbers"),
    ],
)
def test_bad_regions_are_rejected(region: tuple[float, float, float, float], message: str) -> None:
    for variant in (Variant("none"), PARTIAL, FULL_UPPER):
        with pytest.raises(ValueError, match=message) as caught:
            render(scene(), region, QUESTION, variant)
        assert "224×224" in str(caught.value) and str(tuple(region)) in str(caught.value)


def test_region_error_names_box_and_size() -> None:
    with pytest.raises(ValueError) as caught:
        check_region((10, 10, 300, 50), (224, 100))
    assert str(caught.value).startswith("target region (10, 10, 300, 50) on the 224×100 image")


@pytest.mark.parametrize("mode", ["RGBA", "LA", "L", "P", "CMYK", "1", "I;16"])
def test_any_input_mode_gives_rgb(mode: str) -> None:
    source = scene().convert(mode)
    for variant in (Variant("none"), PARTIAL, FULL_UPPER):
        rendered = render(source, REGION, QUESTION, variant)
        assert rendered.image.mode == "RGB"


def test_transparency_is_composited_over_white() -> None:
    rgba = Image.new("RGBA", (64, 64), (255, 0, 0, 0))  # fully transparent red
    rgba.putpixel((5, 5), (0, 0, 255, 255))
    rendered = render(rgba, (20, 20, 40, 40), "q", PARTIAL)
    assert rendered.image.getpixel((0, 0)) == WHITE
    assert rendered.image.getpixel((5, 5)) == (0, 0, 255)
    palette = Image.new("P", (64, 64), 0)
    palette.putpalette([0, 0, 0, 0, 0, 255])
    palette.info["transparency"] = 0  # palette index 0 (black) is transparent, as a GIF or PNG says
    palette.putpixel((5, 5), 1)
    rendered = render(palette, (20, 20, 40, 40), "q", PARTIAL)
    assert rendered.image.getpixel((0, 0)) == WHITE
    assert rendered.image.getpixel((5, 5)) == (0, 0, 255)


def test_non_rgb_inputs_match_their_rgb_conversion() -> None:
    for mode in ("L", "CMYK"):
        source = scene().convert(mode)
        assert digest(render(source, REGION, QUESTION, FULL_LOWER).image) == digest(
            render(source.convert("RGB"), REGION, QUESTION, FULL_LOWER).image
        )


# ---- properties ---------------------------------------------------------------------------

_TEXT = st.text(alphabet="abcdefghijklmnopqrstuvwxyzAGQWjgpy,.?!()'0123 \n", max_size=160)


@st.composite
def cases(draw: st.DrawFn) -> tuple[Image.Image, tuple[float, float, float, float]]:
    width, height = draw(st.integers(4, 300)), draw(st.integers(4, 300))
    x0, x1 = sorted(draw(st.lists(st.integers(0, width), min_size=2, max_size=2, unique=True)))
    y0, y1 = sorted(draw(st.lists(st.integers(0, height), min_size=2, max_size=2, unique=True)))
    shade = draw(st.integers(0, 255))
    return Image.new(draw(st.sampled_from(["RGB", "L", "RGBA"])), (width, height), shade), (x0, y0, x1, y1)


@settings(max_examples=60, deadline=None)
@given(case=cases(), question=_TEXT, variant=variants())
def test_any_valid_variant_renders(
    case: tuple[Image.Image, tuple[float, float, float, float]], question: str, variant: Variant
) -> None:
    image, region = case
    rendered = render(image, region, question, variant)
    assert rendered.image.mode == "RGB"
    dx, dy = rendered.canvas_offset
    assert dx >= 0 and dy >= 0
    assert rendered.image.width >= image.width + dx and rendered.image.height >= image.height + dy
    if variant.intervention == "none":
        assert rendered.pointer_box is None and rendered.prompt == question
        return
    pointer = rendered.pointer_box
    assert pointer is not None and inside(pointer, rendered.image.size)
    assert dx <= pointer[0] and pointer[2] < dx + image.width and dy <= pointer[1] and pointer[3] < dy + image.height
    if variant.intervention == "full" and question.strip():
        assert rendered.prompt == FULL_PROMPT
        box = rendered.text_box
        assert box is not None and inside(box, rendered.image.size)
        ink = text_ink(rendered, to_rgb(image))
        pad = max(2, font_size(image.size) // 3) // 2  # the white backing box around the text
        assert ink is not None
        assert box[0] - pad <= ink[0] and box[1] - pad <= ink[1]
        assert ink[2] <= box[2] + pad + 1 and ink[3] <= box[3] + pad + 1
