"""Word matching, LVLM-eHub's cheap baseline: is a reference answer's text inside the answer?

Two readings; the first is the default.

**As the authors score it** (``word_match(answer, refs)``; parser ``word_match``). Tiny
LVLM-eHub's ``VQAEval.evaluate`` (OpenGVLab/Multi-Modality-Arena, tiny_lvlm_evaluation/utils/
tools.py), reproduced step by step in our own code, quirks included. Answer and every
reference are prepared alike:

1. newlines and tabs become spaces; the ends are stripped;
2. the marks ``; / [ ] " { } ( ) = + \\ _ - > < @ ` , ? !`` are each deleted where the text
   has that mark next to a space somewhere (``"red, blue"`` → ``red blue``), else turned into
   spaces (``"red,blue"`` → ``red blue``); when the text has a digit, a comma and a digit in a
   row anywhere, every listed mark is deleted (``"red-blue 1,2"`` → ``redblue 12``). Other
   characters stay: ``' : * % $ # & ^ | ~`` and all non-ASCII punctuation (periods: step 3);
3. periods not followed by a digit are deleted (``U.S.A.`` → ``USA``, ``3.5`` kept), at most
   32 of them (the original passes ``re.UNICODE``, 32, where ``re.sub`` takes a count);
4. lower-cased with ``str.lower`` (not casefold: ``STRASSE`` is not ``straße``), split at any
   whitespace, number words ``none``/``zero`` … ``ten`` turned into digits, the articles
   a, an, the dropped, then contractions spelled without an apostrophe restored (``dont`` →
   ``don't``, ``twas`` → ``'twas``; also the table's odd ``somebody'd`` → ``somebodyd``),
   words joined by single spaces.

An answer matches when some prepared reference is found in the prepared answer by the regex
``\\b<reference>\\b``. Its edges follow: ``5`` is found in ``3.5``; ``$3.50`` and ``'twas``
are never found (``\\b`` cannot sit before a non-word character that follows a space or the
start); a reference left empty (``""``, ``"the"``, ``"?"``) matches any answer that has a
word character, as the original scores it (no error); no reference at all (``gt_answers: []``) is
never right. A reference the data gives as a number stops ``VQAEval`` (``.replace`` of an int): a
row that no reference before it matches errors, saying the reference cannot score it either.

**Lenient** (``word_match(..., lenient=True)``; parser ``word_match_lenient``), our earlier
reading, friendlier and not the paper's: case-folded; thousands commas dropped (``1,000`` →
``1000``); a period kept only between digits; all other punctuation (apostrophes included)
turned into spaces; number words zero … ten (and ``none``) turned into digits; articles
dropped; a reference matches when its words occur in the answer as a contiguous run of whole
words. References with no words are skipped; none left is a ValueError.

An empty answer is never correct under either reading.
"""

from __future__ import annotations

import re
from typing import Sequence

from pytest_mllm.record import RecordPart
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.score import NotScored, Scored, Verdict, open_answers_parser, parser, references, stripped

# An open answer's verdict by word matching (the paper's cheap baseline), kept beside the judge's.
WORD_MATCH: RecordPart[bool] = RecordPart("word_match", in_every_record=True)

_NUMBERS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
            "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
_ARTICLES = frozenset({"a", "an", "the"})

# -- the authors' reading (VQAEval) ------------------------------------------------------------

_MARKS = ";/[]\"{}()=+\\_-><@`,?!"
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
_PERIOD = re.compile(r"\.(?!\d)")
_PERIOD_LIMIT = 32  # re.UNICODE's value, passed where re.sub takes its count

# Contracted forms whose spellings with one apostrophe left out are restored to them: a form
# with one apostrophe from the form without it (dont → don't); a form with several from each
# spelling that lacks exactly one of them (couldnt've, couldn'tve → couldn't've).
_CONTRACTED = """
ain't aren't can't could've couldn't couldn't've didn't doesn't don't hadn't hadn't've hasn't haven't
he'd he'd've he's how'd how'll how's isn't it'd it'd've it'll ma'am mightn't mightn't've might've
mustn't must've needn't not've o'clock oughtn't 'ow's'at shan't she'd've should've shouldn't
shouldn't've somebody'd've somebody'll somebody's someone'd someone'd've someone'll someone's
something'd something'd've something'll that's there'd there'd've there're there's they'd they'd've
they'll they're they've 'twas wasn't we'd've we've weren't what'll what're what's what've when's
where'd where's where've who'd who'd've who'll who's who've why'll why're why's won't would've
wouldn't wouldn't've y'all y'all'll y'all'd've you'd you'd've you'll you're you've
""".split()


def _without_one_apostrophe(form: str) -> list[str]:
    spots = [i for i, ch in enumerate(form) if ch == "'"]
    return [form[:i] + form[i + 1:] for i in spots]


