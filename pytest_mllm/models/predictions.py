"""Other tools' prediction files, read as recorded answers for replay (and so rescored by our scoring).

VLMEvalKit writes `{model}_{dataset}.xlsx` (default), `.tsv` or `.json` (its `PRED_FORMAT`): the
dataset's rows without `image`, with a `prediction` column. Each row's answer is keyed by its
`index`, the TSV `index` our tsv loader keeps as a sample's `source_id`. As VLMEvalKit reads these
.xlsx and .tsv files back through pandas, an empty cell or one pandas reads as missing ("NA", "None",
"null", …) is the answer "nan"; JSON strings are kept as written. JSON comes as a list of rows,
{"columns", "data"} or a mapping of columns. These answers are what VLMEvalKit's scorer received, so
replay marks them read (`Response.as_read`): the .xlsx round trip of live responses
(`scoring/prediction_cells.py`) is not applied to them again.

lmms-eval's `--log_samples` writes `<date>_samples_<task>.jsonl`, one record per document: `doc_id`
(the document's position in the task's split), `target`, `filtered_resps` and, when it differs
from them, the raw `resps`. The answer is the raw response (`resps`, else `filtered_resps`), keyed by
`doc_id`, which replay matches with a sample's row position in its data file (`metadata["row"]`).
"""

from __future__ import annotations

import csv
import io
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from pytest_mllm.echo import clip
from pytest_mllm.echo import json_loads
from pytest_mllm.scoring.prediction_cells import MISSING, NA_WORDS

XLSX_MAGIC = b"PK\x03\x04"  # an .xlsx file is a zip archive


class PredictionFileError(ValueError):
    """A prediction file that cannot be read; the message names the file, the row and the field."""


@dataclass(frozen=True)
class Recorded:
    """What a prediction file says of the sample it answers, besides the answer: where the row is,
    and its fields that replay compares with the sample (`models/replay_check.py`)."""

    where: str  # "row 3 (index 102)", "line 3 (doc_id 2)"
    fields: dict[str, Any]  # "question", "answer" (VLMEvalKit); "target", "input", "doc" (lmms-eval)


@dataclass
class Predictions:
    """Answers keyed by the tool's own sample key, and why some keys have none."""

    tool: str
    answers: dict[Any, str] = field(default_factory=dict)
    problems: dict[Any, str] = field(default_factory=dict)  # key → why the record holds no answer
    recorded: dict[Any, Recorded] = field(default_factory=dict)  # key → the row's checkable fields


def is_vlmevalkit_table(header: Iterable[Any]) -> bool:
    """Whether a header is a VLMEvalKit prediction file's: it has `index` and `prediction`."""
    names = {str(name).strip() for name in header if name is not None}
    return {"index", "prediction"} <= names


def _index_key(value: Any) -> str | None:
    """A row's `index` as the TSV's text (spreadsheet numbers 101.0 read as 101), None when empty."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value).strip()
    return text or None


def _pandas_text(value: Any) -> str:
    """A prediction cell as VLMEvalKit sees it after pandas' reading: missing cells become "nan"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return MISSING
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = str(value)
    return MISSING if text in NA_WORDS else text


def _json_text(value: Any) -> str:
    """A JSON prediction as VLMEvalKit sees it: pandas keeps JSON strings as they are; str() of the rest."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, str) else str(value)


def _table(path: Path, header: list[Any], rows: Iterable[tuple[int, list[Any]]],
           text: Callable[[Any], str] = _pandas_text) -> Predictions:
    """Answers of a VLMEvalKit table (header + (row number, cells)); duplicate indexes are refused."""
    names = [str(name).strip() if name is not None else "" for name in header]
    at_index, at_prediction = names.index("index"), names.index("prediction")
    checked = {name: names.index(name) for name in ("question", "answer") if name in names}
    found = Predictions("VLMEvalKit")
    for number, cells in rows:
        if not any(cell not in (None, "") for cell in cells):
            continue  # a blank line
        key = _index_key(cells[at_index] if at_index < len(cells) else None)
        if key is None:
            raise PredictionFileError(f"{path}: row {number}: field 'index' is empty")
        if key in found.answers:
            raise PredictionFileError(f"{path}: row {number}: field 'index': {key!r} appears twice")
        found.answers[key] = text(cells[at_prediction] if at_prediction < len(cells) else None)
        found.recorded[key] = Recorded(f"row {number} (index {key})", {
            name: cells[at] for name, at in checked.items() if at < len(cells) and cells[at] not in (None, "")})
    return found


def read_vlmevalkit_xlsx(path: Path) -> Predictions:
    """A VLMEvalKit `.xlsx` prediction file (its first sheet), read with openpyxl."""
    try:
        from openpyxl import load_workbook
    except ImportError:
        raise PredictionFileError(f"{path}: reading .xlsx prediction files needs openpyxl: "
                                  "pip install 'pytest-mllm[rescore]'") from None
    try:
        book = load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many kinds (zip, XML, key errors) for a broken workbook
        raise PredictionFileError(f"{path}: not a readable .xlsx workbook ({type(exc).__name__}: {exc})") from None
    try:
        lines = book.worksheets[0].iter_rows(values_only=True)
        header = list(next(lines, ()))
        if not is_vlmevalkit_table(header):
            raise PredictionFileError(f"{path}: the first sheet's header has no 'index' and 'prediction' columns "
                                      "(a VLMEvalKit prediction file has both)")
        return _table(path, header, ((number, list(cells)) for number, cells in enumerate(lines, start=2)))
    except PredictionFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - the sheet's XML, read as it is iterated (an entity bomb, a broken cell)
        raise PredictionFileError(f"{path}: the first sheet cannot be read ({type(exc).__name__}: "
                                  f"{clip(str(exc), 200)})") from None
    finally:
        book.close()


def read_vlmevalkit_tsv(path: Path, text: str) -> Predictions:
    """A VLMEvalKit `.tsv` prediction file (every cell quoted, as pandas' to_csv with QUOTE_ALL writes it)."""
    csv.field_size_limit(sys.maxsize)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter="\t")
    try:
        header = next(reader)
        return _table(path, list(header), ((reader.line_num, row) for row in reader))
    except csv.Error as exc:
        raise PredictionFileError(f"{path}: line {reader.line_num}: not a readable TSV ({exc})") from None


