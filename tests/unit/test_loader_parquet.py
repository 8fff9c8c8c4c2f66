"""The parquet loader: Hugging Face dataset folders (card configs, splits, subfolders), the column
mapping, bad rows as BadSamples, and images read lazily, one cell at a time."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from PIL import Image  # noqa: E402

from pytest_mllm.engine import images as images_module  # noqa: E402
from pytest_mllm.engine.images import ImageError, load_image  # noqa: E402
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, load_spec  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402
from pytest_mllm.sample import BadSample, Sample  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "hf_parquet" / "lime"
BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "lime.yaml"
IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])


def png(colour: tuple[int, int, int] = (200, 0, 0), size: tuple[int, int] = (8, 6)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, "PNG")
    return buffer.getvalue()


def write(path: Path, rows: list[dict[str, Any]], schema: Any = None, row_group_size: int = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if schema is None:
        schema = pa.schema([("id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
                            ("image", IMAGE)])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=row_group_size)
    return path


def rows(n: int, prefix: str = "q") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "question": f"question {i}?", "answer": "yes" if i % 2 else "no",
             "image": {"bytes": png((i * 20 % 256, 0, 0)), "path": f"{i}.png"}} for i in range(n)]


def spec(tmp_path: Path, **options: Any) -> BenchmarkSpec:
    data_file = options.pop("data_file", None)
    return BenchmarkSpec(path=tmp_path / "bench.yaml", name="bench", loader="parquet", data_file=data_file,
                         loader_options={"columns": {"id": "id"}, **options})


def good(samples: list[Sample | BadSample]) -> list[Sample]:
    return [s for s in samples if isinstance(s, Sample)]


# --- the LIME fixture through the bundled spec ----------------------------------------------------

def test_lime_fixture_through_the_bundled_spec() -> None:
    lime = load_spec(BENCH)
    samples = load_samples(lime, FIXTURE)
    assert all(isinstance(s, Sample) for s in samples) and len(samples) == 18
    by_id = {s.id: s for s in samples}
    assert [s.task for s in samples][::3] == ["chartqa", "infovqa", "textvqa", "textcaps", "ai2d", "pope"]
    ai2d = by_id["ai2d::ai2d_0"]  # answer given as the option's index
    assert ai2d.answer_type == "choice" and ai2d.answer == "B" and ai2d.choices[1] == ("B", "larva")
    assert by_id["textvqa::textvqa_0"].metadata["references"][:4] == ["two"] * 4
    assert by_id["pope::pope_0"].answer_type == "yes_no"
    assert by_id["chartqa::chartqa_0"].answer_type == "open"
    assert by_id["chartqa::chartqa_0"].metadata["references"] == ["100"]  # cells as stored: the cell is the answer
    ref = by_id["textvqa::textvqa_1"].images[0]  # row 7 overall; file 0 holds rows 0-8 in groups of 4
    assert ref.kind == "parquet" and ref.cell == (1, 3, "image", -1)
    assert ref.value == "data/test-00000-of-00002.parquet#7/image" and ref.name == "test-00000-of-00002#7"
    second = by_id["pope::pope_2"].images[0]  # row 8 of the second file
    assert second.value.startswith("data/test-00001-of-00002.parquet#8/") and second.cell == (2, 0, "image", -1)
    assert load_image(second).size == (32, 24)


def test_collection_reads_no_image_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    read_columns: list[list[str]] = []
    original = pq.ParquetFile.read

    def spy(self: Any, columns: Any = None, **kwargs: Any) -> Any:
        read_columns.append(list(columns or []))
        return original(self, columns=columns, **kwargs)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a row group was read at collection")

    monkeypatch.setattr(pq.ParquetFile, "read", spy)
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", refuse)
    load_samples(load_spec(BENCH), FIXTURE)
    assert read_columns and all(columns for columns in read_columns)
    assert not any("image" == c or c.endswith(".bytes") for columns in read_columns for c in columns)
    assert all("image.path" in columns for columns in read_columns)


def test_images_of_one_row_group_are_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "data" / "test-00000-of-00001.parquet", rows(6), row_group_size=3)
    samples = good(load_samples(spec(tmp_path), tmp_path))
    images_module._PARQUET_FILES.clear()
    images_module._PARQUET_CHUNKS.clear()
    calls: list[tuple[int, Any]] = []
    original = pq.ParquetFile.read_row_group

    def spy(self: Any, group: int, columns: Any = None, **kwargs: Any) -> Any:
        calls.append((group, columns))
        return original(self, group, columns=columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", spy)
    pixels = [load_image(s.images[0]).getpixel((0, 0)) for s in samples]
    assert pixels == [(i * 20, 0, 0) for i in range(6)]
    assert calls == [(0, ["image"]), (1, ["image"])]  # one read per row group, image column only
    assert len(images_module._PARQUET_FILES) == 1  # the file's metadata parsed once


# --- finding the files ----------------------------------------------------------------------------

CARD = """---
configs:
- config_name: easy
  data_files:
  - split: test
    path: easy/test-*
  - split: dev
    path: easy/dev-*
