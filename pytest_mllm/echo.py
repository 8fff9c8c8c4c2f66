"""How values from files, data and servers are shown: bounded, and harmless to whatever renders them.

`excerpt(value)` shows any value by its type and a short repr, whatever its size (a YAML alias
bomb is a few hundred bytes on disk and billions of items in memory; its repr would be gigabytes).
`printable(text)` escapes control characters, so a sample id or a task name from a data file
cannot clear the screen, move the cursor or overwrite a line of the report.

Text is made safe once, where it enters or where it is rendered:
- `well_formed` / `json_loads`: a lone UTF-16 surrogate (which JSON can spell, `"\\ud800"`, and no UTF-8
  file can hold) becomes U+FFFD, where a server's answer or a data file's JSON is read;
- `xml_text`: characters XML 1.0 cannot hold (controls, surrogates, U+FFFE/U+FFFF) escaped, for the JUnit XML;
- `markup_text`: Rich's markup (`[bold]`, `[/]`) escaped, for the terminal's tables;
- `markdown_text` / `markdown_code`: Markdown's syntax (headings, links, images, HTML, emphasis, line
  breaks, table cells) escaped, for the job summary, where a group or model name is plain text.
"""

from __future__ import annotations

import json
import re
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


_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
REPLACEMENT = "\ufffd"


def well_formed(text: str) -> str:
    """`text` with each lone UTF-16 surrogate replaced by U+FFFD (a pair was joined by the JSON decoder
    already; what is left cannot be written as UTF-8)."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def json_loads(text: str | bytes) -> Any:
    """`json.loads`, with every string in the value (keys included) `well_formed`."""
    value = json.loads(text)
    raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return _well_formed_value(value) if _SURROGATE_ESCAPE.search(raw) or _SURROGATE.search(raw) else value


def _well_formed_value(value: Any) -> Any:
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, list):
        return [_well_formed_value(item) for item in value]
    if isinstance(value, dict):
        return {well_formed(key): _well_formed_value(item) for key, item in value.items()}
    return value


# what XML 1.0 cannot hold: C0 controls but tab, line feed and carriage return; surrogates; U+FFFE, U+FFFF
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """`text` with every character XML cannot hold written as an escape (`\\x01`, `\\ud800`)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


def markup_text(text: str) -> str:
    """`text` for a Rich table cell or title: control characters escaped (`printable`), and Rich's markup
    escaped, so that `[/]` or `[link=…]` in a category is shown as it is written."""
    from rich.markup import escape

    return escape(printable(text))


_LINE_BREAKS = re.compile("\r\n|[\n\r\x0b\x0c\x85\u2028\u2029]")
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]<>#!|~@&$])")  # what can start markup anywhere in a line
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|www)(:|\.)")  # GitHub links these without brackets


def markdown_text(text: str) -> str:
    """`text` as plain text on one line of Markdown (a table cell, a heading): the characters that can start
    markup within a line backslash-escaped (no heading, link, image, emphasis, code, HTML, entity, math or
    cell break can start; `http:` and `www.` are broken so that nothing is linked), line breaks made
    spaces, control characters escaped."""
    escaped = _MARKDOWN_SYNTAX.sub(r"\\\1", printable(_LINE_BREAKS.sub(" ", text)))
    return _AUTOLINK.sub(r"\1\\\2", escaped)


def markdown_code(text: str) -> str:
    """`text` inside a code span in a Markdown table cell: backticks made quotes, cell breaks escaped,
    one line, control characters escaped."""
    return printable(_LINE_BREAKS.sub(" ", text)).replace("`", "'").replace("|", "\\|")
