"""Decoding a sample's images safely: paths stay inside their root, no decompression bombs."""

from __future__ import annotations

import base64
import binascii
import io
import os
import posixpath
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.sample import ImageRef, Sample

if TYPE_CHECKING:
    from PIL import Image

DEFAULT_MAX_PIXELS = 89_478_485  # Pillow's own default warning limit (about 0.25 GB of RGBA)
DECODED_BUDGET_PIXELS = 32_000_000  # decoded images `DecodedImages` keeps (about 96 MB of RGB)


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
    elif ref.kind == "parquet":
        data, label = parquet_image_bytes(ref)
        source = io.BytesIO(data)
    elif ref.kind == "tsv":
        data, label = tsv_image_bytes(ref)
        source = io.BytesIO(data)
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
        with Image.open(source, formats=DECODED_FORMATS) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise ImageError(
                    f"{label} declares {width}x{height} pixels, over the limit of {max_pixels} "
                    "(a decompression bomb?); raise --mllm-max-image-pixels if it is genuine"
                )
            image.load()
            return image.convert("RGB")
    except ImageError:
        raise
    except Image.DecompressionBombError as exc:
        raise ImageError(f"{label} refused as a decompression bomb: {exc}") from None
    except UnidentifiedImageError as exc:
        kind = _other_format(source)
        if kind is not None:
            raise ImageError(f"{label} is {kind} file, not an image format that is decoded here "
                             f"({', '.join(DECODED_FORMATS)}); convert it to PNG") from None
        raise ImageError(f"cannot decode {label}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - whatever a decoder raises on a malformed file is this image's error
        raise ImageError(f"cannot decode {label}: {exc}") from None


class DecodedImages:
    """`load_image`, memoised per image reference for models that only read their images (`Model.reads_images`):
    the samples that share an image share one decoding. At most `budget_pixels` pixels are kept (least recently
    used first out); a file's reference counts as new once its size or modification time changes."""

    def __init__(self, max_pixels: int = DEFAULT_MAX_PIXELS, budget_pixels: int = DECODED_BUDGET_PIXELS) -> None:
        self.max_pixels = max_pixels
        self.budget_pixels = budget_pixels
        self._images: OrderedDict[tuple[Any, ...], Image.Image] = OrderedDict()
        self._held = 0
        self._lock = threading.Lock()

    def load(self, ref: ImageRef) -> Image.Image:
        """The decoded image of `ref` (ImageError as `load_image` raises it)."""
        key: tuple[Any, ...] = (ref,)
        if ref.kind == "path" and ref.root is not None:
            try:
                stat = os.stat(ref.root / ref.value)
            except OSError:
                return load_image(ref, self.max_pixels)  # its error, worded by load_image
            key = (ref, stat.st_size, stat.st_mtime_ns)
        with self._lock:
            image = self._images.get(key)
            if image is not None:
                self._images.move_to_end(key)
                return image
        image = load_image(ref, self.max_pixels)
        pixels = image.width * image.height
        with self._lock:
            if key not in self._images and pixels <= self.budget_pixels:
                self._images[key] = image
                self._held += pixels
                while self._held > self.budget_pixels:
                    _, old = self._images.popitem(last=False)
                    self._held -= old.width * old.height
        return image


# The formats Pillow may decode: the ones benchmark images come in, read by Pillow's own code. Any other
# (EPS, PS and PDF above all, which Pillow hands to Ghostscript, an external program) is refused.
DECODED_FORMATS = ("PNG", "JPEG", "WEBP", "GIF", "BMP", "TIFF")

# What a refused file is, told from its first bytes (never by handing it to a decoder)
_SIGNATURES = (
    (b"%PDF-", "a PDF"), (b"%!PS-Adobe", "a PostScript (EPS/PS)"), (b"%!", "a PostScript"),
    (b"\xc5\xd0\xd3\xc6", "an EPS"), (b"<?xml", "an XML (SVG?)"), (b"<svg", "an SVG"),
    (b"\x00\x00\x01\x00", "an ICO"), (b"8BPS", "a Photoshop (PSD)"), (b"icns", "an ICNS"),
    (b"\x00\x00\x00\x0cjP  ", "a JPEG 2000"), (b"\xff\x4f\xff\x51", "a JPEG 2000"), (b"DDS ", "a DDS"),
    (b"qoif", "a QOI"), (b"\x0a\x05\x01", "a PCX"),
)


def _other_format(source: io.BytesIO | Path) -> str | None:
    """"a PDF", "an EPS" … when the file's first bytes tell a format that is not decoded here."""
    try:
        if isinstance(source, Path):
            with open(source, "rb") as handle:
                head = handle.read(16)
        else:
            head = source.getvalue()[:16]
    except OSError:
        return None
    for signature, kind in _SIGNATURES:
        if head.startswith(signature):
            return kind
    return None


_PARQUET_FILES: dict[Path, Any] = {}  # path → opened ParquetFile (its metadata parsed once per process)
_PARQUET_CHUNKS: dict[tuple[Path, int, str], Any] = {}  # the last column chunks read: a batch shares them
_CHUNKS_KEPT = 2


def _parquet_file(path: Path) -> Any:
    opened = _PARQUET_FILES.get(path)
    if opened is None:
        import pyarrow.parquet as pq

        opened = _PARQUET_FILES[path] = pq.ParquetFile(path)
    return opened


def parquet_image_bytes(ref: ImageRef) -> tuple[bytes, str]:
    """The encoded bytes of a "parquet" ImageRef's cell, and a label naming file, row and column.

    Reads only that column of that row group (kept for the next rows of a batch); never the
    other images of the file.
    """
    import pyarrow as pa

    if ref.root is None or ref.cell is None:
        raise ImageError(f"parquet image {ref.value!r} has no data root or cell")
    group, row, column, item = ref.cell
    path = resolve_inside(ref.root, ref.value.split("#", 1)[0])
    number = ref.value.split("#", 1)[1].split("/", 1)[0] if "#" in ref.value else "?"
    label = f"{path}: row {number}, field {column!r}" + (f" image {item}" if item >= 0 else "")
    if not path.is_file():
        raise ImageError(f"parquet file not found: {path} (image of row {number}, field {column!r})")
    key = (path, group, column)
    try:
        chunk = _PARQUET_CHUNKS.get(key)
        if chunk is None:
            chunk = _parquet_file(path).read_row_group(group, columns=[column]).column(0)
            _PARQUET_CHUNKS[key] = chunk
            while len(_PARQUET_CHUNKS) > _CHUNKS_KEPT:
                del _PARQUET_CHUNKS[next(iter(_PARQUET_CHUNKS))]
        cell = chunk[row].as_py()
    except (OSError, IndexError, KeyError, pa.ArrowException) as exc:
        _PARQUET_FILES.pop(path, None)
        raise ImageError(f"{label}: cannot read the image cell (row group {group}): {exc}") from None
    if item >= 0:
        if not isinstance(cell, list) or item >= len(cell):
            raise ImageError(f"{label}: the cell holds no image {item}")
        cell = cell[item]
    if isinstance(cell, dict):
        data = cell.get("bytes")
        if not data and cell.get("path"):
            raise ImageError(f"{label}: the cell has no bytes, only the path {cell['path']!r} "
                             "(an image stored outside the parquet file is not supported)")
        cell = data
    if not cell:
        raise ImageError(f"{label}: the image cell is empty")
    return bytes(cell), label


def tsv_image_bytes(ref: ImageRef) -> tuple[bytes, str]:
    """The decoded bytes of a "tsv" ImageRef (only its base64 text is read from the file), and a label
    naming file, line and field."""
    if ref.root is None or ref.cell is None:
        raise ImageError(f"TSV image {ref.value!r} has no data root or cell")
    offset, length, column, item = ref.cell
    relative, _, where = ref.value.rpartition("#")
    path = resolve_inside(ref.root, relative)
    label = f"{path}:{where.split('[', 1)[0]}: field {column!r}" + (f" image {item}" if item >= 0 else "")
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            text = handle.read(length)
    except OSError as exc:
        raise ImageError(f"{label}: cannot read the image cell: {exc}") from None
    if len(text) != length or not text.isascii() or any(c in text for c in b"\t\r\n"):
        raise ImageError(f"{label}: the file changed since it was collected (the cell's bytes are not there)")
    try:
        return base64.b64decode(text, validate=False), label
    except (binascii.Error, ValueError) as exc:
        raise ImageError(f"{label}: not valid base64: {exc}") from None


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
