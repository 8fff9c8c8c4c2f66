"""Hugging Face datasets stored as parquet (lmms-eval's `lmms-lab/...`), read offline and lazily.

The data root is a dataset folder as `hf download REPO --repo-type dataset --local-dir DIR`
leaves it (README.md whose YAML front matter lists `configs:` and their `data_files`, files such
as `data/test-00000-of-00003.parquet` or `<config>/<split>-*.parquet`), or one parquet file.
`data.file` (a file or a glob inside the root) overrides the discovery.

At collection only the schema and the text columns are read (id, question, answer, task, choices,
hint, references), plus the `path` field of image structs to tell an empty cell: never the image
bytes. A sample's image is an `ImageRef` of kind "parquet" naming file, row group, row and column;
`engine/images.py` reads that one cell when the test runs (the opened file's metadata is cached
per process).

loader_options:
  split:    the split to read (default: the only split present)
  config:   a config name of README.md's `configs:` (default: the default or only one), else a subfolder;
            "*": every config (or subfolder) in turn, in the card's (or name) order, the config
            naming the task of its rows when no task column is mapped (MMMU: one config per subject)
  task:     the task of every sample when no task column is mapped (default: the benchmark's name)
  columns:  the column mapping; keys (defaults): id (none: the row's position; a list of columns: their
            cells joined by "_", as VLMEvalKit builds HallusionBench's index), question (question),
            answer (answer), task, category, image (image; a list of names, or a list column of
            image structs: several images; in a list of columns an empty cell is skipped, so a
            row has one to all of them), choices (a list column, a list of column names, or a
            column holding a list's Python text),
            hint, references (a list column of accepted answers of open questions), l2_category,
            question_type (a column whose cell "multiple-choice" makes the row a choice question and any
            other an open one, as MMMU's code decides: an open row's options are neither shown nor read; a
            "multiple-choice" row without options is that row's error, since MMMU's code cannot score it)
  answers:  answer cells as written → the answers meant ({"1": "Yes", "0": "No"}: HallusionBench's 0/1)
  options_in_question: true when a row's options are written into its question (no choices column):
            "Options: A: x, B: y" (Lin-Chen/MMStar) or lines "A. x" (lmms-lab/RealWorldQA); the
            question keeps the text before them (`loaders/inline_options.py`)
  where:    keep only the rows whose columns hold these values ({column: value or list of values},
            compared as text): SEED-Bench's image questions are `where: {data_type: image}`; a
            row left out still counts in the row numbers (`metadata["row"]`, lmms-eval's doc_id)
  answer_is: how a choice question's answer cell is read: letter, index (0-based), text (an option's)
            or as_written (the letter exactly as written: "b" never equals the letter read, "B", and a
            digit is no position, as MMMU's code compares them); without it a letter, else an index
            (an option's text too with the `answer_option_text` deviation, and a cell that reading and
            its index take to different options, '2' with the options ['5', '2', '7'], is that row's error)
  cells:    how the answer, category, l2_category, option and reference cells are read: "pandas"
            (default) as the reference reads the TSV twin, or "as_stored", as the file stores them, for
            a benchmark whose reference reads the parquet release itself through `datasets` (MMMU's
            code, LIME-M's lmms-eval tasks): "None" and "nan" are text, no column is read as numbers,
            reference answers are kept unstripped and empty ones kept, and an open question's answer
            cell is its one reference, never read again as a list's text

By default the answer, category, l2_category and option cells are read as the benchmark's reference
reads its TSV twin (`loaders/cells.py`: pandas' missing-value words are missing, whitespace kept, an
all-number column is numbers; a column is typed over the rows `where` keeps in every file of the
split, as pandas types the TSV twin's whole column), so that both layouts of a benchmark score alike;
a missing answer is "nan", as there. A list answer column's items are the answers as written. An
answer is an option's letter, or its position in a choices list; an answer that is neither is
scored and never right, as the reference scores it (the `answer_option_text` deviation reads an
option's text as its letter).
"""

from __future__ import annotations

import glob
import re
from pathlib import Path
from typing import Any, NamedTuple

