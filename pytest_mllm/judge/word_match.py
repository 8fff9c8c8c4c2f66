"""Word matching, LVLM-eHub's cheap baseline: is a reference answer's text inside the answer?

Both texts are normalized alike (after the VQA evaluation's conventions that LVLM-eHub's
`VQAEval` uses): case-folded; thousands commas dropped (``1,000`` → ``1000``); a period
kept only between digits (``3.5``); all other punctuation turned into spaces; number words
zero … ten (and ``none``) turned into digits; the articles a, an, the dropped. An answer
is correct when the words of some reference occur in it as a contiguous run of whole words:
reference ``red`` matches ``The car is red.`` but not ``reddish``. Not reproduced from the
original: its contraction table (``dont`` → ``don't``); apostrophes split words here instead.

An empty answer is never correct. A reference with no words left after normalization
(``""``, ``"the"``, ``"?"``) can never match; if no reference has words, that is a data
error and `word_match` raises ValueError instead of scoring.
"""

from __future__ import annotations

import re
from typing import Sequence

_NUMBERS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
            "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
_ARTICLES = {"a", "an", "the"}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_PUNCT = re.compile(r"(?!(?<=\d)\.(?=\d))[^\w\s]|_")


def normalize(text: str) -> list[str]:
    """The words of `text` after normalization (see the module docstring)."""
    text = _PUNCT.sub(" ", _THOUSANDS.sub("", text.casefold()))
    words = (_NUMBERS.get(w, w) for w in text.split())
    return [w for w in words if w not in _ARTICLES]


def _contains(words: list[str], run: list[str]) -> bool:
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))


def word_match(answer: str, references: str | Sequence[str]) -> bool:
    """True when some reference's words occur in `answer` as whole words, in order."""
    refs = [references] if isinstance(references, str) else list(references)
    runs = [run for run in map(normalize, refs) if run]
    if not runs:
        raise ValueError(f"no usable reference answer to match against: {refs!r}")
    words = normalize(answer)
    return any(_contains(words, run) for run in runs)
