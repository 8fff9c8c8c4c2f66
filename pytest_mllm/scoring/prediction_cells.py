"""A response as VLMEvalKit's scorers receive it: written to its .xlsx prediction file and read back.

VLMEvalKit scores a model only from its prediction file: `dump` writes every response to
`{model}_{dataset}.xlsx` (pandas `to_excel` through xlsxwriter, `vlmeval/smp/file.py`), and the
evaluation reads it back with `load` (pandas `read_excel` through openpyxl) and scores `str()` of each
cell. `read_back` gives, for one response, what that round trip hands the scorer:

- an empty response is a blank cell, and one that reads as one of pandas' missing-value words
  (`NA_WORDS`, compared exactly: "None", "NA", "nan", "null", "N/A", …; "none" is text) is missing:
  the scorer receives "nan";
- a response longer than Excel's 32,767 characters (UTF-16 units) is cut there;
- control characters other than tab and line feed (a carriage return included) come back as their
  Excel escape, "\\r" as "_x000D_"; "\\ufffe" and "\\uffff" too; a text holding "x005F_" loses it
  (openpyxl's reading of an escaped escape);
- a response xlsxwriter takes for a link (`http://`, `https://`, `ftp://`, `ftps://`, `mailto:`,
  `internal:`, `external:`, `file://` at its start) is written as the link's text: "mailto:" and
  "internal:" dropped, a file link as its path with back slashes; one longer than Excel's 2,079
  characters (before or after a "#") is not written at all: missing;
- spaces, tabs and line breaks around it, number-like text ("03", "1e3"), "True": kept.

Not reproduced: pandas types the prediction column as a whole, so if every response of a file is a
number ("03", "1.50") they are read as numbers ("3.0", "1.5"), and if every one is a true/false
word, as booleans; one response is kept as text. A run's column holds text whenever any response
does (a real benchmark's always does). Nor the failures that stop VLMEvalKit's dump (an unpaired
surrogate, a bare "file://"), or the 65,530 links a sheet can hold.
"""

from __future__ import annotations

import re

# pandas' default missing-value words (pandas._libs.parsers.STR_NA_VALUES), compared exactly
NA_WORDS = frozenset({"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
                      "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
MISSING = "nan"  # what the reference's `str()` makes of a missing cell
EXCEL_MAX_CHARACTERS = 32767  # in UTF-16 units
EXCEL_MAX_URL = 2079
_LINK = re.compile(r"(?:ftp|http)s?://|mailto:|(?:in|ex)ternal:|file://")
_ESCAPE = re.compile(r"(_x[0-9a-fA-F]{4}_)")
_CONTROL = re.compile(r"([\x00-\x08\x0b-\x1f])")


def read_back(response: str) -> str:
    """`response` as VLMEvalKit's scorer receives it from its .xlsx prediction file (see the module)."""
    if response == "":
        return MISSING
    text = response
    if _LINK.match(text):
        link, _, anchor = text.partition("#")
        if _utf16_length(link) > EXCEL_MAX_URL or _utf16_length(anchor) > EXCEL_MAX_URL:
            return MISSING  # xlsxwriter ignores the link: the cell stays blank
        text = _link_text(text)
    text = _excel_cut(text)
    text = _CONTROL.sub(lambda match: f"_x{ord(match.group(1)):04X}_", _ESCAPE.sub(r"_x005F\1", text))
    text = text.replace("\ufffe", "_xFFFE_").replace("\uffff", "_xFFFF_").replace("x005F_", "")
    return MISSING if text in NA_WORDS else text


def _link_text(link: str) -> str:
    """The text xlsxwriter shows for a link it writes."""
    if link.startswith("mailto:"):
        return link.replace("mailto:", "", 1)
    if link.startswith("internal:"):
        return link.replace("internal:", "", 1)
    if link.startswith(("file://", "external:")):
        path = link.replace("external:", "file:///", 1).replace("file:///", "", 1).replace("file://", "", 1)
        return path.replace("/", "\\")
    return link


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for character in text if ord(character) > 0xFFFF)


def _excel_cut(text: str) -> str:
    """The text cut to Excel's cell limit, never inside a character beyond U+FFFF."""
    if len(text) <= EXCEL_MAX_CHARACTERS // 2 or _utf16_length(text) <= EXCEL_MAX_CHARACTERS:
        return text
    length = 0
    for index, character in enumerate(text):
        length += 2 if ord(character) > 0xFFFF else 1
        if length > EXCEL_MAX_CHARACTERS:
            return text[:index]
    return text