from pytest_mllm.engine.images import check_relative
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, loader
from pytest_mllm.loaders.cells import NA_WORDS, NO_OPTIONS, read_column
from pytest_mllm.loaders.inline_options import split_options
from pytest_mllm.sample import AnswerType, BadSample, ImageRef, Sample

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
COLUMN_KEYS = ("id", "question", "answer", "task", "category", "image", "choices", "hint", "references",
               "l2_category", "question_type")
OPTIONS = {  # the loader_options keys it reads → what a value is
    "split": "", "config": "a name, or * for every config as a task", "task": "",
    "columns": "{" + ", ".join(("id (a column or a list joined with _)", *COLUMN_KEYS[1:])) + "}",
    "answers": "{cell: answer}", "options_in_question": "options written in the question text",
    "where": "{column: value or [values]}: rows kept", "answer_is": "", "cells": ""}
OPTION_KEYS = tuple(OPTIONS)
ANSWER_READINGS = ("letter", "index", "text", "as_written")  # loader_options.answer_is: a choice answer's reading
MULTIPLE_CHOICE = "multiple-choice"  # columns.question_type: the cell of a choice question (MMMU's word)
CELL_READINGS = ("pandas", "as_stored")  # loader_options.cells: the reference's reading of the text cells
_DEFAULT_COLUMNS: dict[str, Any] = {"question": "question", "answer": "answer", "image": "image"}
_SPLIT_FILE = re.compile(r"^(?P<split>[A-Za-z0-9_.]+?)(?:[-_]\d{5}-of-\d{5})?(?:[-_][0-9a-f]{8,})?$")


@loader("parquet", about="a Hugging Face dataset folder or parquet files: lmms-eval's datasets", options=OPTIONS,
        data_file="a file or glob, overriding the dataset card's files")