def vlmevalkit_json_rows(document: Any) -> list[dict[str, Any]] | None:
    """The rows of a VLMEvalKit JSON prediction file, or None when `document` is not one."""
    if isinstance(document, dict) and isinstance(document.get("columns"), list) and isinstance(document.get("data"), list):
        columns = document["columns"]
        if not all(isinstance(row, list) for row in document["data"]):
            return None
        document = [dict(zip(columns, row)) for row in document["data"]]
    elif isinstance(document, dict) and is_vlmevalkit_table(document):
        columns = {name: value for name, value in document.items() if isinstance(value, list)}
        if set(columns) != set(document) or len({len(value) for value in columns.values()}) != 1:
            return None
        document = [dict(zip(columns, values)) for values in zip(*columns.values())]
    if isinstance(document, list) and document and all(isinstance(row, dict) for row in document) \
            and is_vlmevalkit_table(document[0]):
        return document
    return None


def read_vlmevalkit_json(path: Path, rows: list[dict[str, Any]]) -> Predictions:
    """A VLMEvalKit `.json` prediction file's rows (see `vlmevalkit_json_rows`)."""
    header = ["index", "prediction", "question", "answer"]
    return _table(path, header, ((number, [row.get(name) for name in header])
                                 for number, row in enumerate(rows, start=1)), _json_text)


def is_lmms_eval_record(entry: Any) -> bool:
    """Whether a JSON object is an lmms-eval `--log_samples` record."""
    return isinstance(entry, dict) and "doc_id" in entry and ("filtered_resps" in entry or "resps" in entry)


def _generated_text(value: Any) -> str | None:
    """The one generated text in a `resps`/`filtered_resps` value ("t", ["t"], [["t"]]), else None."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, str) else None


def json_lines(path: Path, text: str, error: type[Exception], hint: str = "") -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; a line that is not JSON raises `error` naming it."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                yield number, json_loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{number}: not valid JSON ({exc}){hint}") from None
            except RecursionError:
                raise error(f"{path}:{number}: nested too deeply to read{hint}") from None


def read_lmms_eval_samples(path: Path, text: str) -> Predictions:
    """lmms-eval's samples JSON Lines: the raw response of each `doc_id` (the first record of a doc wins)."""
    found = Predictions("lmms-eval")
    for number, entry in json_lines(path, text, PredictionFileError):
        if not isinstance(entry, dict) or not isinstance(entry.get("doc_id"), int) or isinstance(entry["doc_id"], bool):
            raise PredictionFileError(f"{path}:{number}: field 'doc_id' is missing or not an integer")
        doc_id = entry["doc_id"]
        if doc_id in found.answers or doc_id in found.problems:
            continue  # one record per filter of the same document: the raw response is the same
        found.recorded[doc_id] = Recorded(f"line {number} (doc_id {doc_id})", {
            name: entry[name] for name in ("target", "input", "doc") if entry.get(name) not in (None, "")})
        field_name = "resps" if "resps" in entry else "filtered_resps"
        response = _generated_text(entry.get(field_name))
        if response is None:
            found.problems[doc_id] = (f"{path}:{number}: field {field_name!r} holds no single generated text "
                                      f"({json.dumps(entry.get(field_name))[:80]})")
        else:
            found.answers[doc_id] = response
    return found
