"""How values from files and data are shown in messages: bounded, and harmless to a terminal.

`excerpt(value)` shows any value by its type and a short repr, whatever its size (a YAML alias
bomb is a few hundred bytes on disk and billions of items in memory; its repr would be gigabytes).
`printable(text)` escapes control characters, so a sample id or a task name from a data file
cannot clear the screen, move the cursor or overwrite a line of the report.
"""

from __future__ import annotations

import reprlib
from typing import Any

EXCERPT_CHARS = 80  # the longest excerpt of a value in a message

_REPR = reprlib.Repr()
_REPR.maxlevel = 2
_REPR.maxstring = EXCERPT_CHARS
_REPR.maxother = EXCERPT_CHARS
for _name in ("maxlist", "maxtuple", "maxdict", "maxset", "maxfrozenset", "maxdeque", "maxarray"):
    setattr(_REPR, _name, 4)

# C0 and C1 controls, DEL, the line and paragraph separators, and the bidirectional overrides and
# isolates (which reorder what a terminal or an editor shows)
_UNPRINTABLE = {*range(0x00, 0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F),
                *range(0x2066, 0x206A)}
_ESCAPES = {code: (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}") for code in _UNPRINTABLE}
_LINES_KEPT = {code: escape for code, escape in _ESCAPES.items() if chr(code) not in "\n\t"}


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """`value` as "<type> <bounded repr>": never longer than about `limit` characters, whatever its size,
    with control characters escaped; a short string, number, bool or None is shown as its plain repr."""
    if isinstance(value, int) and value.bit_length() > 4 * limit:  # its digits alone would be too long
        return f"{type(value).__name__} of {value.bit_length()} bits"
    if isinstance(value, (int, float, bool, type(None))) or (isinstance(value, str) and len(value) <= limit):
        shown = repr(value)
        if len(shown) <= limit:
            return printable(shown)
    shown = printable(_REPR.repr(value))
    if len(shown) > limit:
        shown = shown[:limit] + "…"
    return f"{type(value).__name__} {shown}"


def clip(text: str, limit: int = 300) -> str:
    """A message from elsewhere (an exception's text), cut to `limit` characters, line breaks kept."""
    return printable(text[:limit], keep_lines=True) + ("…" if len(text) > limit else "")


def printable(text: str, *, keep_lines: bool = False) -> str:
    """`text` with control characters (and bidirectional overrides) written as escapes; with `keep_lines`,
    line breaks and tabs stay (a multi-line message)."""
    if text.isprintable() or not any(ord(c) in _UNPRINTABLE for c in text):
        return text
    return text.translate(_LINES_KEPT if keep_lines else _ESCAPES)
