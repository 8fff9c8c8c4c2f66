"""Per-sample answer metrics scored against reference answers, as LIME-M's subtasks use them.

Each metric maps (answer, references) to a score in [0, 1]; a sample counts as correct when
its score reaches the metric's threshold. Every one reads the whole response as the model gave
it, as lmms-eval hands it to LIME-M's scoring functions (no first-line cut, no stripping beyond
the metric's own).

* ``anls``: ANLS, the best over the references; correct at 1.0 (an exact match after
  lowercasing and collapsing spaces). LIME-M: InfoVQA (and DocVQA-style OCR questions).
* ``relaxed_accuracy``: 1.0 when a number is within 5 % of the target, or a non-number equals
  it ignoring case, else 0.0; correct at 1.0. LIME-M: ChartQA.
* ``vqa_match``: the VQA accuracy ("match score") against the human answers; correct at 0.6,
  i.e. two of ten humans gave the answer. LIME-M: TextVQA, OK-VQA.
* ``caption_bleu4``: BLEU-4 of the caption against all reference captions as pycocoevalcap
  scores one caption, in 0–1; correct at 0.2 (a caption subtask's number is its BLEU-4 over all
  captions, `scoring/captions.py`). LIME-M: COCO Caption, TextCaps (NoCaps in LIME's curation).

The bundled TextVQA, DocVQA, ChartQA and OCRBench specs use scorers that read the whole
response (not its first line) and accept a TSV answer cell holding a Python list literal:
``textvqa_score`` (VLMEvalKit's VQA normalisation and accuracy, correct at 0.6), ``docvqa_anls``
(ANLS on the response as given), ``chartqa_relaxed`` (relaxed accuracy on the response
stripped), ``ocrbench`` and ``ocrbench_hme`` (OCRBench's substring match, `scoring/ocrbench.py`), and
``exact_match_max`` / ``exact_match_mean`` (VLMEvalKit's `accuracy` method: the response equal to an
answer, both stripped and lowercased; OCRVQA takes the best answer, GQA the share of answers).

Sources: LIME (Zhu et al. 2024, arXiv:2409.06851), whose code (github.com/kangreen0210/LIME,
read in its mirror kangreen0210/LIME-rebuttal) is a fork of lmms-eval.

* **Scores.** Its task folders ``lmms_eval/tasks/*_suit/`` compute ANLS for InfoVQA
  (lmms-eval's ``anls`` in ``lmms_eval/api/metrics.py``), ChartQA's ``relaxed_correctness``
  (``chartqa_suit/utils.py``: 5 % relative tolerance for numbers, a trailing ``%`` divides by
  100, otherwise a case-insensitive string comparison), and for TextVQA and OK-VQA the VQA
  accuracy logged as ``exact_match`` (``textvqa_suit/utils.py``, ``ok_vqa_suit/utils.py``):
  answers and prediction pass through lmms-eval's ``EvalAIAnswerProcessor``
  (``lmms_eval/tasks/_task_utils/vqa_eval_metric.py``, the VQA challenge's normalisation),
  then each of the n human answers contributes min(1, m / 3), m being how many of the other
  n − 1 humans gave the predicted answer, and the n values are averaged. With ten humans of
  whom k gave the prediction that is 0.3, 0.6, 0.9 and 1.0 for k = 1, 2, 3 and ≥ 4.
  Captions are scored there by corpus-level COCO metrics (BLEU-1…4, METEOR, ROUGE-L, CIDEr):
  `scoring/captions.py` computes BLEU-4 and CIDEr over a subtask as pycocoevalcap does.
* **Thresholds.** LIME's curation (``utils/filter_func.py``) counts a model as right on a
  sample when its per-sample score is ``>= threshold``, 1.0 by default; the script's own
  calls pass 0.6 for OK-VQA and 0.2 for NoCaps captions. Hence 1.0 for ANLS and relaxed
  accuracy, 0.6 for the VQA match score (TextVQA shares OK-VQA's metric, so its threshold
  too) and 0.2 for captions. The curation code does not show which per-caption metric its
  0.2 applies to; here it applies to BLEU-4 on a 0–1 scale.

Deliberate differences from the reference implementations, all documented at the function:

* captions are tokenised by sacrebleu's 13a tokeniser, lowercased and stripped of punctuation
  tokens, standing in for pycocoevalcap's Java PTB tokeniser (which strips the same punctuation
  but also splits clitics, "man's" is "man 's" there, writes brackets as "-lrb-", drops quotes and
  keeps "u.s.a." whole); the BLEU-4 and CIDEr computed from the tokens are pycocoevalcap's exactly;
* ``relaxed_accuracy`` takes the best over several references (ChartQA has one).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any, Callable, Sequence

from pytest_mllm.scoring.catalogue_templates import VQA_PROMPT, catalogue_template
from pytest_mllm.scoring.score import scorer

ANLS_THRESHOLD = 0.5  # an ANLS below this is 0 (DocVQA's rule)
RELAXED_TOLERANCE = 0.05  # ChartQA: numbers within 5 % of the target are right

Scorer = Callable[[str, Sequence[str]], float]


def answer_items(references: Sequence[str]) -> list[str]:
    """A TSV answer cell as VLMEvalKit's VQA scoring and ANLS read it: a Python list literal is its
    items, one that is not text stops the reference (`list_literal`)."""
    return list_literal(references, text_items=False)


def printed_items(references: Sequence[str]) -> list[str]:
    """A TSV answer cell as VLMEvalKit's ChartQA scoring reads it: a list literal's items, each printed."""
    return list_literal(references, text_items=True)


# --------------------------------------------------------------------------- ANLS


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insertions, deletions, substitutions), one DP row at a time.

    Plain Python on purpose: answers are a few dozen characters, where a compiled library
    (rapidfuzz, Levenshtein) saves microseconds at the cost of a dependency."""
    if len(a) < len(b):
        a, b = b, a
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        previous_diagonal, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            previous_diagonal, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous_diagonal + (ca != cb))
    return row[-1]


