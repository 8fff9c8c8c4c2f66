"""VLMEvalKit's judged files, read as a judge's recorded replies (`--mllm-judge=replay:FILE`).

VLMEvalKit keeps what its judge said beside the predictions: `{model}_{dataset}_{judge}.xlsx` for MathVista
(`res`: the extracted answer, `log`) and MM-Vet (`score`, `log`), `{model}_{dataset}_openai_result.xlsx` for
LLaVA-Bench (`gpt4_score`, `score`), or the same as `.tsv` (its `PRED_FORMAT`). Each row is keyed by its
`index`, the TSV `index` our loader keeps as a sample's `source_id`. Cells are read as pandas reads them
back: a missing cell, or text pandas takes for a missing value ("None", "NA", …), is None. Which cells a
benchmark's reply is read from is its grader's (`Grader.replayed`).

The identity of such a judge is the file (its name and SHA-256) and the judge model its name records.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mllm.echo import clip
from pytest_mllm.scoring.prediction_cells import NA_WORDS

XLSX_MAGIC = b"PK\x03\x04"  # an .xlsx file is a zip archive

REPLY_COLUMNS = ("res", "score", "gpt4_score")  # the cells a judged file records its judge's replies in
_JUDGE_IN_NAME = re.compile(r"_(?P<judge>[^_]+)\.(?:xlsx|tsv)$")


class JudgedFileError(ValueError):
    """A judged file that cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class JudgedFile:
    """A judged file's rows by index (column → cell), and the identity of the judge it records."""

    rows: dict[str, dict[str, Any]]
    identity: dict[str, Any]


def read_judged_file(path: Path) -> JudgedFile:
    """The rows of a VLMEvalKit judged file (.xlsx or .tsv); JudgedFileError names the file and what is wrong."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise JudgedFileError(f"{path}: cannot read the judged file ({exc.strerror or exc})") from None
    header, rows = _xlsx(path, data) if data.startswith(XLSX_MAGIC) else _tsv(path, data)
    names = [str(name).strip() if name is not None else "" for name in header]
    if "index" not in names or not any(column in names for column in REPLY_COLUMNS):
        raise JudgedFileError(f"{path}: not a judged file of VLMEvalKit's: it needs an 'index' column and the "
                                  f"judge's replies ({', '.join(REPLY_COLUMNS)}); columns: {', '.join(names)}")
    found: dict[str, dict[str, Any]] = {}
    for number, cells in rows:
        if not any(cell not in (None, "") for cell in cells):
            continue
        row = {name: _cell(cells[n]) if n < len(cells) else None for n, name in enumerate(names)}
        key = _index_key(row["index"])
        if key is None:
            raise JudgedFileError(f"{path}: row {number}: field 'index' is empty")
        if key in found:
            raise JudgedFileError(f"{path}: row {number}: field 'index': {key!r} appears twice")
        found[key] = row
    named = _JUDGE_IN_NAME.search(path.name)
    judge = named.group("judge") if named and named.group("judge") != "result" else None
    identity = {"kind": "replay", "file": path.name, "sha256": hashlib.sha256(data).hexdigest()[:16], "model": judge}
    return JudgedFile(found, identity)


def _index_key(value: Any) -> str | None:
    """A row's `index` as the TSV's text (spreadsheet numbers 101.0 read as 101), None when empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip() or None


def _cell(value: Any) -> Any:
    """A cell as pandas reads it back: text pandas takes for a missing value is None."""
    return None if isinstance(value, str) and value in NA_WORDS else value


def _xlsx(path: Path, data: bytes) -> tuple[list[Any], list[tuple[int, list[Any]]]]:
    try:
        from openpyxl import load_workbook
    except ImportError:
        raise JudgedFileError(f"{path}: reading .xlsx judged files needs openpyxl: "
                                  "pip install 'pytest-mllm[rescore]'") from None
    try:
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds (zip, XML, key errors) for a broken workbook
        raise JudgedFileError(f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None
    try:
        lines = book.worksheets[0].iter_rows(values_only=True)
        header = list(next(lines, ()))
        return header, [(number, list(cells)) for number, cells in enumerate(lines, start=2)]
    except Exception as exc:  # noqa: BLE001 - the sheet's XML, read as it is iterated
        raise JudgedFileError(f"{path}: the first sheet cannot be read ({type(exc).__name__}: "
                                  f"{clip(str(exc), 200)})") from None
    finally:
        book.close()


def _tsv(path: Path, data: bytes) -> tuple[list[Any], list[tuple[int, list[Any]]]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise JudgedFileError(f"{path}: neither an .xlsx workbook nor UTF-8 text ({exc.reason})") from None
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    try:
        header = next(reader, [])
        return list(header), [(reader.line_num, list(row)) for row in reader]
    except csv.Error as exc:
        raise JudgedFileError(f"{path}: line {reader.line_num}: not a readable TSV ({exc})") from None
