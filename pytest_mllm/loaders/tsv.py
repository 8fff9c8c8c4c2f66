"""The TSV-with-base64-images format of MMBench, MMT-Bench, SEED, POPE, MMMU … (VLMEvalKit's).

Columns: index, question, optional hint, option columns A … Z, answer, category,
l2-category, split, and image (base64 bytes) and/or image_path. As VLMEvalKit reads them:

- an `image` cell of 64 characters or fewer names another row's index: that row's image(s);
- an `image` cell written as a list (`['<base64>', '<base64>']`, a Python literal) holds a
  multi-image question's images, in order;
- `image_path` (a path or such a list) names the images: with image data they are its file
  names (labels), without it they are files under the data root (kept inside it);
- `split` is the sample's split; `loader_options.split` keeps one split's rows only;
- a cell starting with `"` is quoted, as pandas reads it: tabs and line breaks inside are text.

An option or answer cell is missing only when empty: "None", "null", "NA" are option texts.
MMBench's circular passes of a question are rows `index + k·1_000_000` with the options
rotated; every pass of a multiple-choice question shares the `pair_group` "<task>::<index mod
1_000_000>", which `scoring/circular.py` scores together (CircularEval).
Each sample's `metadata["row"]` is its row's position (from 0) among the rows read, the
`doc_id` lmms-eval gives the same row.
"""

from __future__ import annotations

import ast
import csv
import string
import sys
from pathlib import Path

from pytest_mllm.engine.images import ImageError, check_relative, resolve_inside
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError
from pytest_mllm.sample import BadSample, ImageRef, Sample

_OPTION_LETTERS = string.ascii_uppercase  # VLMEvalKit reads every column A … Z as an option
_MISSING = {"", "nan", "none", "null"}
_MAX_REFERENCE = 64  # VLMEvalKit: an image cell this short is another row's index
CIRCULAR_OFFSET = 1_000_000  # MMBench: pass k of question i has index i + k·1_000_000


def _cell(row: dict[str, str], column: str) -> str:
    value = (row.get(column) or "").strip()
    return "" if value.lower() in _MISSING else value


def _text(row: dict[str, str], column: str) -> str:
    """A cell whose every non-empty value is meant: an option text or an answer ("None" included)."""
    return (row.get(column) or "").strip()


def read_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and (first line, row) pairs of a TSV whose cells may hold megabytes of base64.

    Cells are quoted as pandas reads them: a cell starting with `"` runs to its closing quote (tabs
    and line breaks inside it are text, `""` is one quote).
    """
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        numbered: list[tuple[int, dict[str, str]]] = []
        try:
            while True:
                start = reader.line_num + 1
                row = next(reader, None)
                if row is None:
                    break
                numbered.append((max(start, 2), row))
        except csv.Error as exc:
            raise SpecError(f"{path}:{reader.line_num}: not a readable TSV ({exc})") from None
        if numbered and _unclosed(numbered[-1][1]):
            raise SpecError(f"{path}:{numbered[-1][0]}: not a readable TSV (a cell's opening '\"' is never "
                            "closed: it runs to the end of the file)")
        return list(reader.fieldnames or []), numbered


def _unclosed(row: dict[str, str]) -> bool:
    """Whether the file's last row ends inside a quoted cell: a cell ran on past a line end and swallowed
    the cells after it (which DictReader then fills with None)."""
    return None in row.values() and any("\n" in value for value in row.values() if isinstance(value, str))


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


def load_tsv(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of `data.file` (relative to the data root), one per row, in file order."""
    assert root is not None
    if not spec.data_file:
        raise SpecError(f"{spec.path}: field 'data.file': the tsv loader needs the TSV's file name")
    path = resolve_inside(root, spec.data_file) if root.is_dir() else root
    if not path.is_file():
        raise SpecError(f"benchmark {spec.name!r}: TSV file not found: {path}")
    header, numbered = read_rows(path)
    rows = [row for _, row in numbered]
    for required in ("index", "question", "answer"):
        if required not in header:
            raise SpecError(f"{path}: missing column {required!r} (columns: {', '.join(header)})")
    if "image" not in header and "image_path" not in header:
        raise SpecError(f"{path}: needs an 'image' (base64) or 'image_path' column")
    numbered = _select_split(spec, path, header, numbered)
    task_column = spec.loader_options.get("task_column")
    fixed_task = str(spec.loader_options.get("task", spec.name))
    images_by_index = {_cell(r, "index"): _cell(r, "image") for r in rows if len(_cell(r, "image")) > _MAX_REFERENCE}
    letters = [c for c in _OPTION_LETTERS if c in header]
    base = root if root.is_dir() else root.parent

    separator = spec.loader_options.get("task_separator")
    samples: list[Sample | BadSample] = []
    for position, (line_number, row) in enumerate(numbered):
        index = _cell(row, "index")
        for task, task_row in _tasks(row, task_column, fixed_task, separator):
            sample_id = f"{task}::{index}"
            try:
                sample = _sample(spec, task_row, index, task, sample_id, letters, images_by_index, base)
                sample.metadata["row"] = position
                samples.append(sample)
            except ValueError as exc:
                samples.append(BadSample(sample_id, spec.name, task, f"{path}:{line_number}: {exc}"))
    return samples