def load_parquet(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of the chosen split's parquet files, in file and row order."""
    assert root is not None
    options = dict(spec.loader_options)
    unknown = sorted(set(options) - set(OPTION_KEYS))
    if unknown:
        raise SpecError(f"{spec.path}: field 'loader_options.{unknown[0]}': unknown option of the parquet "
                        f"loader; allowed: {', '.join(OPTION_KEYS)}")
    columns = _columns(spec, options.get("columns"))
    where = _where(spec, options.get("where"))
    answers = options.get("answers") or {}
    if not isinstance(answers, dict) or not all(isinstance(v, (str, int)) for v in answers.values()):
        raise SpecError(f"{spec.path}: field 'loader_options.answers' must map answer cells to answers")
    inline = options.get("options_in_question", False)
    if not isinstance(inline, bool):
        raise SpecError(f"{spec.path}: field 'loader_options.options_in_question' must be true or false")
    answer_is = options.get("answer_is")
    if answer_is is not None and answer_is not in ANSWER_READINGS:
        raise SpecError(f"{spec.path}: field 'loader_options.answer_is': {answer_is!r} is not one of "
                        f"{', '.join(ANSWER_READINGS)}")
    cells = options.get("cells", "pandas")
    if cells not in CELL_READINGS:
        raise SpecError(f"{spec.path}: field 'loader_options.cells': {cells!r} is not one of "
                        f"{', '.join(CELL_READINGS)}")
    rules = _Rules({str(k): str(v) for k, v in answers.items()}, inline, frozenset(spec.deviations), answer_is,
                   cells == "as_stored")
    if rules.inline_options and columns.get("choices"):
        raise SpecError(f"{spec.path}: field 'loader_options.options_in_question': the options come from the "
                        "question or from columns.choices, not both")
    base = root if root.is_dir() else root.parent
    config = options.get("config")
    configs = config_names(spec, root) if config == "*" else [config]
    samples: list[Sample | BadSample] = []
    for name in configs:
        task = str(options.get("task") or (name if config == "*" else spec.name))
        first_row = 0  # a row's position in its split, across files (lmms-eval's doc_id)
        files = [_read_file(spec, path, columns, where) for path in dataset_files(spec, root, options.get("split"), name)]
        if not rules.as_stored:
            _read_split_cells(files, columns, rules)
        for file in files:
            samples.extend(_file_samples(spec, base, file, columns, task, first_row, rules))
            first_row += file.rows
    return samples


# --- which files ------------------------------------------------------------------------------------

def _columns(spec: BenchmarkSpec, raw: Any) -> dict[str, Any]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SpecError(f"{spec.path}: field 'loader_options.columns' must map {', '.join(COLUMN_KEYS)} to "
                        "column names")
    unknown = sorted(set(raw) - set(COLUMN_KEYS))
    if unknown:
        raise SpecError(f"{spec.path}: field 'loader_options.columns.{unknown[0]}': unknown key; allowed: "
                        f"{', '.join(COLUMN_KEYS)}")
    columns = {**_DEFAULT_COLUMNS, **raw}
    for key, value in columns.items():
        names = value if isinstance(value, list) and key in ("image", "choices", "id") else [value]
        if value is not None and not (names and all(isinstance(n, str) and n for n in names)):
            raise SpecError(f"{spec.path}: field 'loader_options.columns.{key}': {value!r} must be a column name"
                            + (" or a list of them" if key in ("image", "choices", "id") else ""))
    return columns


class _Rules(NamedTuple):
    """How a row's cells become a sample beyond the column mapping: answer cells mapped to answers, and
    whether the options are read from the question's text."""

    answers: dict[str, str]
    inline_options: bool = False
    deviations: frozenset[str] = frozenset()
    answer_is: str | None = None  # how a choice answer is read: letter, index, text, as_written (None: letter, else index)
    as_stored: bool = False  # loader_options.cells "as_stored": the text cells as the file stores them


def _where(spec: BenchmarkSpec, raw: Any) -> dict[str, set[str]]:
    """`loader_options.where` as column → the accepted values' texts."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{spec.path}: field 'loader_options.where' must map column names to a value or a list "
                        "of values")
    where: dict[str, set[str]] = {}
    for column, values in raw.items():
        values = values if isinstance(values, list) else [values]
        if not values or not all(isinstance(v, (str, int, float, bool)) for v in values):
            raise SpecError(f"{spec.path}: field 'loader_options.where.{column}': {raw[column]!r} must be a value "
                            "or a non-empty list of values")
        where[str(column)] = {str(v) for v in values}
    return where


def read_front_matter(readme: Path) -> dict[str, Any]:
    """The YAML front matter of a dataset card (an empty mapping when there is none)."""
    import yaml

    from pytest_mllm.safe_yaml import load_yaml

    try:
        text = readme.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    match = re.match(r"^---\s*\n(.*?)\n---\s*(\n|$)", text, re.DOTALL)
    if not match:
        return {}
    try:
        data = load_yaml(match.group(1))
    except yaml.YAMLError as exc:
        raise SpecError(f"{readme}: the YAML front matter is not valid YAML: {exc}") from None
    return data if isinstance(data, dict) else {}


def _card_splits(root: Path, entry: dict[str, Any]) -> dict[str, list[str]]:
    """split → glob patterns of one `configs:` entry (HF: a plain pattern or list means split train)."""
    data_files = entry.get("data_files")
    if isinstance(data_files, (str, list)) and (isinstance(data_files, str)
                                                 or all(isinstance(x, str) for x in data_files)):
        return {"train": [data_files] if isinstance(data_files, str) else list(data_files)}
    splits: dict[str, list[str]] = {}
    for item in data_files or []:
        if isinstance(item, dict) and item.get("split") and item.get("path"):
            paths = item["path"]
            splits.setdefault(str(item["split"]), []).extend([paths] if isinstance(paths, str) else list(paths))
    return splits


def _expand(root: Path, patterns: list[str]) -> list[Path]:
    found: set[Path] = set()
    for pattern in patterns:
        check_relative(pattern)
        found.update(Path(p) for p in glob.glob(str(root / pattern), recursive=True))
    return sorted(p for p in found if p.is_file() and p.suffix == ".parquet")


def _folder_splits(folder: Path) -> dict[str, list[Path]]:
    """split → files of a folder without a card: `<split>-00000-of-00003.parquet` or `<split>/*.parquet`."""
    splits: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*.parquet")):
        if any(part.startswith(".") for part in path.relative_to(folder).parts):
            continue
        match = _SPLIT_FILE.match(path.stem)
        split = match.group("split") if match else path.stem
        if path.parent != folder and path.parent.name in ("train", "test", "validation", "dev", "val"):
            split = path.parent.name
        splits.setdefault(split, []).append(path)
    return splits


def config_names(spec: BenchmarkSpec, root: Path) -> list[str]:
    """Every config of the dataset: README.md's `configs:` in order, else the subfolders holding parquet files."""
    card = read_front_matter(root / "README.md") if root.is_dir() else {}
    names = [str(c.get("config_name", "default")) for c in card.get("configs") or [] if isinstance(c, dict)]
    if not names and root.is_dir():
        names = sorted(p.name for p in root.iterdir()
                       if p.is_dir() and not p.name.startswith(".") and any(p.rglob("*.parquet")))
    if not names:
        raise SpecError(f"benchmark {spec.name!r}: loader_options.config '*' needs configs in {root / 'README.md'} "
                        f"or subfolders of parquet files in {root}; found neither")
    return names


def dataset_files(spec: BenchmarkSpec, root: Path, split: Any, config: Any) -> list[Path]:
    """The parquet files of the chosen config and split, sorted; a SpecError says what is there."""
    if root.is_file():
        if root.suffix != ".parquet":
            raise SpecError(f"benchmark {spec.name!r}: {root} is not a parquet file")
        return [root]
    if spec.data_file:
        files = _expand(root, [spec.data_file])
        if not files:
            raise SpecError(f"benchmark {spec.name!r}: no parquet file matches data.file {spec.data_file!r} "
                            f"under {root}")
        return files
    card = read_front_matter(root / "README.md")
    configs = [c for c in card.get("configs") or [] if isinstance(c, dict)]
    splits: dict[str, list[Path]]
    where: str
    if configs:
        names = [str(c.get("config_name", "default")) for c in configs]
        if config is not None:
            if str(config) not in names:
                raise SpecError(f"benchmark {spec.name!r}: config {config!r} (loader_options.config) is not in "
                                f"{root / 'README.md'}; its configs: {', '.join(names)}")
            entry = configs[names.index(str(config))]
        else:
            defaults = [c for c in configs if c.get("default")] or [c for c in configs
                                                                     if c.get("config_name", "default") == "default"]
            if len(configs) > 1 and not defaults:
                raise SpecError(f"benchmark {spec.name!r}: {root / 'README.md'} lists several configs "
                                f"({', '.join(names)}); choose one with loader_options.config")
            entry = defaults[0] if defaults else configs[0]
        where = f"config {entry.get('config_name', 'default')!r} of {root / 'README.md'}"
        splits = {name: _expand(root, patterns) for name, patterns in _card_splits(root, entry).items()}
    else:
        folder = root
        if config is not None:
            check_relative(str(config))
            folder = root / str(config)
            if not folder.is_dir():
                raise SpecError(f"benchmark {spec.name!r}: config {config!r} (loader_options.config): no folder "
                                f"{folder} and no README.md configs")
        where = str(folder)
        splits = _folder_splits(folder)
    if not any(splits.values()):
        raise SpecError(f"benchmark {spec.name!r}: no parquet files in {where}; point the data root at the "
                        "folder `hf download REPO --repo-type dataset --local-dir` wrote")
    if split is None:
        present = [name for name, files in splits.items() if files]
        if len(present) > 1:
            raise SpecError(f"benchmark {spec.name!r}: {where} has splits {', '.join(present)}; choose one "
                            "with loader_options.split")
        split = present[0]
    files = splits.get(str(split)) or []
    if not files:
        raise SpecError(f"benchmark {spec.name!r}: no parquet files for split {split!r} in {where}; splits there: "
                        f"{', '.join(n for n, f in splits.items() if f) or 'none'}")
    return files


# --- rows -------------------------------------------------------------------------------------------

def _image_leaf(schema: Any, column: str) -> str | None:
    """The parquet leaf holding an image struct's `path` (cheap to read), if the column has one."""
    for i in range(len(schema)):
        leaf = schema.column(i).path
        if leaf.startswith(column + ".") and leaf.endswith(".path"):
            return leaf
    return None


class _FileCells(NamedTuple):
    """One parquet file of a split: its text cells as read (`cells`) and as written, which rows `where`
    keeps, the kind of each image column."""

    path: Path
    parquet: Any  # pyarrow.parquet.ParquetFile
    cells: dict[str, list[Any]]
    written: dict[str, list[Any]]
    kept: list[bool]
    image_kinds: dict[str, str]

    @property
    def rows(self) -> int:
        return int(self.parquet.metadata.num_rows)


def _read_file(spec: BenchmarkSpec, path: Path, columns: dict[str, Any],
               where: dict[str, set[str]] | None = None) -> _FileCells:
    """A file's text columns (and the `path` leaf of its image structs), never its image bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as exc:
        raise SpecError(f"benchmark {spec.name!r}: cannot read parquet file {path}: {exc}") from None
    schema = parquet.schema_arrow
    names = set(schema.names)
    wanted: list[str] = []
    for key, value in columns.items():
        for name in (value if isinstance(value, list) else [value]) if value is not None else []:
            if name not in names:
                raise SpecError(f"{path}: no column {name!r} (loader_options.columns.{key} of {spec.path}); "
                                f"columns: {', '.join(schema.names)}")
            if key != "image" and name not in wanted:
                wanted.append(name)
    where = where or {}
    for name in where:
        if name not in names:
            raise SpecError(f"{path}: no column {name!r} (loader_options.where of {spec.path}); "
                            f"columns: {', '.join(schema.names)}")
        if name not in wanted:
            wanted.append(name)
    image_columns = columns["image"] if isinstance(columns["image"], list) else (
        [columns["image"]] if columns["image"] else [])
    kinds: dict[str, str] = {}
    leaves: list[str] = []
    for name in image_columns:
        kind = _image_kind(schema.field(name).type)
        if kind is None:
            raise SpecError(f"{path}: column {name!r} (loader_options.columns.image) holds {schema.field(name).type}, "
                            "not images (a {bytes, path} struct, binary, or a list of them)")
        kinds[name] = kind
        leaf = _image_leaf(parquet.schema, name)
        if leaf:
            leaves.append(leaf)
    table = parquet.read(columns=wanted + leaves) if wanted or leaves else None
    cells = {name: table.column(name).to_pylist() for name in table.column_names} if table is not None else {}
    kept = [all(str(cells[name][number]) in values for name, values in where.items())
            for number in range(parquet.metadata.num_rows)]
    return _FileCells(path, parquet, cells, dict(cells), kept, kinds)


def _read_split_cells(files: list[_FileCells], columns: dict[str, Any], rules: _Rules) -> None:
    """The answer, category and option cells of the split's kept rows read as the TSV twin's (`_read_cells`),
    each column typed over all of them at once, as pandas types a column over the whole TSV, which holds
    those rows from every file: a column of numbers in one file and of text in another is text in both."""
    names = [name for name in files[0].cells if all(name in file.cells for file in files)] if files else []
    joined = {name: [value for file in files for value, keep in zip(file.cells[name], file.kept) if keep]
              for name in names}
    _read_cells(joined, columns, rules)
    position = 0
    for file in files:
        rows = [number for number, keep in enumerate(file.kept) if keep]
        for name in names:
            read = list(file.cells[name])
            for offset, number in enumerate(rows):
                read[number] = joined[name][position + offset]
            file.cells[name] = read
        position += len(rows)


def _file_samples(spec: BenchmarkSpec, base: Path, file: _FileCells, columns: dict[str, Any], fixed_task: str,
                  first_row: int = 0, rules: _Rules | None = None) -> list[Sample | BadSample]:
    """The samples of one file's rows (those `where` keeps); the row numbers of the split start at `first_row`."""
    path, parquet, cells, written, kinds = file.path, file.parquet, file.cells, file.written, file.image_kinds
    image_columns = columns["image"] if isinstance(columns["image"], list) else (
        [columns["image"]] if columns["image"] else [])
    count = file.rows
    relative = path.resolve().relative_to(base.resolve())
    place = _Place(base, relative.as_posix(), relative.stem)
    starts, start = [], 0
    for group in range(parquet.metadata.num_row_groups):
        starts.append(start)
        start += parquet.metadata.row_group(group).num_rows
    samples: list[Sample | BadSample] = []
    group = 0
    names_read = list(cells)
    for number in range(count):
        row = {name: cells[name][number] for name in names_read}
        while group + 1 < len(starts) and number >= starts[group + 1]:
            group += 1
        if not file.kept[number]:
            continue
        raw_id = _raw_id({name: written[name][number] for name in names_read}, columns.get("id"), number)
        task = str(row.get(columns["task"]) or "") if columns.get("task") else fixed_task
        sample_id = f"{task or fixed_task}::{raw_id if raw_id not in (None, '') else f'row{number}'}"
        try:
            images = tuple(ref for name in image_columns
                           for ref in _image_refs(row, name, kinds[name], place, (group, number - starts[group], number),
                                                  optional=len(image_columns) > 1))
            if image_columns and not images:
                raise ValueError(f"fields {', '.join(map(repr, image_columns))}: every image cell is empty")
            sample = _sample(spec, row, columns, task, sample_id, raw_id, images, number, place.posix, rules or _Rules({}))
            sample.metadata["row"] = first_row + number
            samples.append(sample)
        except ValueError as exc:
            samples.append(BadSample(sample_id, spec.name, task or fixed_task, f"{path}: row {number}: {exc}"))
    return samples


def _read_cells(cells: dict[str, list[Any]], columns: dict[str, Any], rules: _Rules) -> None:
    """The answer, category and option columns replaced by their reading as the TSV twin's (`loaders/cells.py`),
    each typed over the file; a choices list column is read position by position, as the TSV's A, B, …"""
    reading = {"keep_na_words": "keep_na_words" in rules.deviations, "strip": "strip_cells" in rules.deviations}
    choices = columns.get("choices")
    names = [columns.get(key) for key in ("answer", "category", "l2_category")]
    names += choices if isinstance(choices, list) else []
    for name in dict.fromkeys(n for n in names if isinstance(n, str) and n in cells):
        values = cells[name]
        if all(v is None or isinstance(v, (str, int, float)) for v in values):
            cells[name] = read_column([None if v is None else str(v) for v in values], **reading)
    if isinstance(choices, str) and choices in cells and all(v is None or isinstance(v, list) for v in cells[choices]):
        lists = cells[choices]
        width = max((len(v) for v in lists if v), default=0)
        read = [read_column([None if not v or len(v) <= p or v[p] is None else str(v[p]) for v in lists], **reading)
                for p in range(width)]
        cells[choices] = [None if v is None else [read[p][r] for p in range(len(v))] for r, v in enumerate(lists)]


def _raw_id(row: dict[str, Any], column: str | list[str] | None, number: int) -> Any:
    """The row's id: its id cell, its id cells joined by "_" (an empty cell an empty part, as in
    HallusionBench's index "VD__1_4_0_0"; None if every one is empty), or its position."""
    if not column:
        return number
    if isinstance(column, str):
        return row.get(column)
    parts = ["" if row.get(name) is None else str(row.get(name)) for name in column]
    return "_".join(parts) if any(parts) else None


def _image_kind(kind: Any) -> str | None:
    import pyarrow as pa

    if pa.types.is_struct(kind) and kind.get_field_index("bytes") >= 0:
        return "struct"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "binary"
    if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _image_kind(kind.value_type) in ("struct",
                                                                                                    "binary"):
        return "list"
    return None


class _Place(NamedTuple):
    """A parquet file as its ImageRefs name it: the data root, the path inside it, the file's stem."""

    base: Path
    posix: str
    stem: str


def _image_refs(row: dict[str, Any], column: str, kind: str, place: _Place, where: tuple[int, int, int], *,
                optional: bool = False) -> list[ImageRef]:
    """The images of one cell; `where` is (row group, row in it, row in the file). `optional`: one of
    several image columns, whose empty cell holds no image rather than a missing one."""
    group, row_in_group, number = where

    def ref(item: int) -> ImageRef:
        suffix = f"[{item}]" if item >= 0 else ""
        return ImageRef("parquet", f"{place.posix}#{number}/{column}{suffix}", root=place.base,
                        cell=(group, row_in_group, column, item), label=f"{place.stem}#{number}{suffix}")

    if kind == "binary" or column not in row:  # a binary column: an empty cell is told when the test runs
        return [ref(-1)]
    cell = row[column]
    if kind == "struct":
        if cell is None and optional:
            return []
        if cell is None:
            raise ValueError(f"field {column!r}: the image cell is empty")
        return [ref(-1)]
    if not cell:
        raise ValueError(f"field {column!r}: the list of images is empty")
    if any(item is None for item in cell):
        raise ValueError(f"field {column!r}: image {[i for i, x in enumerate(cell) if x is None][0]} is empty")
    return [ref(item) for item in range(len(cell))]


def _text(value: Any, field_name: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict, bytes)):
        raise ValueError(f"field {field_name!r}: expected text, found {type(value).__name__}")
    return str(value).strip()