- config_name: hard
  data_files: hard/*.parquet
---
# card
"""


def test_card_configs_and_splits(tmp_path: Path) -> None:
    write(tmp_path / "easy" / "test-00000-of-00002.parquet", rows(2, "t"))
    write(tmp_path / "easy" / "test-00001-of-00002.parquet", rows(2, "u"))
    write(tmp_path / "easy" / "dev-00000-of-00001.parquet", rows(1, "d"))
    write(tmp_path / "hard" / "whatever.parquet", rows(3, "h"))
    (tmp_path / "README.md").write_text(CARD)
    with pytest.raises(SpecError, match=r"lists several configs \(easy, hard\); choose one with loader_options.config"):
        load_samples(spec(tmp_path), tmp_path)
    with pytest.raises(SpecError, match="config 'medium'.*its configs: easy, hard"):
        load_samples(spec(tmp_path, config="medium"), tmp_path)
    with pytest.raises(SpecError, match="has splits test, dev; choose one with loader_options.split"):
        load_samples(spec(tmp_path, config="easy"), tmp_path)
    test = load_samples(spec(tmp_path, config="easy", split="test"), tmp_path)
    assert [s.id for s in test] == ["bench::t0", "bench::t1", "bench::u0", "bench::u1"]
    assert [s.id for s in load_samples(spec(tmp_path, config="easy", split="dev"), tmp_path)] == ["bench::d0"]
    with pytest.raises(SpecError, match="no parquet files for split 'validation'.*splits there: test, dev"):
        load_samples(spec(tmp_path, config="easy", split="validation"), tmp_path)
    hard = load_samples(spec(tmp_path, config="hard"), tmp_path)  # a plain pattern: the train split, the only one
    assert len(hard) == 3


def test_folder_without_card_subfolder_config_single_file_and_data_file(tmp_path: Path) -> None:
    write(tmp_path / "data" / "test-00000-of-00001.parquet", rows(2, "a"))
    write(tmp_path / "data" / "validation-00000-of-00001.parquet", rows(1, "v"))
    write(tmp_path / "other" / "test-00000-of-00001-0123456789abcdef.parquet", rows(3, "o"))
    with pytest.raises(SpecError, match="splits test, validation"):
        load_samples(spec(tmp_path, config="data"), tmp_path)
    assert len(load_samples(spec(tmp_path, config="data", split="test"), tmp_path)) == 2
    assert len(load_samples(spec(tmp_path, config="other"), tmp_path)) == 3
    with pytest.raises(SpecError, match="config 'nope'"):
        load_samples(spec(tmp_path, config="nope"), tmp_path)
    single = tmp_path / "other" / "test-00000-of-00001-0123456789abcdef.parquet"
    samples = good(load_samples(spec(tmp_path), single))
    assert len(samples) == 3 and load_image(samples[2].images[0]).size == (8, 6)
    assert len(load_samples(spec(tmp_path, data_file="data/valid*.parquet"), tmp_path)) == 1
    with pytest.raises(SpecError, match="no parquet file matches data.file 'data/nothing-\\*'"):
        load_samples(spec(tmp_path, data_file="data/nothing-*"), tmp_path)


def test_an_empty_folder_and_unknown_options(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no parquet files in"):
        load_samples(spec(tmp_path), tmp_path)
    write(tmp_path / "test.parquet", rows(1))
    with pytest.raises(SpecError, match="loader_options.splits': unknown option of the parquet loader"):
        load_samples(spec(tmp_path, splits="test"), tmp_path)
    with pytest.raises(SpecError, match="loader_options.columns.label': unknown key"):
        load_samples(spec(tmp_path, columns={"label": "answer"}), tmp_path)


# --- columns and rows -----------------------------------------------------------------------------

def test_a_wrong_column_name_names_the_file_and_the_columns(tmp_path: Path) -> None:
    path = write(tmp_path / "test.parquet", rows(2))
    with pytest.raises(SpecError) as info:
        load_samples(spec(tmp_path, columns={"id": "id", "task": "category"}), tmp_path)
    assert str(info.value) == (f"{path}: no column 'category' (loader_options.columns.task of "
                               f"{tmp_path / 'bench.yaml'}); columns: id, question, answer, image")
    with pytest.raises(SpecError, match="column 'question' \\(loader_options.columns.image\\) holds string, not images"):
        load_samples(spec(tmp_path, columns={"id": "id", "image": "question"}), tmp_path)


def test_bad_rows_error_alone_naming_file_row_and_field(tmp_path: Path) -> None:
    data = rows(5)
    data[1]["question"] = ""
    data[2]["image"] = None
    data[3]["answer"] = None
    path = write(tmp_path / "test.parquet", data)
    samples = load_samples(spec(tmp_path), tmp_path)
    bad = {s.id: s.error for s in samples if isinstance(s, BadSample)}
    assert bad == {"bench::q1": f"{path}: row 1: field 'question': empty question cell",
                   "bench::q2": f"{path}: row 2: field 'image': the image cell is empty"}
    assert [s.id for s in good(samples)] == ["bench::q0", "bench::q3", "bench::q4"]
    # a missing answer is scored as the reference scores its TSV twin's NaN: as the text "nan"
    assert [s.answer for s in good(samples) if s.id == "bench::q3"] == ["nan"]


def test_a_corrupt_image_or_a_missing_file_errors_when_its_test_runs(tmp_path: Path) -> None:
    data = rows(3)
    data[1]["image"] = {"bytes": b"not a png", "path": None}
    data[2]["image"] = {"bytes": None, "path": "elsewhere/2.png"}
    path = write(tmp_path / "test.parquet", data)
    samples = good(load_samples(spec(tmp_path), tmp_path))
    assert len(samples) == 3
    with pytest.raises(ImageError, match=f"cannot decode {path}: row 1, field 'image'"):
        load_image(samples[1].images[0])
    with pytest.raises(ImageError, match="row 2, field 'image': the cell has no bytes, only the path 'elsewhere/2.png'"):
        load_image(samples[2].images[0])
    path.unlink()
    with pytest.raises(ImageError, match=f"parquet file not found: {path} \\(image of row 0, field 'image'\\)"):
        load_image(samples[0].images[0])


def test_multi_image_rows_choices_hint_task_and_category_columns(tmp_path: Path) -> None:
    schema = pa.schema([("qid", pa.int64()), ("subtask", pa.string()), ("domain", pa.string()),
                        ("question", pa.string()), ("hint", pa.string()), ("A", pa.string()), ("B", pa.string()),
                        ("C", pa.string()), ("answer", pa.string()), ("images", pa.list_(IMAGE))])
    data = [{"qid": 1, "subtask": "compare", "domain": "perception", "question": "Which is redder?", "hint": "look",
             "A": "left", "B": "right", "C": None, "answer": "B",
             "images": [{"bytes": png((10, 0, 0)), "path": None}, {"bytes": png((250, 0, 0)), "path": None}]},
            {"qid": 2, "subtask": "compare", "domain": "perception", "question": "Same?", "hint": None,
             "A": "yes", "B": "no", "C": "maybe", "answer": "D", "images": [{"bytes": png(), "path": None}]},
            {"qid": 3, "subtask": "count", "domain": "perception", "question": "How many?", "hint": None,
             "A": "1", "B": "2", "C": None, "answer": "A", "images": []}]
    write(tmp_path / "test.parquet", data, schema)
    columns = {"id": "qid", "task": "subtask", "category": "domain", "hint": "hint", "choices": ["A", "B", "C"],
               "image": "images"}
    samples = load_samples(spec(tmp_path, columns=columns), tmp_path)
    first, second, third = samples
    assert isinstance(first, Sample) and first.id == "compare::1" and first.category == "perception"
    assert first.choices == (("A", "left"), ("B", "right")) and first.answer == "B"
    assert first.metadata["hint"] == "look"
    assert [ref.cell for ref in first.images] == [(0, 0, "images", 0), (0, 0, "images", 1)]
    assert [load_image(ref).getpixel((0, 0)) for ref in first.images] == [(10, 0, 0), (250, 0, 0)]
    # an answer that is no option's letter is scored, as the reference scores it: never right
    assert isinstance(second, Sample) and second.answer == "D" and second.answer_type == "choice"
    assert isinstance(third, BadSample) and third.task == "count" and "field 'images': the list of images is empty" in third.error


def test_a_list_answer_column_gives_the_references(tmp_path: Path) -> None:
    schema = pa.schema([("question", pa.string()), ("answers", pa.list_(pa.string())), ("image", pa.binary())])
    write(tmp_path / "test.parquet", [{"question": "What?", "answers": ["cat", "kitten"], "image": png()}], schema)
    sample, = load_samples(BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="parquet",
                                         loader_options={"task": "vqa", "columns": {"answer": "answers"}}), tmp_path)
    assert isinstance(sample, Sample) and sample.id == "vqa::0" and sample.answer == "cat"
    assert sample.metadata["references"] == ["cat", "kitten"] and sample.answer_type == "open"
    assert load_image(sample.images[0]).size == (8, 6)  # a plain binary image column


def test_row_positions_run_across_a_splits_files(tmp_path: Path) -> None:
    """metadata["row"] counts rows over the split's files in order: lmms-eval's doc_id for replay."""
    write(tmp_path / "test-00000-of-00002.parquet", rows(3, "a"))
    write(tmp_path / "test-00001-of-00002.parquet", rows(2, "b"))
    samples = load_samples(spec(tmp_path), tmp_path)
    assert [s.id for s in samples] == ["bench::a0", "bench::a1", "bench::a2", "bench::b0", "bench::b1"]
    assert [s.metadata["row"] for s in samples] == [0, 1, 2, 3, 4]