_CONTRACTIONS: dict[str, str] = {spelling: form for form in _CONTRACTED for spelling in _without_one_apostrophe(form)}
_CONTRACTIONS["somebody'd"] = "somebodyd"  # the original table maps this one the wrong way round


def _marks_removed(text: str) -> str:
    delete_all = _DIGIT_COMMA_DIGIT.search(text) is not None
    out = text
    for mark in _MARKS:  # each decision reads the text as it came in
        if delete_all or f"{mark} " in text or f" {mark}" in text:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD.sub("", out, count=_PERIOD_LIMIT)


def vqa_normalize(text: str) -> str:
    """`text` prepared as the authors' ``VQAEval`` prepares answers and references (module docstring)."""
    text = _marks_removed(text.replace("\n", " ").replace("\t", " ").strip())
    words = [_NUMBERS.get(w, w) for w in text.lower().split()]
    return " ".join(_CONTRACTIONS.get(w, w) for w in words if w not in _ARTICLES)


def _found(reference: str, answer: str) -> bool:
    return re.search(rf"\b{re.escape(reference)}\b", answer) is not None


def vqa_eval_match(answer: str, references: str | Sequence[str]) -> bool:
    """Exactly the authors' ``VQAEval().evaluate(answer, references) == 1``, with no data-error check."""
    refs = [references] if isinstance(references, str) else list(references)
    prepared = vqa_normalize(answer)
    return any(_found(vqa_normalize(r), prepared) for r in refs)


# -- the lenient reading -------------------------------------------------------------------------

_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_PUNCT = re.compile(r"(?!(?<=\d)\.(?=\d))[^\w\s]|_")


def normalize(text: str) -> list[str]:
    """The words of `text` under the lenient reading (see the module docstring)."""
    text = _PUNCT.sub(" ", _THOUSANDS.sub("", text.casefold()))
    words = (_NUMBERS.get(w, w) for w in text.split())
    return [w for w in words if w not in _ARTICLES]


def _contains(words: list[str], run: list[str]) -> bool:
    return any(words[i:i + len(run)] == run for i in range(len(words) - len(run) + 1))


def _lenient_match(answer: str, refs: list[str]) -> bool:
    runs = [run for run in map(normalize, refs) if run]
    if not runs:
        raise ValueError(f"no usable reference answer to match against: {refs!r}")
    words = normalize(answer)
    return any(_contains(words, run) for run in runs)


# -- the scorer ----------------------------------------------------------------------------------


def word_match(answer: str, references: str | Sequence[str], *, lenient: bool = False,
               stops_at: int | None = None) -> bool:
    """True when some reference is found in `answer`: the authors' reading, or the lenient one.

    The lenient reading raises ValueError when no reference has a word left (a data error). The
    authors' scores a sample as their ``VQAEval`` does: no reference (an empty list) is never right;
    `stops_at`, the position of a reference the data gave as a number, is where ``VQAEval`` stops with
    an AttributeError, so a sample no reference before it matches raises ValueError saying so.
    """
    refs = [references] if isinstance(references, str) else list(references)
    if lenient:
        return _lenient_match(answer, refs)
    if stops_at is None:
        return vqa_eval_match(answer, refs)
    if vqa_eval_match(answer, refs[:stops_at]):
        return True
    raise ValueError(f"the reference answer {refs[stops_at]} is a number, where Tiny LVLM-eHub's VQAEval stops "
                     "(AttributeError: .replace of an int), so the reference cannot score this row either; "
                     "write it as text")


# -- the parsers ---------------------------------------------------------------------------------


def _verdict(lenient: bool) -> Verdict:
    def verdict(text: str, parsed: str, answer: str, sample: Sample) -> Scored:
        try:
            correct = word_match(text, references(sample), lenient=lenient,
                                 stops_at=sample.metadata.get("vqaeval_stops_at"))
        except ValueError as exc:
            raise NotScored(f"bad reference answer: {exc}", with_reading=False) from None
        return Scored(correct, {WORD_MATCH.key: correct})

    return verdict


@open_answers_parser("word_match", answer=stripped, verdict=_verdict(lenient=False))
def word_match_text(response: str, sample: Sample | None = None) -> str:
    """Open answers scored by Tiny LVLM-eHub's word matching as its authors wrote it (`parser:
    word_match`, also the verdict of every open answer its parser does not score): the response as their
    ``VQAEval`` prepares it; correct when a reference, prepared alike, is found in it."""
    return vqa_normalize(response)


@parser("word_match_lenient", answer=stripped, verdict=_verdict(lenient=True))
def word_match_lenient_text(response: str, sample: Sample | None = None) -> str:
    """Open answers scored by our lenient word matching, not the paper's (`parser: word_match_lenient`):
    the response's words, case-folded, punctuation split off."""
    return " ".join(normalize(response))