def _read(value: Any, field_name: str) -> str:
    """A cell `_read_cells` has read (kept as read: whitespace included), else a text cell stripped."""
    return value if isinstance(value, str) else _text(value, field_name)


def _sample(spec: BenchmarkSpec, row: dict[str, Any], columns: dict[str, Any], task: str, sample_id: str,
            raw_id: Any, images: tuple[ImageRef, ...], number: int, relative: str, rules: _Rules) -> Sample:
    if not task:
        raise ValueError(f"field {columns['task']!r}: empty task cell")
    if columns.get("id") and raw_id in (None, ""):
        raise ValueError(f"field {columns['id']!r}: empty id cell")
    question = _text(row.get(columns["question"]), columns["question"]) if columns.get("question") else ""
    if not question:
        raise ValueError(f"field {columns['question']!r}: empty question cell")
    references: list[str] = []
    if columns.get("references"):
        cell = row.get(columns["references"])
        if cell is not None and not isinstance(cell, list):
            raise ValueError(f"field {columns['references']!r}: expected a list of answers, found "
                             f"{type(cell).__name__}")
        references = [str(x) if rules.as_stored else str(x).strip() for x in cell or []
                      if x is not None and (rules.as_stored or str(x).strip())]
    answer_cell = row.get(columns["answer"]) if columns.get("answer") else None
    if isinstance(answer_cell, list):  # a list answer column: the accepted answers, each as written (an empty
        # one counts as one of the humans, as in the TSV twin's list text)
        references = references or [str(x) for x in answer_cell if x is not None]
        answer = next((r.strip() for r in references if r.strip()), "")
    else:
        answer = _read(answer_cell, columns.get("answer") or "answer") or ("" if references else "nan")
        answer = rules.answers.get(answer, answer)  # a missing cell: "nan", as the reference prints pandas' NaN
    if not answer and references:
        answer = references[0]
    if not answer:
        raise ValueError(f"field {columns.get('answer') or 'answer'!r}: empty answer cell")
    choices = _choices(row, columns.get("choices"))
    if rules.inline_options:  # options in the text: a missing-value word is no option, as in the TSV twin
        question, choices = split_options(question)
        choices = tuple((letter, text) for letter, text in choices
                        if "keep_na_words" in rules.deviations or text not in NA_WORDS)
    if columns.get("question_type"):
        choices = _typed_choices(row.get(columns["question_type"]), choices, columns["question_type"])
    if choices:
        answer_type: AnswerType = "choice"
        answer = _choice_answer(answer, choices, columns.get("answer") or "answer", rules.answer_is,
                                "answer_option_text" in rules.deviations)
    elif answer.strip().lower() in ("yes", "no") and not references[1:]:  # "Yes " too: kept as given
        answer_type = "yes_no"
    else:
        answer_type = "open"
    if rules.as_stored and answer_type != "choice" and not references:
        references = [answer]  # the cell as stored is the one answer, never read again as a list's text
    hint = _text(row.get(columns["hint"]), columns["hint"]) if columns.get("hint") else ""
    category = _read(row.get(columns["category"]), columns["category"]) if columns.get("category") else ""
    l2_category = _read(row.get(columns["l2_category"]), columns["l2_category"]) if columns.get("l2_category") else ""
    metadata: dict[str, Any] = {"source_id": str(raw_id), "hint": hint, "source": f"{relative}#{number}"}
    if references:
        metadata["references"] = references
    return Sample(id=sample_id, benchmark=spec.name, task=task, question=question, answer=answer,
                  answer_type=answer_type, images=images, choices=choices, category=category or None,
                  l2_category=l2_category or None, metadata=metadata)


