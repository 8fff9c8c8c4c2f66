"""Decoding a sample's images safely: paths stay inside their root, no decompression bombs."""

from __future__ import annotations

import base64
import binascii
import io
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mllm.sample import ImageRef, Sample

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own default warning limit (about 0.25 GB of RGBA)


class ImageError(Exception):
    """An image is missing, unreadable, outside its data root, or too large."""


def resolve_inside(root: Path, relative: str) -> Path:
    """`root / relative`, refusing any path (absolute, `..`, symlink) that leaves `root`."""
    root = root.resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root):
        raise ImageError(f"image path {relative!r} escapes the data root {root}; keep image paths inside it")
    return candidate


def check_relative(relative: str) -> None:
    """A cheap, lexical check for load time: no absolute path and no `..` out of the root.

    `resolve_inside` repeats the check with symlinks resolved when the image is read.
    """
    normal = posixpath.normpath(relative.replace("\\", "/"))
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../"):
        raise ImageError(f"image path {relative!r} escapes the data root; keep image paths inside it")


def load_image(ref: ImageRef, max_pixels: int = DEFAULT_MAX_PIXELS) -> "Image.Image":
    """Decode `ref` into an RGB Pillow image, checking its size before decoding pixels."""
    from PIL import Image, UnidentifiedImageError

    if ref.kind == "generated":
        assert ref.generator is not None, "a generated ImageRef needs its generator"
        return ref.generator(ref.value).convert("RGB")
    if ref.kind == "path":
        if ref.root is None:
            raise ImageError(f"image {ref.value!r} has no data root to resolve it against")
        path = resolve_inside(ref.root, ref.value)
        if not path.is_file():
            raise ImageError(f"image not found: {path}")
        source: io.BytesIO | Path = path
        label = str(path)
    else:
        try:
            source = io.BytesIO(base64.b64decode(ref.value, validate=False))
        except (binascii.Error, ValueError) as exc:
            raise ImageError(f"image cell is not valid base64: {exc}") from None
        label = "base64 image"
    if max_pixels > (Image.MAX_IMAGE_PIXELS or max_pixels):
        # --mllm-max-image-pixels above Pillow's own limit: lift Pillow's (it would refuse or warn first)
        Image.MAX_IMAGE_PIXELS = max_pixels
    try:
        with Image.open(source) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(
                    f"{label} declares {width}x{height} pixels, over the limit of {max_pixels} "
                    "(a decompression bomb?); raise --mllm-max-image-pixels if it is genuine"
                )
            image.load()
            return image.convert("RGB")
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{label} refused as a decompression bomb: {exc}") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ImageError(f"cannot decode {label}: {exc}") from None


def thumbnail_url(sample: Sample, max_pixels: int) -> str | None:
    """A small JPEG data URL of the sample's first image (None when it has none or it cannot be read)."""
    if not sample.images:
        return None
    try:
        image = load_image(sample.images[0], max_pixels)
    except ImageError:
        return None
    image.thumbnail((160, 160))
    buffer = io.BytesIO()
    image.save(buffer, format="JPEG", quality=80)
    return "data:image/jpeg;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
