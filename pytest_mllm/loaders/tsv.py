"""The TSV-with-base64-images format of MMBench, MMT-Bench, SEED, POPE, MMMU … (VLMEvalKit's).

Columns: index, question, optional hint, option columns A … Z, answer, category,
l2-category, split, and image (base64 bytes) and/or image_path. As VLMEvalKit reads them:

- an `image` cell of 64 characters or fewer names another row's index: that row's image(s);
- an `image` cell written as a list (`['<base64>', '<base64>']`, a Python literal) holds a
  multi-image question's images, in order;
- `image_path` (a path or such a list) names the images: with image data they are its file
  names (labels), without it they are files under the data root (kept inside it);
- `split` is the sample's split; `loader_options.split` keeps the rows whose cell is that split as
  pandas reads it (whitespace kept: "validation " is another split);
- a cell starting with `"` is quoted, as pandas reads it: tabs and line breaks inside are text.

Option, answer, category and l2-category cells are read as VLMEvalKit's pandas reads them
(`loaders/cells.py`): pandas' missing-value words ("None", "NA", "nan", …) are missing, whitespace
is kept, an all-number column is numbers; the spec's `deviations` (`keep_na_words`, `strip_cells`)
read them otherwise. An answer that is not one of the row's options (RealWorldQA's "Uphill",
an answer whose option cell is missing) is scored, as there, and is never right. A UTF-8
byte-order mark before the header is skipped, as pandas skips it.
A `task_column` cell is the task as pandas reads it (whitespace kept). `split_tasks: true` makes the
`split` cell the task where the file has that column (VLMEvalKit reports each split apart), the fixed
`task` (default: the benchmark's name) where it has none or the cell is empty. `task_names` lists the tasks
the reference scores: a row naming another (MMMU's subject "Math ", a folder MMMU's scripts never
read) is that row's error. `question_type_column` names a column whose cell "multiple-choice" makes
the row a choice question and any other an open one (its options neither shown nor read), as MMMU's
code decides; a multiple-choice row without options is that row's error (MMMU's code cannot score it).
MMBench's circular passes of a question are rows `index + k·1_000_000` with the options
rotated; every pass of a multiple-choice question shares the `pair_group` "<task>::<index mod
1_000_000>", which `scoring/circular.py` scores together (CircularEval).
Each sample's `metadata["row"]` is its row's position (from 0) among the rows read, the
`doc_id` lmms-eval gives the same row.

Collection reads the file once and keeps no image data: an image is an `ImageRef` of kind "tsv"
holding the byte span of its base64 text in the file, which `engine/images.py` reads when the
test runs (a TSV of several hundred MB collects in about the memory of its text cells).
"""

from __future__ import annotations

import ast
import csv
import itertools
import string
import sys
from pathlib import Path
from typing import BinaryIO, NamedTuple

from pytest_mllm.engine.images import ImageError, check_relative, resolve_inside
from pytest_mllm.loaders.cells import NO_OPTIONS, read_column
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, loader
from pytest_mllm.sample import AnswerType, BadSample, ImageRef, Sample
from pytest_mllm.scoring.prediction_cells import NA_WORDS

_OPTION_LETTERS = string.ascii_uppercase  # VLMEvalKit reads every column A … Z as an option
_MISSING = {"", "nan", "none", "null"}
_MAX_REFERENCE = 64  # VLMEvalKit: an image cell this short is another row's index
PASS_OFFSET = 1_000_000  # a rotated question's pass k of question i has index i + k·1_000_000 (MMBench's)


def _cell(row: dict[str, str], column: str) -> str:
    value = (row.get(column) or "").strip()
    return "" if value.lower() in _MISSING else value


def _text(row: dict[str, str], column: str) -> str:
    """A cell already read as the reference reads it (`_read_cells`): "" when missing."""
    return row.get(column) or ""


_READ_COLUMNS = ("answer", "category", "l2-category")  # with the option columns: read as pandas reads them
MULTIPLE_CHOICE = "multiple-choice"  # loader_options.question_type_column: a choice question's cell (MMMU's word)


