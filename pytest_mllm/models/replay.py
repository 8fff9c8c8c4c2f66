"""A model that answers from recorded predictions, to score another tool's outputs (or our own).

Accepted recordings:

- a `--mllm-json` results file of pytest-mllm (`{"records": [...]}`): each record's `response`,
  matched by benchmark and sample id (records that errored carry no answer);
- JSON Lines with one {"id": ..., "response": text} per line, the id being the sample id of the
  test id (with or without the benchmark prefix) or the id the benchmark file gives the sample
  (its `id` field or TSV `index`); "prediction" or "text" are accepted for the response;
- a VLMEvalKit prediction file (`{model}_{dataset}.xlsx`, `.tsv` or `.json`), matched by its
  `index` column with the TSV's index (`models/predictions.py`); its answers are what VLMEvalKit's
  scorer received, so they are not read through the .xlsx round trip again (`Response.as_read`);
- an lmms-eval `--log_samples` file (`<date>_samples_<task>.jsonl`), matched by `doc_id` with the
  sample's row position in its data file;
- a folder in MME's official results format, matched by (subtask, image, question).

The format is told by the content, not the file name. A file that is none of these is a
`ReplayFileError` (one message naming the formats); a sample the recording has no answer for
errors alone, with one line naming it and the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from pytest_mllm.echo import json_loads
from pytest_mllm.loaders import RESULTS_FOLDERS
from pytest_mllm.models.predictions import (XLSX_MAGIC, PredictionFileError, Predictions, Recorded, is_lmms_eval_record,
                                            json_lines, is_vlmevalkit_table, read_lmms_eval_samples, read_vlmevalkit_json,
                                            read_vlmevalkit_tsv, read_vlmevalkit_xlsx, vlmevalkit_json_rows)
from pytest_mllm.sample import Request, Response, Sample

_RESPONSE_KEYS = ("response", "prediction", "text")
FORMATS = ("a --mllm-json results file ({\"records\": [...]})",
           "JSON Lines with an \"id\" and a \"response\" (or \"prediction\", \"text\") per line",
           "a VLMEvalKit prediction file (.xlsx, .tsv or .json with \"index\" and \"prediction\" columns)",
           "an lmms-eval --log_samples file (JSON Lines with \"doc_id\" and \"resps\" or \"filtered_resps\")")


class MissingPrediction(LookupError):
    """The recording has no answer for a sample."""


class ReplayFileError(ValueError):
    """The recording cannot be read as any format replay knows; the message names them."""


def _formats_hint() -> str:
    folders = [f"a folder in {folder.about}" for folder in RESULTS_FOLDERS.entries().values()]
    return "replay reads " + "; ".join([*FORMATS, *folders])


def _read_folder(path: Path) -> Mapping[tuple[str, str, str], str]:
    """The answers of a results folder, read by the first registered format that reads it."""
    problems = []
    for folder in RESULTS_FOLDERS.entries().values():
        try:
            return folder.read(path)
        except (ValueError, OSError) as exc:  # a folder of another shape (no such files, a line of another shape)
            problems.append(str(exc))
    raise ReplayFileError(f"replay folder {path}: {'; '.join(problems)} ({_formats_hint()})")


class ReplayModel:
    """Answers each request with the recorded response for its sample."""

    needs_images = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self.name = f"replay:{path}"
        self._by_id: dict[str, str] = {}
        self._by_row: dict[int, str] = {}  # lmms-eval: doc_id → answer
        self._row_problems: dict[int, str] = {}  # lmms-eval: doc_id → why its record holds no answer
        self._by_question: dict[tuple[str, str, str], str] = {}
        self._recorded: dict[Any, Recorded] = {}  # the key of `_by_id` or `_by_row` → the row's checkable fields
        self._as_read: set[Any] = set()  # keys of answers VLMEvalKit's scorer received as they are (its prediction files)
        if path.is_dir():
            self._by_question.update(_read_folder(path))
        elif path.is_file():
            self._read_file(path)
        else:
            raise ReplayFileError(f"replay recording not found: {path} ({_formats_hint()})")

    def _read_file(self, path: Path) -> None:
        try:
            with path.open("rb") as handle:
                if handle.read(len(XLSX_MAGIC)) == XLSX_MAGIC:
                    return self._take(lambda: read_vlmevalkit_xlsx(path))
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ReplayFileError(f"replay recording {path} cannot be read: {exc} ({_formats_hint()})") from None
        try:
            document = json_loads(text)
        except (json.JSONDecodeError, RecursionError):
            document = None  # not one JSON document: JSON Lines, a TSV, or nothing we read
        first = _first_line(text)
        rows = vlmevalkit_json_rows(document)
        if isinstance(document, dict) and "records" in document:
            self._read_results(path, document["records"])
        elif rows is not None:
            self._take(lambda: read_vlmevalkit_json(path, rows))
        elif is_lmms_eval_record(document) or (document is None and is_lmms_eval_record(_json_or_none(first))):
            self._take(lambda: read_lmms_eval_samples(path, text))
        elif document is None and "\t" in first and is_vlmevalkit_table(c.strip('"') for c in first.split("\t")):
            self._take(lambda: read_vlmevalkit_tsv(path, text))
        elif document is None or (isinstance(document, dict) and "id" in document):
            self._read_jsonl(path, text)  # (a JSON Lines file of one line is also one JSON document)
        else:
            raise ReplayFileError(f"replay recording {path} is JSON but not a recording: {_formats_hint()}")

    def _take(self, read: Callable[[], Predictions]) -> None:
        """Answers of another tool's prediction file; a row it cannot read is one ReplayFileError."""
        try:
            found = read()
        except PredictionFileError as exc:
            raise ReplayFileError(str(exc)) from None
        for key, answer in found.answers.items():
            if isinstance(key, int):
                self._by_row[key] = answer
            else:
                self._by_id[key] = answer
        self._row_problems.update(found.problems)
        self._recorded.update(found.recorded)
        if found.tool == "VLMEvalKit":
            self._as_read.update(found.answers)

    def _read_results(self, path: Path, records: Any) -> None:
        """A --mllm-json file: answers by "benchmark::id", and by the bare id where only one benchmark has it."""
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise ReplayFileError(f"replay recording {path}: \"records\" is not a list of records; {_formats_hint()}")
        bare: dict[str, str | None] = {}
        for record in records:
            if record.get("id") is None or record.get("benchmark") is None:
                raise ReplayFileError(f"replay recording {path}: a record without \"id\" or \"benchmark\" "
                                      f"({_formats_hint()})")
            response = record.get("response")
            if response is None:  # the sample errored in that run: no answer to replay
                continue
            sample_id, response = str(record["id"]), str(response)
            self._by_id[f"{record['benchmark']}::{sample_id}"] = response
            if record.get("question") not in (None, ""):
                self._recorded[f"{record['benchmark']}::{sample_id}"] = Recorded(
                    f"the record of {record['benchmark']}::{sample_id}", {"question": record["question"]})
            bare[sample_id] = response if bare.get(sample_id, response) == response else None
        for sample_id, response in bare.items():
            if response is not None:  # ids two benchmarks answered differently are matched with their benchmark only
                self._by_id.setdefault(sample_id, response)

    def _read_jsonl(self, path: Path, text: str) -> None:
        for number, entry in json_lines(path, text, ReplayFileError, f"; {_formats_hint()}"):
            key = next((k for k in _RESPONSE_KEYS if k in entry), None) if isinstance(entry, dict) else None
            if key is None or "id" not in entry:
                raise ReplayFileError(f"{path}:{number}: needs 'id' and 'response' fields; {_formats_hint()}")
            self._by_id[str(entry["id"])] = str(entry[key])

    def key_of(self, sample: Sample) -> tuple[dict[Any, str], Any] | None:
        """Where the recording answers `sample`: (the answers, the key), None when it does not."""
        for key in (f"{sample.benchmark}::{sample.id}", sample.id, sample.metadata.get("source_id")):
            if key in self._by_id:
                return self._by_id, key
        row = sample.metadata.get("row")
        if row in self._by_row:
            return self._by_row, row
        question_key = (sample.task, sample.image_name, sample.question)
        if question_key in self._by_question:
            return self._by_question, question_key
        return None

    def recorded(self, sample: Sample) -> Recorded | None:
        """What the recording's row for `sample` says of it (its question, target …), if anything."""
        found = self.key_of(sample)
        return self._recorded.get(found[1]) if found is not None and found[0] is not self._by_question else None

    def answer(self, sample: Sample) -> str:
        """The recorded response for `sample`; MissingPrediction names the sample and file."""
        found = self.key_of(sample)
        if found is not None:
            return found[0][found[1]]
        row = sample.metadata.get("row")
        if row in self._row_problems:
            raise MissingPrediction(f"no recorded answer for sample {sample.benchmark}::{sample.id}: "
                                    f"{self._row_problems[row]}")
        raise MissingPrediction(f"no recorded answer for sample {sample.benchmark}::{sample.id} in {self.path}")

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """One response per request; a sample without a recorded answer errors alone, in one line."""
        responses = []
        for request in requests:
            try:
                found = self.key_of(request.sample)
                responses.append(Response(self.answer(request.sample),
                                          as_read=found is not None and found[0] is self._by_id and found[1] in self._as_read))
            except MissingPrediction as exc:
                responses.append(Response("", error=str(exc)))
        return responses


def _first_line(text: str) -> str:
    """The first line that is not blank ("" when none is)."""
    return next((line for line in text.splitlines() if line.strip()), "")


def _json_or_none(line: str) -> Any:
    """The line's JSON value, None when it is not JSON."""
    try:
        return json_loads(line)
    except (json.JSONDecodeError, RecursionError):
        return None


def check_recording(path: str | Path) -> None:
    """ReplayFileError unless `path` is a recording replay reads (checked once, before any sample runs)."""
    ReplayModel(Path(path).expanduser())