@scorer("anls", threshold=1.0)
def anls(answer: str, references: Sequence[str], threshold: float = ANLS_THRESHOLD) -> float:
    """Average Normalised Levenshtein Similarity of one answer: the best over the references.

    Both strings are lowercased with whitespace collapsed before the edit distance; the
    distance is divided by the longer of the two strings *as given* (DocVQA's evaluation and
    lmms-eval's ``anls`` measure the length before normalising, so surrounding spaces count).
    A similarity below `threshold` (0.5) is 0; exactly 0.5 is kept.
    """
    answer_norm = _squash(answer)
    best = 0.0
    for reference in references:
        length = max(len(reference.upper()), len(answer.upper()))
        distance = levenshtein(_squash(reference), answer_norm) / length if length else 0.0
        best = max(best, 1.0 - distance)
    return best if best >= threshold else 0.0


def _squash(text: str) -> str:
    return " ".join(text.strip().lower().split())


# --------------------------------------------------------------------------- relaxed accuracy


def _number(text: str) -> float | None:
    """ChartQA's reading of a number: Python's float(), a trailing % divides by 100."""
    try:
        return float(text.rstrip("%")) / 100 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_correct(answer: str, target: str, tolerance: float = RELAXED_TOLERANCE) -> bool:
    """ChartQA's relaxed correctness: within `tolerance` of a non-zero numeric target, else equal
    ignoring case. A target of 0 (or a non-number) is compared as text."""
    value, goal = _number(answer), _number(target)
    if value is not None and goal:
        return abs(value - goal) / abs(goal) <= tolerance
    return answer.lower() == target.lower()


