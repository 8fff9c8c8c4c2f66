"""Answer extraction: turn a model's free-text response into a comparable answer.

Every parser maps (response, sample) to a normalized answer string; "other" means no
answer could be read, which always scores as wrong. Each registers itself here with `@parser`
(`scoring/score.py`); MME's, POPE's, MMMU's, word matching's, VRPTEST's code reading and CC-OCR's register in
their own modules (`mme.py`, `pope.py`, `mmmu.py`, `word_match.py`, `code_match.py`, `ccocr.py`).

Parsers scored against the reference answers with a per-sample score in [0, 1] (LIME-M's
subtask metrics, see `references.py`, where they register with `@scorer`) read the whole
response as given, as lmms-eval does, and are named after their metric:

* ``anls``: ANLS (DocVQA, InfoVQA), correct at an exact match (score 1.0);
* ``relaxed_accuracy``: ChartQA's 5 % numeric tolerance, else case-insensitive equality;
* ``vqa_match``: the VQA match score over human answers (TextVQA, OK-VQA), correct at 0.6;
* ``caption_bleu4``: sentence BLEU-4 of a caption (COCO, TextCaps, NoCaps), correct at 0.2.

The scorers of the bundled TextVQA, DocVQA, ChartQA and OCRBench specs (``textvqa_score``,
``docvqa_anls``, ``chartqa_relaxed``, ``ocrbench``, ``ocrbench_hme``, each in the module of its name) read the
whole response too, and
a TSV answer cell holding a Python list literal as its items (their `@scorer(..., cells=…)`). ``yes_no_vlmevalkit`` is
VLMEvalKit's yes/no reading (HallusionBench), in its words ("Yes", "No", "Unknown"), compared with the answer
cell exactly.
"""

from __future__ import annotations

import re
import string
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.catalogue_templates import MCQ_PROMPT, MCQ_READ, POOLED, catalogue_template
from pytest_mllm.scoring.references import vlmevalkit_punctuation
from pytest_mllm.scoring.score import as_given, letter, parser

OTHER = "other"
UNREADABLE = "unreadable"  # the choice reading could not decide: scored wrong, never an error


_YES_WORDS = {"yes", "yeah", "yep", "true", "correct", "affirmative"}
_NO_WORDS = {"no", "nope", "not", "false", "incorrect", "nah", "negative"}
_WORD = re.compile(r"[a-z]+")


@parser("yes_no_lenient")
def yes_no_lenient(response: str, sample: Sample | None = None) -> str:
    """A forgiving yes/no reading: the first yes-like or no-like word anywhere wins.

    Not the official yes/no reading of any benchmark; choose it by name (`parser: yes_no_lenient`).
    """
    for word in _WORD.findall(response.lower()):
        if word in _YES_WORDS:
            return "yes"
        if word in _NO_WORDS:
            return "no"
    return OTHER


@parser("yes_no_vlmevalkit", answer=as_given)
def yes_no_vlmevalkit(response: str, sample: Sample | None = None) -> str:
    """VLMEvalKit's yes/no reading (`YOrN_Extraction`; HallusionBench, exact matching): the response
    lowercased, its punctuation treated as for TextVQA, split into words; "yes" without "no" is "Yes",
    "no" without "yes" is "No", anything else (both, neither) is "Unknown". Its words, as the
    reference compares them with the answer cell exactly (`normalize_answer` keeps that cell as given:
    an answer "yes" or "Yes " is never right there)."""
    words = vlmevalkit_punctuation(response.lower()).split()
    if "yes" in words and "no" not in words:
        return "Yes"
    if "no" in words and "yes" not in words:
        return "No"
    return "Unknown"


REFUSED = "Z"  # VLMEvalKit's reading of a refusal or a lone "Z": scored wrong

# VLMEvalKit's rule-based option reading (`can_infer` in vlmeval/utils/matching_util.py), the
# reading MMBench's CircularEval uses without a GPT judge. Characters blanked before splitting:
_BLANKED = str.maketrans({c: " " for c in ".()[],:;!*#{}"})
_REFUSALS = ("Sorry, I can't help with images of people yet.", "I can't process this file.",
             "I'm sorry, but without the image provided", "Cannot determine the answer")
_ANSWER_IS_LETTER = re.compile(r"(?i)(?:correct\s+)?answer\s+is\s+\**([ABCD])\**")


def _option_letter(response: str, letters: list[str]) -> str | None:
    """A letter standing alone among the last four words, the only option letter named."""
    if "Failed to obtain answer via API" in response:
        return None
    if any(refusal in response for refusal in _REFUSALS):
        return REFUSED
    words = response.translate(_BLANKED).split()
    named = [letter for letter in letters if letter in words]
    if len(named) == 1:
        if words.index(named[0]) > len(words) - 5:
            return named[0]
    elif not named and "Z" in words:
        return REFUSED
    match = _ANSWER_IS_LETTER.search(response)
    if match and match.group(1).upper() in letters:
        return match.group(1).upper()
    return None