def _select_split(spec: BenchmarkSpec, path: Path, header: list[str],
                  numbered: list[tuple[int, dict[str, str]]]) -> list[tuple[int, dict[str, str]]]:
    """The rows of `loader_options.split` (all rows without it); a SpecError names the splits present."""
    wanted = spec.loader_options.get("split")
    if wanted is None:
        return numbered
    if "split" not in header:
        raise SpecError(f"{path}: loader_options.split is {wanted!r} but the TSV has no 'split' column")
    kept = [(number, row) for number, row in numbered if _cell(row, "split") == str(wanted)]
    if not kept:
        present = sorted({_cell(row, "split") for _, row in numbered} - {""})
        raise SpecError(f"{path}: no row has split {wanted!r} (loader_options.split); splits present: "
                        f"{', '.join(present) or 'none'}")
    return kept


def _tasks(row: dict[str, str], task_column: str | None, fixed_task: str,
           separator: str | None) -> list[tuple[str, dict[str, str]]]:
    """The tasks a row counts in, each with the row as that task sees it.

    With `task_separator` (POPE.tsv's category "popular,random"), a cell naming several tasks
    makes one sample in each, its task column narrowed to that task: POPE asks each split's
    questions, and VLMEvalKit counts such a row in every split it names.
    """
    if not task_column:
        return [(fixed_task, row)]
    cell = _cell(row, task_column)
    if not separator or separator not in cell:
        return [(cell, row)]
    names = list(dict.fromkeys(name.strip() for name in cell.split(separator) if name.strip()))
    return [(name, {**row, task_column: name}) for name in names]


def _sample(spec: BenchmarkSpec, row: dict[str, str], index: str, task: str, sample_id: str,
            letters: list[str], images_by_index: dict[str, str], base: Path) -> Sample:
    if not index:
        raise ValueError("field 'index': empty cell")
    answer = _text(row, "answer")
    if not answer:
        raise ValueError("field 'answer': empty cell")
    choices = tuple((letter, _text(row, letter)) for letter in letters if _text(row, letter))
    if choices:
        answer_type = "choice"
        if answer not in {letter for letter, _ in choices}:
            raise ValueError(f"field 'answer': {answer!r} is not one of the options {[c for c, _ in choices]}")
    elif answer.lower() in ("yes", "no"):
        answer_type = "yes_no"
    else:
        answer_type = "open"
    return Sample(
        id=sample_id, benchmark=spec.name, task=task, question=_cell(row, "question"),
        answer=answer, answer_type=answer_type, images=_images(row, images_by_index, base),
        choices=choices, pair_group=_circular_group(task, index) if choices else None, split=_cell(row, "split") or "test",
        category=_cell(row, "category") or None, l2_category=_cell(row, "l2-category") or None,
        metadata={"source_id": index, "hint": _cell(row, "hint")},
    )


def _circular_group(task: str, index: str) -> str | None:
    """The question a circular pass belongs to: "<task>::<index mod 1_000_000>" (integer indexes)."""
    try:
        number = int(index)
    except ValueError:
        return None
    return f"{task}::{number % CIRCULAR_OFFSET}"


def _images(row: dict[str, str], images_by_index: dict[str, str], base: Path) -> tuple[ImageRef, ...]:
    """The row's images in order: base64 data (its own or another row's), else files named by image_path."""
    cell = _cell(row, "image")
    paths = cell_list(_cell(row, "image_path"), "image_path") if _cell(row, "image_path") else []
    if cell and len(cell) <= _MAX_REFERENCE:
        if cell not in images_by_index:
            raise ValueError(f"field 'image': {cell!r} names no row holding image data")
        cell = images_by_index[cell]
    if cell:
        data = cell_list(cell, "image")
        if any(len(item) <= _MAX_REFERENCE for item in data):
            raise ValueError("field 'image': a list item is too short to be base64 image data")
        labels = list(paths) if len(paths) == len(data) else [None] * len(data)
        return tuple(ImageRef("base64", item, label=label) for item, label in zip(data, labels))
    if not paths:
        raise ValueError("fields 'image' and 'image_path': both empty, the row has no image")
    for relative in paths:
        try:
            check_relative(relative)
        except ImageError as exc:
            raise ValueError(f"field 'image_path': {exc}") from None
    return tuple(ImageRef("path", relative, root=base) for relative in paths)
