"""The parquet loader's row options: `where` keeps some rows (SEED-Bench's image questions among its
video ones), `answers` maps answer cells (HallusionBench's 1/0), `columns.id` as a list joins
cells into an id (HallusionBench's index); `options_in_question` excludes a choices column."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from pytest_mllm.engine.spec import BenchmarkSpec, SpecError  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402
from pytest_mllm.sample import BadSample, Sample  # noqa: E402

IMAGE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
SCHEMA = pa.schema([("kind", pa.string()), ("set", pa.int64()), ("q", pa.string()), ("question", pa.string()),
                    ("answer", pa.string()), ("image", IMAGE)])


def _root(tmp_path: Path) -> Path:
    rows: list[dict[str, Any]] = [
        {"kind": "image", "set": 1, "q": "0", "question": "a?", "answer": "1", "image": {"bytes": b"x", "path": None}},
        {"kind": "video", "set": 1, "q": "1", "question": "b?", "answer": "0", "image": None},
        {"kind": "image", "set": 2, "q": "", "question": "c?", "answer": "0", "image": {"bytes": b"x", "path": None}},
        {"kind": "image", "set": 2, "q": "1", "question": "d?", "answer": "0", "image": {"bytes": b"x", "path": None}},
    ]
    path = tmp_path / "data" / "test-00000-of-00001.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMA), path, row_group_size=2)
    return tmp_path


def _load(tmp_path: Path, **options: Any) -> list[Sample | BadSample]:
    spec = BenchmarkSpec(path=tmp_path / "bench.yaml", name="bench", loader="parquet", loader_options=options)
    return load_samples(spec, _root(tmp_path))


def test_where_keeps_matching_rows_and_row_numbers_count_every_row(tmp_path: Path) -> None:
    samples = _load(tmp_path, where={"kind": "image", "set": [2]},
                    columns={"id": ["kind", "set", "q"]}, answers={"1": "Yes", "0": "No"})
    assert [type(s).__name__ for s in samples] == ["Sample", "Sample"]
    empty_part, kept = samples  # an empty cell is an empty part, as in HallusionBench's index "VD__1_4_0_0"
    assert isinstance(empty_part, Sample) and empty_part.id == "bench::image_2_" and empty_part.metadata["row"] == 2
    assert isinstance(kept, Sample) and kept.id == "bench::image_2_1" and kept.metadata["row"] == 3
    assert (kept.answer, kept.answer_type) == ("No", "yes_no")


def test_without_where_every_row_is_a_sample(tmp_path: Path) -> None:
    samples = _load(tmp_path, columns={"id": "question"})
    assert [s.metadata["row"] for s in samples if isinstance(s, Sample)] == [0, 2, 3]  # row 1: no image
    assert [s.answer for s in samples if isinstance(s, Sample)] == ["1", "0", "0"]  # no answers: cells as written


@pytest.mark.parametrize(("options", "message"), [
    ({"where": {"missing": "x"}}, r"no column 'missing' \(loader_options.where"),
    ({"where": {"kind": []}}, r"loader_options.where.kind': \[\] must be a value or a non-empty list"),
    ({"where": ["kind"]}, "loader_options.where' must map column names"),
    ({"answers": ["1"]}, "loader_options.answers' must map answer cells"),
    ({"columns": {"id": []}}, r"loader_options.columns.id': \[\] must be a column name or a list of them"),
    ({"options_in_question": True, "columns": {"choices": ["q"]}}, "from the question or from columns.choices"),
    ({"options_in_question": "yes"}, "options_in_question' must be true or false"),
])
def test_bad_row_options_are_spec_errors(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        _load(tmp_path, **options)
