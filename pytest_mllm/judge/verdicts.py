"""Reading a judge's verdict (1 correct, 0 incorrect) from the text after a prompt's key phrase.

Two modes:

* ``strict`` (default). The key phrase is found case-insensitively (any run of spaces between
  its words). After it may come markdown (``**``, ``_``, backticks, quotes), a ``:`` / ``=``
  / ``is``, and brackets; then the verdict token, which must be exactly ``0`` or ``1`` once
  trailing punctuation and markdown are stripped, and must not offer an alternative
  (``1(or 0)``, ``1 or 0``, ``1/0``). An occurrence of the key followed by a word is a mention
  in prose and is skipped; one followed by anything number-like is a verdict slot. The reply
  votes only if it has at least one slot, every slot holds a valid token, and all agree.
  So ``10``, ``1.0``, ``-1`` and ``1(or 0)`` give no vote.
* ``compat`` reproduces the authors' ``cal_ensemble_accuracy.py``: if the key is absent but
  its all-lower-case form is present, that form counts; take the text between the key's
  first and second occurrence (to the end when there is one occurrence); 0 if it contains
  the character ``0`` anywhere, else 1 if it contains ``1``, else no vote. So ``10`` and
  ``1(or 0)`` read as 0, and ``FINAL SCORE: 1`` gives no vote.
"""

from __future__ import annotations

import re
from typing import Literal

Mode = Literal["strict", "compat"]
MODES: tuple[Mode, ...] = ("strict", "compat")

_SLOT = re.compile(r"""[\s*_`'"]*(?:[:=]|is\b:?)?[\s*_`'"(\[]*(\S*)""", re.IGNORECASE)
_NUMBER_LIKE = re.compile(r"[-+.]?\d")
_TRAILING = "*_`'\".,;:!?)]"
_ALTERNATIVE = re.compile(r"[ \t]*[(\[]?[ \t]*(?:or\b|/)[ \t]*[(\[]?[ \t]*[01]\b", re.IGNORECASE)


def _key_pattern(key: str) -> re.Pattern[str]:
    return re.compile(r"\b" + r"\s+".join(map(re.escape, key.split())) + r"\b", re.IGNORECASE)


def _strict(text: str, key: str) -> tuple[int | None, str | None]:
    found: set[int] = set()
    mentioned = False
    for match in _key_pattern(key).finditer(text):
        mentioned = True
        slot = _SLOT.match(text, match.end())
        assert slot is not None  # every part of the pattern is optional
        raw = slot.group(1)
        if not _NUMBER_LIKE.match(raw):
            continue  # the key mentioned in prose, not a verdict
        token = raw.rstrip(_TRAILING)
        if token not in ("0", "1") or _ALTERNATIVE.match(text, slot.end()):
            line = (raw + text[slot.end():]).split("\n", 1)[0][:40]
            return None, f"{key!r} is followed by {line!r}, not a lone 0 or 1"
        found.add(int(token))
    if len(found) == 1:
        return found.pop(), None
    if found:
        return None, f"{key!r} is given both 0 and 1"
    if mentioned:
        return None, f"{key!r} is not followed by a 0 or 1"
    return None, f"no {key!r} in the reply"


def _compat(text: str, key: str) -> tuple[int | None, str | None]:
    if key not in text and key.lower() in text:
        text = text.replace(key.lower(), key)
    if key not in text:
        return None, f"no {key!r} in the reply (as written or in lower case)"
    after = text.split(key)[1]
    if "0" in after:
        return 0, None
    if "1" in after:
        return 1, None
    return None, f"no 0 or 1 after {key!r}"


def read_verdict(text: str, key: str, mode: Mode = "strict") -> tuple[int | None, str | None]:
    """(verdict, problem): 0 or 1 and None, or None and why the reply gives no vote."""
    if mode not in MODES:
        raise ValueError(f"verdict mode {mode!r} is not one of {', '.join(MODES)}")
    if not text.strip():
        return None, "empty reply"
    return _strict(text, key) if mode == "strict" else _compat(text, key)


def parse_verdict(text: str, key: str, mode: Mode = "strict") -> int | None:
    """The verdict (0 or 1) after `key` in a judge's reply, or None when it gives no vote."""
    return read_verdict(text, key, mode)[0]
