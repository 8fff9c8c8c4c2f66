"""Cells read as VLMEvalKit's pandas reads a TSV column (`loaders/cells.py`), and the named deviations.

Expected readings: pandas 3.1.1 `read_csv(f, sep="\\t")` (what VLMEvalKit's `load` calls, repository
open-compass/VLMEvalKit, vlmeval/smp/file.py at commit e8e78f05f3080fe28154f2130321f17951c3be94) on a
two-column TSV holding each column below, each value printed with `str` and NaN as None; command in
fixtures/official/README.md ("the pandas readings").
"""

from __future__ import annotations

import pytest

from pytest_mllm.loaders.cells import read_column

PANDAS = [
    (["3", " 3", "3 ", "03", "+3"], ["3", "3", "3", "3", "3"]),
    (["1.50", "3", "1e3"], ["1.5", "3.0", "1000.0"]),
    (["3", "NA"], ["3.0", None]),
    (["inf", "1"], ["inf", "1.0"]),
    (["true", "False"], ["True", "False"]),
    (["True", "x"], ["True", "x"]),
    ([" NA", "None ", "none", "NaN", "n/a", "N/A", "-"], [" NA", "None ", "none", None, None, None, "-"]),
    (["1,000", "2"], ["1,000", "2"]),
    (["0x10", "1"], ["0x10", "1"]),
    (["1_000", "2"], ["1_000", "2"]),
    (["3", "  "], ["3", "  "]),
    (["3.0", "4."], ["3.0", "4.0"]),
    (["[Gambia, Niger]", "None", "cat\t", " dog"], ["[Gambia, Niger]", None, "cat\t", " dog"]),
]


@pytest.mark.parametrize(("cells", "read"), PANDAS)
def test_a_column_reads_as_pandas_reads_it(cells: list[str], read: list[str | None]) -> None:
    assert read_column(cells) == read


def test_the_deviations_read_otherwise() -> None:
    cells = ["None", " dog", "cat\t", "NA", "", "03"]
    assert read_column(cells, keep_na_words=True) == ["None", " dog", "cat\t", "NA", None, "03"]
    assert read_column(cells, strip=True) == [None, "dog", "cat", None, None, "03"]
    assert read_column(["03", "4"], strip=True) == ["03", "4"]  # stripped columns stay text
    assert read_column(["3", "None"], keep_na_words=True) == ["3", "None"]  # a word kept: the column is text