def _choices(row: dict[str, Any], spec: Any) -> tuple[tuple[str, str], ...]:
    if not spec:
        return ()
    if isinstance(spec, list):  # cells read as the TSV twin's option columns (`_read_cells`): None when missing
        texts = [row.get(name) for name in spec]
        return tuple((letter, str(text)) for letter, text in zip(_LETTERS, texts) if text not in (None, ""))
    cell = row.get(spec)
    if cell is None:
        return ()
    if isinstance(cell, str):  # some releases store the options list as its Python/JSON text
        import ast

        try:
            cell = ast.literal_eval(cell)
        except (ValueError, SyntaxError):
            raise ValueError(f"field {spec!r}: {cell[:60]!r} is not a list of options") from None
    if not isinstance(cell, list):
        raise ValueError(f"field {spec!r}: expected a list of options, found {type(cell).__name__}")
    if len(cell) > len(_LETTERS):
        raise ValueError(f"field {spec!r}: {len(cell)} options, more than {len(_LETTERS)}")
    return tuple((letter, str(text)) for letter, text in zip(_LETTERS, cell) if text is not None)


def _typed_choices(kind: Any, choices: tuple[tuple[str, str], ...], field_name: str) -> tuple[tuple[str, str], ...]:
    """The options as the row's question type has them: a multiple-choice row's (none: the row's error, as
    the reference draws a letter from no options and stops), none for any other type (an open question)."""
    if kind != MULTIPLE_CHOICE:
        return ()
    if not choices:
        raise ValueError(f"field {field_name!r} is {MULTIPLE_CHOICE!r} but the row has no options; {NO_OPTIONS}")
    return choices


