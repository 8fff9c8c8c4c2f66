"""Options written into a question's text, as some releases store multiple-choice questions.

Two layouts are read:

- an "Options:" run, `… Options: A: text, B: text, C: text` (Lin-Chen/MMStar);
- option lines, `A. text` on a line each (lmms-lab/RealWorldQA), after the question and before an
  instruction line such as "Please answer directly with only the letter of the correct option".

`split_options` returns the question without its options (and without what follows them) and the
options as (letter, text) pairs; a question without options comes back whole, with none.
"""

from __future__ import annotations

import re
import string

_RUN = re.compile(r"(?:^|\s)Options:\s*A:\s")
_LINE = re.compile(r"^([A-Z])\.\s+(.*?)\s*$")


def split_options(text: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """(question, options) of a question whose options are written into it."""
    return _options_run(text) or _option_lines(text) or (text.strip(), ())


def _options_run(text: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """`Options: A: x, B: y, …`: each option runs to the ", <next letter>: " that follows it."""
    runs = list(_RUN.finditer(text))
    if not runs:
        return None
    found = runs[-1]  # the last "Options:" run: a question may mention the word before it
    rest = text[found.end():]
    options: list[tuple[str, str]] = []
    for letter, following in zip(string.ascii_uppercase, string.ascii_uppercase[1:]):
        end = rest.find(f", {following}: ")
        options.append((letter, (rest if end < 0 else rest[:end]).strip()))
        if end < 0:
            break
        rest = rest[end + len(f", {following}: "):]
    return text[:found.start()].strip(), tuple(options)


def _option_lines(text: str) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """Lines "A. x", "B. y", … in order (at least two); the lines after the last one are dropped."""
    lines = text.splitlines()
    for first, line in enumerate(lines):
        match = _LINE.match(line)
        if not match or match.group(1) != "A":
            continue
        options = [(match.group(1), match.group(2))]
        for following in lines[first + 1:]:
            step = _LINE.match(following)
            if not step or step.group(1) != string.ascii_uppercase[len(options)]:
                break
            options.append((step.group(1), step.group(2)))
        if len(options) >= 2:
            return "\n".join(lines[:first]).strip(), tuple(options)
    return None