def _read_cells(spec: BenchmarkSpec, header: list[str], rows: list[Row]) -> None:
    """The option, answer and category cells of every row replaced by their reading (`loaders/cells.py`),
    each column typed over the whole file as pandas types it; a missing cell becomes ""."""
    deviations = set(spec.deviations)
    for column in [c for c in header if c in _OPTION_LETTERS or c in _READ_COLUMNS]:
        values = read_column([row.cells.get(column) for row in rows], keep_na_words="keep_na_words" in deviations,
                             strip="strip_cells" in deviations)
        for row, value in zip(rows, values):
            row.cells[column] = value or ""


class ImageData(NamedTuple):
    """A row's base64 image data, kept on disk: the row's first line, the byte span (offset, length) of
    each image in the file, in order (an image whose span cannot be told is kept as its text); or why
    the cell is unreadable."""

    line: int
    spans: tuple[tuple[int, int] | str, ...] = ()
    error: str = ""


class Row(NamedTuple):
    """One record: its first line, its cells (an image cell holding data is left empty), its image data."""

    line: int
    cells: dict[str, str]
    data: ImageData | None


class _Lines:
    """A binary file's lines as text, counting lines and bytes; `taken` holds the current record's lines."""

    def __init__(self, path: Path, handle: BinaryIO) -> None:
        self.path, self.handle = path, handle
        self.offset = self.number = 0
        self.taken: list[str] = []

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        data = self.handle.readline()
        if not data:
            raise StopIteration
        self.offset += len(data)
        self.number += 1
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecError(f"{self.path}:{self.number}: not UTF-8 text ({exc})") from None
        self.taken.append(text)
        return text


def read_rows(path: Path) -> tuple[list[str], list[Row]]:
    """Header and rows of a TSV whose image cells may hold megabytes of base64, read in one pass
    without keeping the image data: each image is remembered by its byte span in the file.

    Cells are quoted as pandas reads them: a cell starting with `"` runs to its closing quote (tabs
    and line breaks inside it are text, `""` is one quote). A line without `"` is split at its tabs.
    """
    csv.field_size_limit(sys.maxsize)
    with path.open("rb") as handle:
        lines = _Lines(path, handle)
        header: list[str] = []
        rows: list[Row] = []
        cells: list[str] = []
        while True:
            start, first = lines.offset, lines.number + 1
            lines.taken = []
            text = next(lines, None)
            if text is None:
                break
            if '"' in text:
                try:  # a quoted cell: csv takes the lines it needs
                    cells = next(csv.reader(itertools.chain([text], lines), delimiter="\t"), [])
                except csv.Error as exc:
                    raise SpecError(f"{path}:{lines.number}: not a readable TSV ({exc})") from None
            else:
                cells = text.rstrip("\r\n").split("\t") if text.strip("\r\n") else []
            if not cells:
                continue
            if not header:
                header = cells
                if header[0].startswith("\ufeff"):  # a byte-order mark, skipped as pandas skips it
                    header[0] = header[0][1:]
                continue
            rows.append(_row(header, cells, first, start, "".join(lines.taken)))
        if rows and _unclosed(header, cells):
            raise SpecError(f"{path}:{rows[-1].line}: not a readable TSV (a cell's opening '\"' is never closed: "
                            "it runs to the end of the file)")
        return header, rows


def _unclosed(header: list[str], cells: list[str]) -> bool:
    """Whether the file's last record ends inside a quoted cell: a cell ran on past a line end and swallowed
    the cells after it."""
    return len(cells) < len(header) and any("\n" in cell for cell in cells)


