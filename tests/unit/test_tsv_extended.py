"""VLMEvalKit's TSV as its files really are: multi-image cells, image_path columns (one path or a
list), index references to multi-image rows, options up to I, hints and the split column.

Expected images, options, hints and splits come from VLMEvalKit reading the same fixture
(fixtures/tsv_extended/vlmevalkit_reading.json: repository open-compass/VLMEvalKit, commit
e8e78f05f3080fe28154f2130321f17951c3be94, `vlmeval/dataset/image_base.py` ImageBaseDataset
and dump_image, `vlmeval/dataset/utils/multiple_choice.py` build_choices; command in
fixtures/tsv_extended/README.md).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_mllm.engine.images import load_image
from pytest_mllm.engine.spec import SpecError, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.loaders.tsv import cell_list
from pytest_mllm.sample import BadSample, Sample

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "tsv_extended"
REFERENCE = json.loads((FIXTURE / "vlmevalkit_reading.json").read_text(encoding="utf-8"))


def _load(tmp_path: Path, options: str = "", name: str = "bench") -> list[Sample | BadSample]:
    spec = tmp_path / f"{name}.yaml"  # a file per spec: specs are cached by path
    spec.write_text(f"name: ext\nloader: tsv\nparser: choice\ndata: {{root: {FIXTURE}, file: Extended.tsv}}\n"
                    f"{options}", encoding="utf-8")
    loaded = load_spec(spec)
    return load_samples(loaded, loaded.resolve_data_root(None))


def _pixels(sample: Sample) -> list[str]:
    return [hashlib.md5(load_image(ref).convert("RGB").tobytes()).hexdigest() for ref in sample.images]


@pytest.fixture
def by_index(tmp_path: Path) -> dict[str, Sample | BadSample]:
    samples = _load(tmp_path)
    return {s.id.split("::")[1]: s for s in samples}


def test_images_options_hints_and_splits_are_vlmevalkits(by_index: dict[str, Sample | BadSample]) -> None:
    for key, expected in REFERENCE.items():
        sample = by_index[key.split(":")[1]]
        assert isinstance(sample, Sample), sample
        assert _pixels(sample) == expected["pixels_md5"], key  # every image, in order
        assert dict(sample.choices) == expected["choices"], key
        assert (sample.metadata["hint"] or None) == expected["hint"], key
        assert sample.split == expected["split"], key


def test_multi_image_rows_keep_their_image_path_names_and_references_share_them(
        by_index: dict[str, Sample | BadSample]) -> None:
    two, three, five = by_index["2"], by_index["3"], by_index["5"]
    assert isinstance(two, Sample) and isinstance(three, Sample) and isinstance(five, Sample)
    assert [r.name for r in two.images] == REFERENCE["a2:2"]["image_files"]  # image_path names the images
    assert [r.value for r in three.images] == [r.value for r in two.images] and len(three.images) == 2
    assert [(r.kind, r.value) for r in five.images] == [("path", p) for p in REFERENCE["b:5"]["image_files"]]
    assert by_index["1"].answer == "G" and len(by_index["1"].choices) == 9  # type: ignore[union-attr]
    assert [s.metadata["row"] for s in by_index.values() if isinstance(s, Sample)] == [0, 1, 2, 3, 4]


def test_bad_rows_error_alone_naming_file_row_and_field(by_index: dict[str, Sample | BadSample]) -> None:
    bad = {k: s for k, s in by_index.items() if isinstance(s, BadSample)}
    assert sorted(bad) == ["6", "7"]
    assert f"{FIXTURE / 'Extended.tsv'}:7: field 'image': '99' names no row holding image data" in bad["6"].error
    assert f"{FIXTURE / 'Extended.tsv'}:8: field 'image_path':" in bad["7"].error and "escapes" in bad["7"].error


def test_the_split_option_keeps_one_split(tmp_path: Path) -> None:
    samples = _load(tmp_path, "loader_options: {split: dev}\n", "dev")
    assert [s.id for s in samples] == ["ext::1", "ext::2"]
    assert all(isinstance(s, Sample) and s.split == "dev" for s in samples)
    with pytest.raises(SpecError, match="no row has split 'val'.*splits present: 'dev', 'test'"):
        _load(tmp_path, "loader_options: {split: val}\n", "val")


def test_split_tasks_makes_each_split_a_task_and_a_file_without_splits_one(tmp_path: Path) -> None:
    """VLMEvalKit reports each split apart: with `split_tasks` the split cell is the task; a file without a split
    column is one task, the benchmark's (a catalogue spec's setting for every VLMEvalKit TSV)."""
    samples = _load(tmp_path, "loader_options: {split_tasks: true}\n", "split_tasks")
    assert sorted({s.task for s in samples}) == ["dev", "test"]
    assert all(s.task == s.split for s in samples if isinstance(s, Sample))
    plain = tmp_path / "NoSplit.tsv"
    plain.write_text("index\tquestion\tA\tB\tanswer\timage_path\n0\tWhich?\tx\ty\tA\ta.png\n", encoding="utf-8")
    spec = tmp_path / "nosplit.yaml"
    spec.write_text(f"name: nosplit\nloader: tsv\nparser: choice\ndata: {{root: {tmp_path}, file: NoSplit.tsv}}\n"
                    "loader_options: {split_tasks: true}\n", encoding="utf-8")
    loaded = load_spec(spec)
    assert [s.id for s in load_samples(loaded, loaded.resolve_data_root(None))] == ["nosplit::0"]


@pytest.mark.parametrize("cell", ["[1, 2]", "[]", "[a, b]", "[__import__('os')]"])
def test_a_list_cell_that_is_not_a_list_of_strings_is_refused(cell: str) -> None:
    with pytest.raises(ValueError, match="field 'image'"):
        cell_list(cell, "image")


def test_a_bad_multi_image_cell_errors_alone(tmp_path: Path) -> None:
    header, first = (FIXTURE / "Extended.tsv").read_text(encoding="utf-8").splitlines()[:2]
    cells = first.split("\t")
    image = header.split("\t").index("image")
    broken = ["8", *cells[1:image], str([cells[image], "not-an-image"]), *cells[image + 1:]]
    root = tmp_path / "data"
    root.mkdir()
    (root / "Extended.tsv").write_text("\n".join([header, first, "\t".join(broken)]) + "\n", encoding="utf-8")
    spec = tmp_path / "broken.yaml"
    spec.write_text(f"name: ext\nloader: tsv\nparser: choice\ndata: {{root: {root}, file: Extended.tsv}}\n")
    samples = load_samples(load_spec(spec), root)
    assert isinstance(samples[0], Sample) and isinstance(samples[1], BadSample)
    assert f"{root / 'Extended.tsv'}:3: field 'image': a list item is too short" in samples[1].error


def test_quoted_cells_read_as_pandas_reads_them_and_rows_keep_their_first_line(tmp_path: Path) -> None:
    header, first = (FIXTURE / "Extended.tsv").read_text(encoding="utf-8").splitlines()[:2]
    names = header.split("\t")
    cells = first.split("\t")
    cells[names.index("hint")] = '"A hint\tover two\nlines, with ""quotes"""'
    later = ["9", *first.split("\t")[1:]]
    later[names.index("image")] = "404"  # a bad row after the quoted one: its error names its own line
    root = tmp_path / "data"
    root.mkdir()
    (root / "Extended.tsv").write_text("\n".join([header, "\t".join(cells), "\t".join(later)]) + "\n")
    spec = tmp_path / "quoted.yaml"
    spec.write_text(f"name: ext\nloader: tsv\nparser: choice\ndata: {{root: {root}, file: Extended.tsv}}\n")
    samples = load_samples(load_spec(spec), root)
    assert isinstance(samples[0], Sample) and samples[0].metadata["hint"] == 'A hint\tover two\nlines, with "quotes"'
    assert isinstance(samples[1], BadSample) and f"{root / 'Extended.tsv'}:4: field 'image'" in samples[1].error


def test_an_unclosed_quote_is_named(tmp_path: Path) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (root / "Extended.tsv").write_text('index\tquestion\tanswer\timage_path\n1\t"never closed\tYes\ta.png\n')
    spec = tmp_path / "unclosed.yaml"
    spec.write_text(f"name: ext\nloader: tsv\ndata: {{root: {root}, file: Extended.tsv}}\n")
    with pytest.raises(SpecError, match="Extended.tsv:2: not a readable TSV"):
        load_samples(load_spec(spec), root)
