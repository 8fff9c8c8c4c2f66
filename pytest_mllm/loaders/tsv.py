"""The TSV-with-base64-images format of MMBench, MMT-Bench, SEED, POPE … (VLMEvalKit's).

Columns: index, question, optional hint, option columns A, B, C, …, answer, category,
l2-category, split, and image (base64 bytes) or image_path. An image cell may hold
another row's index instead of image data: that row's image is meant.

An option or answer cell is missing only when empty: "None", "null", "NA" are option texts.
MMBench's circular passes of a question are rows `index + k·1_000_000` with the options
rotated; every pass of a multiple-choice question shares the `pair_group` "<task>::<index mod
1_000_000>", which `scoring/circular.py` scores together (CircularEval).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from pytest_mllm.engine.images import resolve_inside
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError
from pytest_mllm.sample import BadSample, ImageRef, Sample

_OPTION_LETTERS = "ABCDEFGHIJ"
_MISSING = {"", "nan", "none", "null"}
CIRCULAR_OFFSET = 1_000_000  # MMBench: pass k of question i has index i + k·1_000_000


def _cell(row: dict[str, str], column: str) -> str:
    value = (row.get(column) or "").strip()
    return "" if value.lower() in _MISSING else value


def _text(row: dict[str, str], column: str) -> str:
    """A cell whose every non-empty value is meant: an option text or an answer ("None" included)."""
    return (row.get(column) or "").strip()


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a TSV whose cells may hold megabytes of base64."""
    csv.field_size_limit(sys.maxsize)
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def load_tsv(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of `data.file` (relative to the data root), one per row, in file order."""
    assert root is not None
    if not spec.data_file:
        raise SpecError(f"{spec.path}: field 'data.file': the tsv loader needs the TSV's file name")
    path = resolve_inside(root, spec.data_file) if root.is_dir() else root
    if not path.is_file():
        raise SpecError(f"benchmark {spec.name!r}: TSV file not found: {path}")
    header, rows = read_rows(path)
    for required in ("index", "question", "answer"):
        if required not in header:
            raise SpecError(f"{path}: missing column {required!r} (columns: {', '.join(header)})")
    if "image" not in header and "image_path" not in header:
        raise SpecError(f"{path}: needs an 'image' (base64) or 'image_path' column")
    task_column = spec.loader_options.get("task_column")
    fixed_task = str(spec.loader_options.get("task", spec.name))
    images_by_index = {_cell(r, "index"): _cell(r, "image") for r in rows if len(_cell(r, "image")) > 64}
    letters = [c for c in _OPTION_LETTERS if c in header]

    separator = spec.loader_options.get("task_separator")
    samples: list[Sample | BadSample] = []
    for line_number, row in enumerate(rows, start=2):
        index = _cell(row, "index")
        for task, task_row in _tasks(row, task_column, fixed_task, separator):
            sample_id = f"{task}::{index}"
            try:
                samples.append(_sample(spec, task_row, index, task, sample_id, letters, images_by_index, root))
            except ValueError as exc:
                samples.append(BadSample(sample_id, spec.name, task, f"{path}:{line_number}: {exc}"))
    return samples


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
            letters: list[str], images_by_index: dict[str, str], root: Path) -> Sample:
    if not index:
        raise ValueError("empty 'index' cell")
    answer = _text(row, "answer")
    if not answer:
        raise ValueError("empty 'answer' cell")
    choices = tuple((letter, _text(row, letter)) for letter in letters if _text(row, letter))
    if choices:
        answer_type = "choice"
        if answer not in {letter for letter, _ in choices}:
            raise ValueError(f"answer {answer!r} is not one of the options {[c for c, _ in choices]}")
    elif answer.lower() in ("yes", "no"):
        answer_type = "yes_no"
    else:
        answer_type = "open"
    return Sample(
        id=sample_id, benchmark=spec.name, task=task, question=_cell(row, "question"),
        answer=answer, answer_type=answer_type, images=(_image(row, images_by_index, root),),
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


def _image(row: dict[str, str], images_by_index: dict[str, str], root: Path) -> ImageRef:
    cell = _cell(row, "image")
    if len(cell) > 64:
        return ImageRef("base64", cell)
    if cell:
        if cell not in images_by_index:
            raise ValueError(f"image cell {cell!r} names no row holding image data")
        return ImageRef("base64", images_by_index[cell])
    image_path = _cell(row, "image_path")
    if not image_path:
        raise ValueError("no image: both 'image' and 'image_path' cells are empty")
    base = root if root.is_dir() else root.parent
    return ImageRef("path", image_path, root=base)
