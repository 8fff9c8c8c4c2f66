"""Text cells as the reference code reads them: VLMEvalKit loads a TSV with pandas' `read_csv`.

What that reading does to the cells the scores depend on (options, answers, categories):

- a cell that is one of pandas' missing-value words (`NA_WORDS`: "", "NA", "None", "nan", "null",
  "N/A", …, compared exactly: "none" and " NA" are text) is missing;
- whitespace is kept: " Dog" and "Dog\\t" are other texts than "Dog";
- a column whose every present cell is a number is read as numbers, and scored as Python prints
  them: "03" is "3"; with a missing cell or a decimal, "3" is "3.0" and "1.50" is "1.5"; a column
  of true/false words is read as booleans ("true" is "True");
- any other cell is its text, list-looking ones ("[Gambia, Niger]") included.

`read_column` gives one column's cells so read (None: missing). Deviations from this reading are
named, and off unless a spec lists them (`engine/spec.py`'s `DEVIATIONS`).
"""

from __future__ import annotations

import re
from typing import Sequence

from pytest_mllm.scoring.prediction_cells import NA_WORDS  # pandas' missing-value words, shared with responses

# Why a multiple-choice row without options is an error: the reference cannot score it either.
NO_OPTIONS = ("the reference's evaluation cannot score it either (it draws a letter from no options: random.choice "
              "raises IndexError): give the row its options or make its question type open")

__all__ = ["NA_WORDS", "read_column"]

_INTEGER = re.compile(r"^\s*[+-]?\d+\s*$")
_FLOAT = re.compile(r"^\s*[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|inf|infinity)\s*$",
                    re.IGNORECASE)
_BOOLEANS = {"True": "True", "TRUE": "True", "true": "True", "False": "False", "FALSE": "False", "false": "False"}


def read_column(cells: Sequence[str | None], *, keep_na_words: bool = False, strip: bool = False) -> list[str | None]:
    """A column's cells as pandas reads them (None: missing), or with the named deviations:
    `keep_na_words` (a missing-value word is text; only an empty cell is missing) and `strip`
    (surrounding whitespace removed, and no column read as numbers)."""
    if strip:
        cells = [None if cell is None else cell.strip() for cell in cells]
    read = [None if cell is None or _missing(cell, keep_na_words) else cell for cell in cells]
    present = [cell for cell in read if cell is not None]
    if strip or not present:
        return read
    missing = len(present) < len(read)
    if all(_INTEGER.match(cell) for cell in present):
        return [None if cell is None else (str(float(int(cell))) if missing else str(int(cell))) for cell in read]
    if all(_FLOAT.match(cell) for cell in present):
        return [None if cell is None else str(float(cell)) for cell in read]
    if all(cell in _BOOLEANS for cell in present):
        return [None if cell is None else _BOOLEANS[cell] for cell in read]
    return read


def _missing(cell: str, keep_na_words: bool) -> bool:
    return cell == "" if keep_na_words else cell in NA_WORDS