def _row(header: list[str], cells: list[str], line: int, offset: int, raw: str) -> Row:
    """A Row of `cells`, its image data (a cell longer than a reference) replaced by byte spans in `raw`,
    the record's text starting at byte `offset` of the file."""
    row = dict(zip(header, cells))
    written = row.get("image") or ""
    cell = written.strip()
    if len(cell) <= _MAX_REFERENCE:
        return Row(line, row, None)
    row["image"] = ""
    try:
        items = cell_list(cell, "image")
    except ValueError as exc:
        return Row(line, row, ImageData(line, error=str(exc)))
    if any(len(item) <= _MAX_REFERENCE for item in items):
        return Row(line, row, ImageData(line, error="field 'image': a list item is too short to be base64 image data"))
    position = 0  # where the cell's text starts in `raw`, when its tabs tell it (no quoted cell)
    if '"' not in raw:
        position = sum(len(c) + 1 for c in cells[:header.index("image")]) + len(written) - len(written.lstrip())
    spans: list[tuple[int, int] | str] = []
    for item in items:
        found = position if raw.startswith(item, position) else raw.find(item, position)
        if found < 0:  # not verbatim in the file (never so for base64): kept as text
            spans.append(item)
            continue
        position = found + len(item)
        before = found if raw.isascii() else len(raw[:found].encode("utf-8"))
        spans.append((offset + before, len(item)))
    return Row(line, row, ImageData(line, tuple(spans)))


def cell_list(cell: str, field: str) -> list[str]:
    """A cell holding one value, or a list of them written as a Python literal ("['a', 'b']")."""
    if not (len(cell) > 1 and cell.startswith("[") and cell.endswith("]")):
        return [cell]
    try:
        items = ast.literal_eval(cell)  # literals only: never evaluates code
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError(f"field {field!r}: a cell starting with '[' is not a list of strings") from None
    if not isinstance(items, list) or not items or not all(isinstance(item, str) for item in items):
        raise ValueError(f"field {field!r}: a cell starting with '[' is not a non-empty list of strings")
    return [item.strip() for item in items]


@loader("tsv", about="a table with base64 images: VLMEvalKit's released files", data_file="",
        options={"split": "", "task": "", "task_column": "", "task_separator": "",
                 "task_names": "the tasks the reference scores", "question_type_column": "",
                 "split_tasks": "the split cell is the task",
                 "answer_column": "the column of the reference answer",
                 "keep_columns": "cells a scorer reads: each sample's metadata columns"})