@scorer("relaxed_accuracy", threshold=1.0)
def relaxed_accuracy(answer: str, references: Sequence[str]) -> float:
    """1.0 when the answer is relaxed-correct for any reference, else 0.0."""
    return 1.0 if any(relaxed_correct(answer, r) for r in references) else 0.0


# --------------------------------------------------------------------------- VQA match score

# The VQA challenge's answer normalisation as lmms-eval applies it (EvalAIAnswerProcessor).
_VQA_PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-", ">", "<", "@", "`",
                    ",", "?", "!")
_DIGIT_COMMA = re.compile(r"(?<=\d),+(?=\d)")
# The reference pattern is "(?!<=\d)(\.)(?!\d)"; its first group is a lookahead that can never
# fail before a ".", so it removes every period not followed by a digit ...
_PERIOD = re.compile(r"\.(?!\d)")
_PERIOD_LIMIT = 32  # ... at most 32 of them: the reference passes re.UNICODE (32) as sub()'s count.
NUMBER_WORDS = {"none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
                 "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10"}
ARTICLES = {"a", "an", "the"}
# Contractions written without apostrophes, restored. Only lowercase forms are listed: the
# reference table's capitalised keys (Im, Ive, Id've) never match lowercased text.
CONTRACTIONS = dict(pair.split("=") for pair in """
aint=ain't arent=aren't cant=can't couldve=could've couldnt=couldn't couldn'tve=couldn't've
couldnt've=couldn't've didnt=didn't doesnt=doesn't dont=don't hadnt=hadn't hadnt've=hadn't've
hadn'tve=hadn't've hasnt=hasn't havent=haven't hed=he'd hed've=he'd've he'dve=he'd've hes=he's
howd=how'd howll=how'll hows=how's isnt=isn't itd=it'd itd've=it'd've it'dve=it'd've itll=it'll
maam=ma'am mightnt=mightn't mightnt've=mightn't've mightn'tve=mightn't've mightve=might've
mustnt=mustn't mustve=must've neednt=needn't notve=not've oclock=o'clock oughtnt=oughtn't
ow's'at='ow's'at 'ows'at='ow's'at 'ow'sat='ow's'at shant=shan't shed've=she'd've she'dve=she'd've
shouldve=should've shouldnt=shouldn't shouldnt've=shouldn't've shouldn'tve=shouldn't've
somebody'd=somebodyd somebodyd've=somebody'd've somebody'dve=somebody'd've somebodyll=somebody'll
somebodys=somebody's someoned=someone'd someoned've=someone'd've someone'dve=someone'd've
someonell=someone'll someones=someone's somethingd=something'd somethingd've=something'd've
something'dve=something'd've somethingll=something'll thats=that's thered=there'd
thered've=there'd've there'dve=there'd've therere=there're theres=there's theyd=they'd
theyd've=they'd've they'dve=they'd've theyll=they'll theyre=they're theyve=they've twas='twas
wasnt=wasn't wed've=we'd've we'dve=we'd've weve=we've werent=weren't whatll=what'll whatre=what're
whats=what's whatve=what've whens=when's whered=where'd wheres=where's whereve=where've whod=who'd
whod've=who'd've who'dve=who'd've wholl=who'll whos=who's whove=who've whyll=why'll whyre=why're
whys=why's wont=won't wouldve=would've wouldnt=wouldn't wouldnt've=wouldn't've
wouldn'tve=wouldn't've yall=y'all yall'll=y'all'll y'allll=y'all'll yall'd've=y'all'd've
y'alld've=y'all'd've y'all'dve=y'all'd've youd=you'd youd've=you'd've you'dve=you'd've youll=you'll
youre=you're youve=you've
""".split())


def normalize_vqa_answer(text: str) -> str:
    """The VQA answer normalisation, step by step as lmms-eval's EvalAI processor does it.

    1. lowercase; drop "," and "?"; split a possessive "'s" off its word; newlines and tabs
       become spaces; strip;
    2. each punctuation mark of ; / [ ] " { } ( ) = + \\ _ - > < @ ` , ? ! is deleted where it
       touches a space somewhere in the text (or the text has a comma between digits),
       otherwise replaced by a space; periods not followed by a digit are deleted;
    3. per word: number words zero–ten become digits ("none" is "0"), the articles a/an/the
       are dropped, and contractions written without apostrophes get them back.
    """
    text = text.lower().replace(",", "").replace("?", "").replace("'s", " 's").strip()
    text = text.replace("\n", " ").replace("\t", " ").strip()
    out = text
    for mark in _VQA_PUNCTUATION:
        touches = mark + " " in text or " " + mark in text
        out = out.replace(mark, "" if touches or _DIGIT_COMMA.search(text) else " ")
    out = _PERIOD.sub("", out, count=_PERIOD_LIMIT)
    words = [NUMBER_WORDS.get(w, w) for w in out.lower().split()]
    return " ".join(CONTRACTIONS.get(w, w) for w in words if w not in ARTICLES)


@scorer("vqa_match", threshold=0.6)
def vqa_match(answer: str, references: Sequence[str]) -> float:
    """VQA accuracy of one answer against the human answers (duplicates count).

    For each human answer, min(1, (other humans giving the predicted answer) / 3); the mean
    over all humans, computed exactly and rounded once. A single reference scores 0, as in
    lmms-eval (it has no other humans).
    """
    mine = normalize_vqa_answer(answer)
    humans = [normalize_vqa_answer(r) for r in references]
    agreeing = sum(h == mine for h in humans)
    shares = [Fraction(min(3, agreeing - (h == mine)), 3) for h in humans]
    return float(sum(shares, Fraction(0)) / len(shares))


# --------------------------------------------------------------------------- caption BLEU-4

# Punctuation tokens COCO's PTB tokeniser removes from captions before scoring.
_CAPTION_PUNCTUATION = {"''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-", ".", "?", "!", ",", ":", "-",
                        "--", "...", ";"}


def _tokenizer() -> Any:
    """sacrebleu's 13a tokeniser, or an ImportError that says how to get it."""
    try:
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    except ImportError:
        raise ImportError("caption BLEU-4 needs sacrebleu: pip install sacrebleu") from None
    return Tokenizer13a()