def _option_text(response: str, choices: tuple[tuple[str, str], ...]) -> str | None:
    """The only option whose text (lowercased) occurs in a response at most twice their length."""
    lowered = response.lower()
    if len(lowered) > 2 * sum(len(text) for _, text in choices):
        return None
    named = [letter for letter, text in choices if text.lower() in lowered]
    return named[0] if len(named) == 1 else None


@parser("choice", answer=letter, unreadable=UNREADABLE)
def multiple_choice(response: str, sample: Sample) -> str:
    """VLMEvalKit's rule-based option reading (`can_infer`), as MMBench is scored without a judge.

    First a letter: the response with ``.()[],:;!*#{}`` blanked is split into words; exactly one
    option letter among them, standing in the last four words, is the answer ("B", "(B) dog",
    "The answer is C"); a lone "Z" or a refusal reads as "Z"; "answer is B" anywhere decides for
    A–D. Else the option text: the only option whose text occurs in the response (compared
    lowercased; responses longer than twice all option texts together are not read). Anything
    else ("A and B", "B or C", an early letter in a long sentence) is "unreadable" and wrong.
    """
    letters = [letter for letter, _ in sample.choices]
    return (_option_letter(response, letters) or _option_text(response, sample.choices)
            or UNREADABLE)


catalogue_template("mcq", label="multiple choice", parser="choice", prompt=MCQ_PROMPT, max_new_tokens=8,
                   scored_by=f"{MCQ_READ}; accuracy per split (the tasks), category and l2-category{POOLED}",
                   metrics=("accuracy", "category"))


_LETTER_ONLY = re.compile(r"^\s*[\(\[]?([A-Z])[\)\]]?[.:)]?\s*$")
_ANSWER_IS = re.compile(r"(?i:answer)\s*(?:(?i:is)\s*)?:?\s*[\(\[]?([A-Z])\b")
_LEADING_LETTER = re.compile(r"^\s*[\(\[]?([A-Z])(?:[\)\]]|[.:](?:\s|$))")
_TOKEN = re.compile(r"[\(\[]?\b([A-Z])\b[\)\]]?")


@parser("choice_lenient", answer=letter)
def multiple_choice_lenient(response: str, sample: Sample) -> str:
    """A forgiving letter reading (not VLMEvalKit's; choose it as `parser: choice_lenient`):
    "B", "(B)", "B.", "Answer: B", "B. the dog" anywhere, or the option text.

    A response naming several letters or several option texts is ambiguous: "other".
    """
    letters = {letter for letter, _ in sample.choices}
    for pattern in (_LETTER_ONLY, _ANSWER_IS, _LEADING_LETTER):
        match = pattern.search(response)
        if match and match.group(1).upper() in letters:
            return match.group(1).upper()
    standalone = {m.group(1) for m in _TOKEN.finditer(response) if m.group(1) in letters}
    if _starts_with_article(response):
        standalone.discard("A")
    if len(standalone) == 1:
        return standalone.pop()
    lowered = response.lower()
    named = [letter for letter, text in sample.choices if text and text.lower() in lowered]
    if len(named) == 1:
        return named[0]
    return OTHER


_LEADING_OPTION = re.compile(r"^\s*([A-Z])\.")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@parser("choice_exact_match", answer=letter)
def choice_exact_match(response: str, sample: Sample | None = None) -> str:
    """lmms-eval's letter reading for AI2D (LIME's ``ai2d_suit``): a response opening with "B." is
    "B", any other is kept whole; then, as its ``exact_match`` with ignore_case and
    ignore_punctuation, lowercased and stripped of ASCII punctuation (returned upper-cased, so that
    "b" and "(B)" read as "B" and "The answer is B" reads as itself, never an option)."""
    match = _LEADING_OPTION.match(response)
    text = match.group(1) if match else response
    return text.lower().translate(_PUNCTUATION).upper()


@parser("choice_llava", answer=letter)
def choice_llava(response: str, sample: Sample | None = None) -> str:
    """LLaVA's ScienceQA reading (lmms-eval's ``sqa_process_results``, LIME's ``scienceqa_img_suit``): the
    response is the letter itself, or opens with an upper-case letter and a period ("B. ..."); any other
    response ("b", "(B)", "The answer is B") reads as "other"."""
    if len(response) == 1 and response.isupper():
        return response
    if len(response) >= 2 and response[0].isupper() and response[1] == ".":
        return response[0]
    return OTHER


@parser("exact_stripped")
def exact_stripped(response: str, sample: Sample | None = None) -> str:
    """The response lowercased and stripped, nothing else: lmms-eval's POPE check in LIME's ``pope_suit``
    (right only when it equals the answer, so "yes." and "No, there is none." are wrong)."""
    return response.lower().strip()


def _starts_with_article(response: str) -> bool:
    """True when "A" opens the response as the English article ("A dog ...")."""
    return re.match(r"^\s*A\s+[a-z]", response) is not None


def exact_words(text: str) -> str:
    """Lowercased, spaces collapsed, a final period dropped: both sides of the `exact` comparison."""
    return " ".join(text.lower().split()).rstrip(".")


@parser("exact", answer=exact_words)
def exact(response: str, sample: Sample | None = None) -> str:
    """Case- and space-insensitive exact match of the whole response."""
    return exact_words(response)
