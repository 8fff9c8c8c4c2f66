"""Fonts for the rendered question text, found through a fixed chain of fallbacks.

Each VRP font option resolves to the first of these that can be found:

| option | 1st: Liberation (metric-compatible)  | 2nd: DejaVu       | 3rd                         |
|--------|--------------------------------------|-------------------|-----------------------------|
| arial  | LiberationSans-Regular.ttf           | DejaVuSans.ttf    | Pillow's `load_default(size)` |
| times  | LiberationSerif-Regular.ttf          | DejaVuSerif.ttf   | Pillow's `load_default(size)` |

Liberation Sans/Serif (Debian `fonts-liberation`) share Arial's and Times New Roman's
metrics; DejaVu ships with most Linux systems; Pillow's scalable default font is always
there. Files are looked up by name (case-insensitively) under `FONT_DIRS`, searched
recursively; the environment variable `PYTEST_MLLM_FONT_DIR` (one folder, or several
joined by the path separator) replaces those folders — point it at an empty folder to
force Pillow's default font, or at a folder of vendored fonts for reproducible pixels.
The font actually used is reported as its file path, or `PILLOW_DEFAULT`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from PIL import ImageFont

ENV_VAR = "PYTEST_MLLM_FONT_DIR"
PILLOW_DEFAULT = "pillow-default"
CHAINS: dict[str, tuple[str, ...]] = {
    "arial": ("LiberationSans-Regular.ttf", "DejaVuSans.ttf"),
    "times": ("LiberationSerif-Regular.ttf", "DejaVuSerif.ttf"),
}
FONT_DIRS: tuple[Path, ...] = (
    Path("/usr/share/fonts"),
    Path("/usr/local/share/fonts"),
    Path.home() / ".local/share/fonts",
    Path.home() / ".fonts",
    Path("/Library/Fonts"),
    Path("/System/Library/Fonts"),
    Path("C:/Windows/Fonts"),
)


def font_dirs() -> tuple[Path, ...]:
    """The folders searched for font files: `PYTEST_MLLM_FONT_DIR` if set, else `FONT_DIRS`."""
    override = os.environ.get(ENV_VAR)
    if override:
        return tuple(Path(p).expanduser() for p in override.split(os.pathsep) if p)
    return FONT_DIRS


@functools.lru_cache(maxsize=32)
def _index(dirs: tuple[Path, ...]) -> dict[str, Path]:
    """Lower-cased file name → path of every file under `dirs`; earlier folders win."""
    found: dict[str, Path] = {}
    for root in dirs:
        for folder, subfolders, files in os.walk(root):
            subfolders.sort()
            for name in sorted(files):
                found.setdefault(name.lower(), Path(folder) / name)
    return found


def find_font_file(family: str) -> Path | None:
    """The first file of `family`'s chain ("arial" or "times") found in `font_dirs()`."""
    index = _index(font_dirs())
    for name in CHAINS[family]:
        if name.lower() in index:
            return index[name.lower()]
    return None


def load_font(family: str, size: int) -> tuple[ImageFont.FreeTypeFont, str]:
    """A `size`-pixel font for `family` and what it is: its file path or `PILLOW_DEFAULT`.

    Text is laid out with FreeType's basic engine (no Raqm), so pixels do not depend on
    whether libraqm is installed.
    """
    if family not in CHAINS:
        raise ValueError(f"unknown VRP font {family!r}; choose one of {', '.join(CHAINS)}")
    path = find_font_file(family)
    if path is not None:
        return _truetype(str(path), size), str(path)
    font = ImageFont.load_default(size=size)
    if not isinstance(font, ImageFont.FreeTypeFont):
        raise RuntimeError("Pillow was built without FreeType; it cannot draw scalable text")
    return font, PILLOW_DEFAULT


@functools.lru_cache(maxsize=64)
def _truetype(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size, layout_engine=ImageFont.Layout.BASIC)