def caption_tokens(text: str) -> str:
    """Lowercased, sacrebleu-13a-tokenised caption without punctuation tokens, space-joined."""
    return " ".join(t for t in _tokenizer()(text.lower().strip()).split() if t not in _CAPTION_PUNCTUATION)


def caption_details(caption: str, references: Sequence[str]) -> dict[str, Any]:
    """The record's `caption`: its tokens, the references' and the BLEU n-gram counts, which a subtask's
    corpus BLEU-4 and CIDEr need (`scoring/captions.py`)."""
    from pytest_mllm.scoring.captions import CAPTION, bleu_counts

    tokens, refs = caption_tokens(caption), [caption_tokens(r) for r in references]
    return {CAPTION.key: {"caption": tokens, "references": refs, "bleu_counts": bleu_counts(tokens, refs)}}


@scorer("caption_bleu4", threshold=0.2, details=caption_details)
def caption_bleu4(answer: str, references: Sequence[str]) -> float:
    """BLEU-4 of one caption against all its reference captions, in 0–1, as pycocoevalcap scores a
    one-caption corpus (`scoring/captions.py`: clipped n-gram counts, the closest reference length,
    its 1e-15/1e-9 constants, so a caption sharing no 4-gram scores a few 1e-5 or less, not 0), on
    `caption_tokens`."""
    from pytest_mllm.scoring.captions import corpus_bleu4

    return min(1.0, corpus_bleu4([(caption_tokens(answer), [caption_tokens(r) for r in references])]))


# --------------------------------------------------------------------------- VLMEvalKit's VQA scoring