def _choice_answer(answer: str, choices: tuple[tuple[str, str], ...], field_name: str,
                   answer_is: str | None = None, option_text: bool = False) -> str:
    """The answer as an option letter: as `answer_is` says (letter, index or text), else a letter or an
    option's index (0-based); an option's text too with `option_text` (a deviation), and then a cell
    whose index and text name different options ('2' with the options ['5', '2', '7']) is an error.
    An answer no reading takes is kept: the reference compares it with the option read from the
    response, which it never equals (scored, never right)."""
    letters = [letter for letter, _ in choices]
    if answer_is == "as_written":
        return answer
    readings = {
        "letter": answer.upper() if answer.upper() in letters else None,
        "index": letters[int(answer)] if answer.isdigit() and int(answer) < len(letters) else None,
        "text": next((letter for letter, text in choices if text == answer), None),
    }
    if answer_is is not None:
        return readings[answer_is] or answer
    if not option_text:
        return readings["letter"] or readings["index"] or answer
    found = {kind: letter for kind, letter in readings.items() if letter is not None}
    if len(set(found.values())) > 1:
        ways = ", ".join(f"option {letter} by its {kind}" for kind, letter in found.items())
        raise ValueError(f"field {field_name!r}: answer {answer!r} is ambiguous ({ways}); say how answers are "
                         f"read with loader_options.answer_is: {' or '.join(found)}")
    return next(iter(found.values()), answer)