def load_tsv(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of `data.file` (relative to the data root), one per row, in file order."""
    assert root is not None
    if not spec.data_file:
        raise SpecError(f"{spec.path}: field 'data.file': the tsv loader needs the TSV's file name")
    path = resolve_inside(root, spec.data_file) if root.is_dir() else root
    if not path.is_file():
        raise SpecError(f"benchmark {spec.name!r}: TSV file not found: {path}")
    header, rows = read_rows(path)
    header = _with_answer_column(spec, path, header, rows)
    for required in ("index", "question", "answer"):
        if required not in header:
            raise SpecError(f"{path}: missing column {required!r} (columns: {', '.join(header)})")
    if "image" not in header and "image_path" not in header:
        raise SpecError(f"{path}: needs an 'image' (base64) or 'image_path' column")
    for option in ("task_column", "question_type_column"):
        column = spec.loader_options.get(option)
        if column and column not in header:
            raise SpecError(f"{path}: no column {column!r} (loader_options.{option} of {spec.path}); "
                            f"columns: {', '.join(header)}")
    kept = _kept_columns(spec, path, header)
    data_by_index = {_cell(row.cells, "index"): row.data for row in rows if row.data is not None}
    _read_cells(spec, header, rows)
    rows = _select_split(spec, path, header, rows)
    task_column = spec.loader_options.get("task_column")
    if spec.loader_options.get("split_tasks") and "split" in header:
        task_column = "split"
    fixed_task = str(spec.loader_options.get("task", spec.name))
    letters = [c for c in _OPTION_LETTERS if c in header]
    base = root if root.is_dir() else root.parent
    file = _DataFile(base, path.resolve(), data_by_index)

    separator = spec.loader_options.get("task_separator")
    task_names = _task_names(spec)
    samples: list[Sample | BadSample] = []
    for position, row in enumerate(rows):
        index = _cell(row.cells, "index")
        for task, task_row in _tasks(row.cells, task_column, fixed_task, separator):
            sample_id = f"{task}::{index}"
            try:
                if task_names is not None and task not in task_names:
                    raise ValueError(f"field {task_column!r}: task {task!r} is none of loader_options.task_names; "
                                     "the reference does not score such a row (it reads only the tasks it knows): "
                                     "write the cell as one of them")
                sample = _sample(spec, task_row, index, task, sample_id, letters, _images(row, file))
                sample.metadata["row"] = position
                if kept:
                    sample.metadata["columns"] = {name: _kept(row.cells.get(name)) for name in kept}
                samples.append(sample)
            except ValueError as exc:
                samples.append(BadSample(sample_id, spec.name, task, f"{path}:{row.line}: {exc}"))
    return samples


def _with_answer_column(spec: BenchmarkSpec, path: Path, header: list[str], rows: list[Row]) -> list[str]:
    """`loader_options.answer_column`: the column holding the reference answer (LLaVA-Bench's `gpt4_ans`), read
    as the answer."""
    column = spec.loader_options.get("answer_column")
    if not column or column == "answer":
        return header
    if column not in header:
        raise SpecError(f"{path}: no column {column!r} (loader_options.answer_column of {spec.path}); "
                        f"columns: {', '.join(header)}")
    for row in rows:
        row.cells["answer"] = row.cells.get(column, "")
    return header if "answer" in header else [*header, "answer"]


def _kept_columns(spec: BenchmarkSpec, path: Path, header: list[str]) -> list[str]:
    """`loader_options.keep_columns`: the cells a scorer reads beyond the question, answer and options (each sample's
    `metadata["columns"]`); every one must be in the file."""
    names = spec.loader_options.get("keep_columns") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise SpecError(f"{spec.path}: field 'loader_options.keep_columns' must be a list of column names")
    missing = [n for n in names if n not in header]
    if missing:
        raise SpecError(f"{path}: no column {missing[0]!r} (loader_options.keep_columns of {spec.path}); "
                        f"columns: {', '.join(header)}")
    return list(names)


def _kept(cell: str | None) -> str | None:
    """A kept cell as pandas reads text: None where pandas sees a missing value, else as written."""
    return None if cell is None or cell in NA_WORDS else cell


def _task_names(spec: BenchmarkSpec) -> set[str] | None:
    """`loader_options.task_names`: the tasks the reference scores (None: every task)."""
    names = spec.loader_options.get("task_names")
    if names is None:
        return None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
        raise SpecError(f"{spec.path}: field 'loader_options.task_names' must be a list of task names")
    if not spec.loader_options.get("task_column"):
        raise SpecError(f"{spec.path}: field 'loader_options.task_names' needs loader_options.task_column")
    return set(names)


def _select_split(spec: BenchmarkSpec, path: Path, header: list[str], rows: list[Row]) -> list[Row]:
    """The rows of `loader_options.split` (all rows without it); a SpecError names the splits present."""
    wanted = spec.loader_options.get("split")
    if wanted is None:
        return rows
    if "split" not in header:
        raise SpecError(f"{path}: loader_options.split is {wanted!r} but the TSV has no 'split' column")
    kept = [row for row in rows if _as_read(row.cells, "split") == str(wanted)]
    if not kept:
        present = sorted({_as_read(row.cells, "split") for row in rows} - {""})
        raise SpecError(f"{path}: no row has split {wanted!r} (loader_options.split); splits present: "
                        f"{', '.join(map(repr, present)) or 'none'}")
    return kept


def _as_read(row: dict[str, str], column: str) -> str:
    """A text cell as pandas reads it: whitespace kept; "" when missing."""
    value = row.get(column) or ""
    return "" if value.strip().lower() in _MISSING else value


def _tasks(row: dict[str, str], task_column: str | None, fixed_task: str,
           separator: str | None) -> list[tuple[str, dict[str, str]]]:
    """The tasks a row counts in, each with the row as that task sees it.

    With `task_separator` (POPE.tsv's category "popular,random"), a cell naming several tasks
    makes one sample in each, its task column narrowed to that task: POPE asks each split's
    questions, and VLMEvalKit counts such a row in every split it names.
    """
    if not task_column:
        return [(fixed_task, row)]
    cell = _text(row, task_column) if task_column in _READ_COLUMNS else _as_read(row, task_column)
    if not cell and task_column == "split":
        return [(fixed_task, row)]
    if not separator or separator not in cell:
        return [(cell, row)]
    names = list(dict.fromkeys(name.strip() for name in cell.split(separator) if name.strip()))
    return [(name, {**row, task_column: name}) for name in names]


def _sample(spec: BenchmarkSpec, row: dict[str, str], index: str, task: str, sample_id: str,
            letters: list[str], images: tuple[ImageRef, ...]) -> Sample:
    if not index:
        raise ValueError("field 'index': empty cell")
    answer = _text(row, "answer") or "nan"  # a missing answer: pandas' NaN, which the reference prints "nan"
    choices = tuple((letter, _text(row, letter)) for letter in letters if _text(row, letter))
    kind_column = spec.loader_options.get("question_type_column")
    if kind_column:
        kind = _as_read(row, kind_column)
        if kind != MULTIPLE_CHOICE:
            choices = ()
        elif not choices:
            raise ValueError(f"field {kind_column!r} is {MULTIPLE_CHOICE!r} but the row has no options; {NO_OPTIONS}")
    if choices:
        answer_type: AnswerType = "choice"  # an answer that is no option's letter is scored, and never right
    elif answer.strip().lower() in ("yes", "no"):  # "Yes " too: kept as given
        answer_type = "yes_no"
    else:
        answer_type = "open"
    return Sample(
        id=sample_id, benchmark=spec.name, task=task, question=_cell(row, "question"),
        answer=answer, answer_type=answer_type, images=images,
        choices=choices, pair_group=_pass_group(task, index) if choices else None, split=_cell(row, "split") or "test",
        category=_text(row, "category") or None, l2_category=_text(row, "l2-category") or None,
        metadata={"source_id": index, "hint": _cell(row, "hint")},
    )


def _pass_group(task: str, index: str) -> str | None:
    """The question a rotated pass belongs to: "<task>::<index mod 1_000_000>" (integer indexes)."""
    try:
        number = int(index)
    except ValueError:
        return None
    return f"{task}::{number % PASS_OFFSET}"


class _DataFile(NamedTuple):
    """The TSV as its image refs name it: the data root (of image_path files), the TSV's resolved path,
    every row's image data by index."""

    base: Path
    tsv: Path
    data_by_index: dict[str, ImageData]


def _images(row: Row, file: _DataFile) -> tuple[ImageRef, ...]:
    """The row's images in order: base64 data (its own or another row's, read from the file when the
    test runs), else files named by image_path."""
    cells = row.cells
    cell = _cell(cells, "image")
    paths = cell_list(_cell(cells, "image_path"), "image_path") if _cell(cells, "image_path") else []
    data = row.data
    if cell:  # a reference: another row's index
        if cell not in file.data_by_index:
            raise ValueError(f"field 'image': {cell!r} names no row holding image data")
        data = file.data_by_index[cell]
    if data is not None:
        if data.error:
            raise ValueError(data.error)
        labels = list(paths) if len(paths) == len(data.spans) else [None] * len(data.spans)
        many = len(data.spans) > 1
        return tuple(_data_ref(file, data.line, span, item if many else -1, label)
                     for item, (span, label) in enumerate(zip(data.spans, labels)))
    if not paths:
        raise ValueError("fields 'image' and 'image_path': both empty, the row has no image")
    for relative in paths:
        try:
            check_relative(relative)
        except ImageError as exc:
            raise ValueError(f"field 'image_path': {exc}") from None
    return tuple(ImageRef("path", relative, root=file.base) for relative in paths)


def _data_ref(file: _DataFile, line: int, span: tuple[int, int] | str, item: int, label: str | None) -> ImageRef:
    """An image held in the TSV: kind "tsv" (its base64 read from the file by byte span when the test runs)."""
    if isinstance(span, str):
        return ImageRef("base64", span, label=label)
    suffix = f"[{item}]" if item >= 0 else ""
    return ImageRef("tsv", f"{file.tsv.name}#{line}{suffix}", root=file.tsv.parent, cell=(*span, "image", item),
                    label=label)