# VLMEvalKit's VQA reading (vlmeval/dataset/utils/vqa_eval.py); the bundled benchmarks' scorers that rely on
# it register in their own modules (`textvqa.py`, `docvqa.py`, `chartqa.py`, `ocrbench.py`).
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
_LONE_PERIOD = re.compile(r"(?<!\d)\.(?!\d)")  # a period with no digit on either side


def vlmevalkit_punctuation(text: str) -> str:
    """VLMEvalKit's punctuation step (also its yes/no reading's): each mark of _VQA_PUNCTUATION is
    deleted where it touches a space in the text (or the text has a digit, comma, digit), otherwise
    replaced by a space; then at most 32 periods with no digit on either side are deleted."""
    out = text
    for mark in _VQA_PUNCTUATION:
        touches = mark + " " in text or " " + mark in text
        out = out.replace(mark, "" if touches or _DIGIT_COMMA_DIGIT.search(text) else " ")
    return _LONE_PERIOD.sub("", out, count=_PERIOD_LIMIT)


def _exact_matches(answer: str, references: Sequence[str]) -> list[float]:
    """VLMEvalKit's `accuracy` method: 1.0 per accepted answer equal to the response, both stripped and
    lowercased, else 0.0."""
    mine = answer.strip().lower()
    return [1.0 if reference.strip().lower() == mine else 0.0 for reference in references]


@scorer("exact_match_max", threshold=1.0, cells=answer_items)
def exact_match_max(answer: str, references: Sequence[str]) -> float:
    """OCRVQA as VLMEvalKit scores it: 1.0 when any accepted answer equals the response (stripped, lowercased)."""
    return max(_exact_matches(answer, references))


catalogue_template("vqa_exact", label="exact match (best answer)", parser="exact_match_max", prompt=VQA_PROMPT,
                   max_new_tokens=32,
                   scored_by="the response equal to an answer (stripped, lowercased), per split (the tasks)",
                   metrics=("accuracy", "mean_score", "category"), headline="mean_score")


@scorer("exact_match_mean", threshold=1.0, cells=answer_items)
def exact_match_mean(answer: str, references: Sequence[str]) -> float:
    """GQA as VLMEvalKit scores it: the share of accepted answers equal to the response (stripped,
    lowercased); with one answer, 1.0 or 0.0."""
    matches = _exact_matches(answer, references)
    return math.fsum(matches) / len(matches)


catalogue_template("vqa_exact_mean", label="exact match (share of answers)", parser="exact_match_mean",
                   prompt=VQA_PROMPT, max_new_tokens=32,
                   scored_by="the share of answers equal to the response (stripped, lowercased), per split (the tasks)",
                   metrics=("accuracy", "mean_score", "category"), headline="mean_score")


def list_literal(references: Sequence[str], *, text_items: bool = True) -> list[str]:
    """The accepted answers as VLMEvalKit reads an answer cell (`istype(answer, list)`, then `eval`): a
    single cell that computes to a list (`scoring/list_cells.py`: literal arithmetic only, never eval)
    gives its items; any other cell, list-looking text included ("[Gambia, Niger]", a formula
    "[0, \\pi]"), is one answer, compared as text. `text_items`: the reference's metric prints each
    item (ChartQA: `[1/2]` is the answer "0.5"); otherwise (VQA score, ANLS) an item that is not text
    stops the reference, and here it is this row's error."""
    from pytest_mllm.scoring.list_cells import list_cell

    if len(references) != 1 or not references[0].lstrip().startswith("["):
        return list(references)
    value = list_cell(references[0].strip())
    if value is None:
        return list(references)
    if value == []:
        raise ValueError("answer cell '[]' is an empty list of answers, which the reference cannot score either")
    if not text_items and not all(isinstance(item, str) for item in value):
        shown = next(item for item in value if not isinstance(item, str))
        raise ValueError(f"answer cell {references[0]!r} is a list holding {shown!r}, not text, which the "
                         "reference cannot score either (its metric reads every answer as text)")
    return [str(item) for item in value]


