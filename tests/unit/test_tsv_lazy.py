"""TSV image cells stay on disk: collection keeps each image's byte span, the test reads it.

The images decode to the same pixels, and hash to the same cache digest, as the base64 text held
in memory did; quoted cells, non-ASCII text, CRLF line ends and multi-image list cells (quoted
as pandas writes them) keep their spans right.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from pytest_mllm.engine.cache import image_digest
from pytest_mllm.engine.images import ImageError, load_image
from pytest_mllm.engine.spec import load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.sample import ImageRef, Sample

HEADER = ["index", "question", "hint", "A", "B", "answer", "image"]


def _b64(colour: tuple[int, int, int]) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (12, 10), colour).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


RED, GREEN, BLUE = _b64((250, 0, 0)), _b64((0, 250, 0)), _b64((0, 0, 250))


def _load(tmp_path: Path, lines: list[str], newline: str = "\n") -> list[Sample]:
    root = tmp_path / "data"
    root.mkdir(exist_ok=True)
    (root / "B.tsv").write_bytes((newline.join(["\t".join(HEADER), *lines]) + newline).encode("utf-8"))
    spec = tmp_path / "b.yaml"
    spec.write_text(f"name: b\nloader: tsv\nparser: choice\ndata: {{root: {root}, file: B.tsv}}\n", encoding="utf-8")
    samples = load_samples(load_spec(spec), root)
    assert all(isinstance(s, Sample) for s in samples), samples
    return samples  # type: ignore[return-value]


def _colours(sample: Sample) -> list[tuple[int, int, int]]:
    return [load_image(ref).getpixel((0, 0)) for ref in sample.images]  # type: ignore[misc]


def test_images_are_byte_spans_read_when_used_with_the_in_memory_digest(tmp_path: Path) -> None:
    samples = _load(tmp_path, [f"1\tWhich colour?\t\tred\tgreen\tA\t{RED}",
                               f"2\tGröße, naïve?\tÜber\tred\tgreen\tB\t{GREEN}",  # non-ASCII before the image
                               "3\tAnd this one?\t\tred\tgreen\tA\t1"])  # a reference to row 1
    assert [ref.kind for s in samples for ref in s.images] == ["tsv"] * 3
    assert all(len(ref.value) < 20 for s in samples for ref in s.images)  # no image data held
    assert [_colours(s) for s in samples] == [[(250, 0, 0)], [(0, 250, 0)], [(250, 0, 0)]]
    assert samples[2].images[0] == samples[0].images[0]
    for sample, text in zip(samples, (RED, GREEN, RED)):
        assert image_digest(sample.images[0]) == image_digest(ImageRef("base64", text))  # cache keys unchanged


def test_quoted_cells_crlf_and_quoted_multi_image_lists_keep_their_spans(tmp_path: Path) -> None:
    quoted_list = '"[""' + GREEN + '"", ""' + BLUE + '""]"'  # pandas quotes a cell holding '"'
    samples = _load(tmp_path, ['1\tQ?\t"a hint\tover\r\ntwo lines"\tred\tgreen\tA\t' + RED,
                               f"2\tQ?\t\tred\tgreen\tB\t{quoted_list}",
                               f"3\tQ?\t\tred\tgreen\tB\t['{BLUE}', '{RED}']"], newline="\r\n")
    assert samples[0].metadata["hint"] == "a hint\tover\r\ntwo lines"
    assert [_colours(s) for s in samples] == [[(250, 0, 0)], [(0, 250, 0), (0, 0, 250)], [(0, 0, 250), (250, 0, 0)]]
    assert [ref.value for ref in samples[1].images] == ["B.tsv#4[0]", "B.tsv#4[1]"]


def test_a_file_changed_after_collection_is_an_image_error_naming_file_and_line(tmp_path: Path) -> None:
    [sample] = _load(tmp_path, [f"1\tQ?\t\tred\tgreen\tA\t{RED}"])
    path = tmp_path / "data" / "B.tsv"
    path.write_text("index\tquestion\n", encoding="utf-8")
    with pytest.raises(ImageError, match=f"{path}:2: field 'image': the file changed"):
        load_image(sample.images[0])
