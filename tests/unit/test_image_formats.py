"""Images decode only from an allow-list of formats: EPS, PostScript and PDF files (whatever their names)
are an image error naming the format, and Ghostscript never runs.

A `gs` first on PATH records each time it is started; Pillow itself, asked to load the EPS file
without the allow-list, starts it (the control), so its silence under `load_image` means something.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from pytest_mllm.engine.images import DECODED_FORMATS, ImageError, load_image
from pytest_mllm.sample import ImageRef

OK_PNG = (Path(__file__).resolve().parents[2] / "fixtures" / "bad" / "ok.png").read_bytes()
HOSTILE = {
    "x.png": (b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n%%EOF\n", "a PostScript (EPS/PS)"),
    "x.eps": (b"\xc5\xd0\xd3\xc6" + b"\x00" * 28, "an EPS"),
    "x.ps": (b"%!PS\nshowpage\n", "a PostScript"),
    "x.jpg": (b"%PDF-1.4\n%%EOF\n", "a PDF"),
}
RECORDING_GS = '#!/bin/sh\necho "gs $*" >> "$GS_LOG"\nexit 1\n'


def _run(code: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh Python whose PATH starts with a `gs` that records its invocations in folder/gs.log."""
    shim = folder / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "gs").write_text(RECORDING_GS)
    (shim / "gs").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}", "GS_LOG": str(folder / "gs.log")}
    return subprocess.run([sys.executable, "-c", code], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=120)


def test_eps_ps_and_pdf_are_image_errors_and_ghostscript_never_runs(tmp_path: Path) -> None:
    for name, (content, _) in HOSTILE.items():
        (tmp_path / name).write_bytes(content)
    checks = "\n".join(
        f"try:\n    load_image(ImageRef('path', {name!r}, root=Path('.')))\n    print('decoded {name}')\n"
        f"except ImageError as exc:\n    print(exc)" for name in HOSTILE)
    result = _run("from pathlib import Path\nfrom pytest_mllm.engine.images import ImageError, load_image\n"
                  f"from pytest_mllm.sample import ImageRef\n{checks}\n", tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for line, (name, (_, kind)) in zip(lines, HOSTILE.items()):
        assert f"{name} is {kind} file, not an image format that is decoded here" in line, lines
    assert not (tmp_path / "gs.log").exists()  # no gs process was started

    control = _run("from PIL import Image\nimage = Image.open('x.png')\nprint(image.format)\ntry:\n    image.load()\n"
                   "except Exception:\n    pass\n", tmp_path)
    assert control.stdout.strip() == "EPS"
    assert (tmp_path / "gs.log").read_text().startswith("gs ")  # Pillow alone would have started it


@pytest.mark.parametrize("kind", DECODED_FORMATS)
def test_every_allowed_format_decodes(kind: str, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(OK_PNG)).convert("RGB").save(buffer, format=kind)
    (tmp_path / "image").write_bytes(buffer.getvalue())
    assert load_image(ImageRef("path", "image", root=tmp_path)).size == (24, 24)


def test_a_format_pillow_reads_but_not_allowed_is_named(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    Image.open(io.BytesIO(OK_PNG)).save(buffer, format="ICO")
    (tmp_path / "x.png").write_bytes(buffer.getvalue())
    with pytest.raises(ImageError, match="x.png is an ICO file, not an image format that is decoded here"):
        load_image(ImageRef("path", "x.png", root=tmp_path))
