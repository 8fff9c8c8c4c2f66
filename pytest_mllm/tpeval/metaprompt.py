"""What the optimizer LLM is asked, and how its replies are read.

Two conversations (OpenAI-style lists of {"role", "content"} messages):

* `optimizer_messages` — the meta-prompt: what the task is and how prompts are scored, the
  top-K earlier prompts with score, accuracy and introspection (worst first, so the best
  sits next to the request), a few examples with their correct answers, and the request
  for ONE new prompt, different from all those above and scoring higher given the introspections
  (TP-Eval's instruction part), that edits at most {counter} words of the best one.
* `introspection_messages` — why did the model get these examples wrong under this
  prompt? Two or three sentences, fed back into later meta-prompts.

Replies carry the new prompt between the markers ``<prompt>`` and ``</prompt>``
(`PROMPT_OPEN`, `PROMPT_CLOSE`). `extract_prompt` takes the last non-empty marked block;
a reply without markers is accepted only when it is short (at most `FALLBACK_LINES`
non-empty lines), and then its first line that is not a lead-in ending in ":" is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from pytest_mllm.tpeval.score import Candidate, top_k

Message = dict[str, Any]

PROMPT_OPEN, PROMPT_CLOSE = "<prompt>", "</prompt>"
SHOWN_EXAMPLES = 3  # examples in a meta-prompt
SHOWN_WRONG = 5  # wrong answers in an introspection request
FALLBACK_LINES = 3
MAX_INTROSPECTION_CHARS = 600
_CLIP = 300  # characters of one question/answer/response shown to the optimizer

_THINK = re.compile(r"<think>.*?(?:</think>|\Z)", re.DOTALL | re.IGNORECASE)
_BLOCK = re.compile(r"<prompt>(.*?)(?:</prompt>|\Z)", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[\w-]*\s*|\s*```$")
_LABEL = re.compile(r"^(?:\*\*|__)?\s*(?:(?:new|improved|optimi[sz]ed|revised|final|updated)\s+)?"
                    r"(?:prompt|instruction)\s*(?:\d+\s*)?[:：]\s*(?:\*\*|__)?\s*", re.IGNORECASE)
_BULLET = re.compile(r"^(?:[-*•]\s+|\d+[.)]\s+)")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "`": "`", "«": "»"}

SYSTEM = ("You improve the instructions (prompts) given to a vision-language model so that it answers "
          "benchmark questions about images correctly. You never see the images.")


@dataclass(frozen=True)
class Example:
    """One D_few example as the optimizer sees it: the question, the correct answer, the model's reply."""

    question: str
    answer: str
    response: str | None = None


def _clip(text: str, limit: int = _CLIP) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _placement(mode: str) -> str:
    if mode == "prefix":
        return ("The prompt is a short phrase placed on its own line before every question of this task; "
                "the question and its options follow it unchanged.")
    return ("The prompt is the instruction text that accompanies every question of this task; the question, "
            "its options and any hint are inserted around it automatically.")


def _pct(value: float) -> str:
    return f"{100 * value:.1f}%"


def optimizer_messages(*, task: str, description: str, original: str, history: Sequence[Candidate],
                       examples: Sequence[Example], counter: int, mode: str) -> list[Message]:
    """The meta-prompt asking for one new prompt; `history` is the top-K, already chosen by the caller."""
    ranked = top_k(history, len(history))
    best = ranked[0] if ranked else None
    lines = [f"Task: {task}"]
    if description.strip():
        lines.append(f"About the task: {description.strip()}")
    lines += [
        "",
        "A vision-language model answers this task's questions about images. " + _placement(mode),
        "Each prompt is scored on a few examples of the task: the score mixes the model's accuracy under "
        "the prompt with how close the prompt stays in meaning to the original prompt. Higher is better.",
        "",
        f"The original prompt: {original}",
        "",
    ]
    if ranked:
        lines.append(f"Earlier prompts, from the lowest score to the highest ({len(ranked)}):")
        for n, c in enumerate(reversed(ranked), 1):
            lines.append(f"{n}. Prompt: {c.prompt}")
            lines.append(f"   Score: {c.score:.3f}; accuracy: {_pct(c.accuracy)}")
            if c.introspection:
                lines.append(f"   Why the model erred: {c.introspection}")
        lines.append("")
    shown = list(examples)[:SHOWN_EXAMPLES]
    if shown:
        lines.append("Examples from this task (the image is not shown):")
        for ex in shown:
            lines.append(f"- Question: {_clip(ex.question)}")
            lines.append(f"  Correct answer: {_clip(ex.answer)}")
            if ex.response is not None:
                lines.append(f"  The model answered: {_clip(ex.response)}")
        lines.append("")
    base = best.prompt if best else original
    lines += [
        "Write ONE new prompt for this task, different from all the prompts above, that should score higher "
        "given why the model erred. Start from the best prompt so far: " + base,
        f"Edit at most {counter} words of it (adding, removing or replacing a word each counts as one edit), "
        "so that the model answers more questions correctly while the meaning stays close to the original.",
        "Write a general instruction: do not mention the examples or their answers. Do not use curly braces "
        "or placeholders such as {question}; the question and options are added automatically.",
        f"Reply with the new prompt between {PROMPT_OPEN} and {PROMPT_CLOSE}, and nothing else.",
    ]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def introspection_messages(*, task: str, prompt: str, wrong: Sequence[Example]) -> list[Message]:
    """Ask why the model got `wrong` examples wrong under `prompt` (2-3 sentences)."""
    lines = [
        f"Task: {task}",
        f"A vision-language model was given this prompt with each question: {prompt}",
        "",
        "It answered these questions wrongly (the images are not shown):",
    ]
    for ex in list(wrong)[:SHOWN_WRONG]:
        lines.append(f"- Question: {_clip(ex.question)}")
        lines.append(f"  Correct answer: {_clip(ex.answer)}")
        lines.append(f"  The model answered: {_clip(ex.response if ex.response is not None else '(no answer)')}")
    lines += [
        "",
        "In 2-3 sentences, explain what the model is likely getting wrong under this prompt (for example the "
        "answer format, a bias towards one answer, or a misread instruction) and what a better prompt should "
        "make clearer. Do not write a new prompt.",
    ]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold().rstrip(".!")


def _clean(text: str) -> str:
    """A candidate without fences, labels, bullets and enclosing quotes; whitespace collapsed."""
    text = _FENCE.sub("", text.strip()).strip()
    for _ in range(3):  # labels, bullets and quotes can nest: - "Prompt: ..."
        before = text
        text = _BULLET.sub("", text).strip()
        text = _LABEL.sub("", text).strip()
        text = text.strip("*_").strip() if text.startswith(("**", "__")) else text
        if len(text) >= 2 and _QUOTES.get(text[0]) == text[-1]:
            text = text[1:-1].strip()
        if text == before:
            break
    return " ".join(text.split())


def _fallback(reply: str) -> str | None:
    lines = [ln.strip() for ln in reply.splitlines() if ln.strip() and not ln.strip().startswith("```")]
    if not lines or len(lines) > FALLBACK_LINES:
        return None
    for line in lines:
        if not line.endswith(":"):
            return line
    return None


def extract_prompt_with_reason(reply: Any, *, original: str, max_words: int) -> tuple[str | None, str]:
    """`extract_prompt`, plus why a reply is unusable ("" when it is usable)."""
    try:
        if not isinstance(reply, str):
            return None, f"not text ({type(reply).__name__})"
        text = _THINK.sub("", reply).strip()
        if not text:
            return None, "empty reply"
        blocks = [b.strip() for b in _BLOCK.findall(text)]
        blocks = [b for b in blocks if b]
        if blocks:
            raw = blocks[-1]
        elif PROMPT_OPEN in text.lower():
            return None, f"empty {PROMPT_OPEN} block"
        else:
            raw = _fallback(text)
            if raw is None:
                return None, f"no {PROMPT_OPEN}…{PROMPT_CLOSE} markers and too long to use as it is"
        candidate = _clean(raw)
        if not candidate:
            return None, "empty prompt"
        if "<prompt" in candidate.lower() or "</prompt" in candidate.lower():
            return None, "malformed markers"
        if _PLACEHOLDER.search(candidate):
            return None, "contains a placeholder in braces"
        words = len(candidate.split())
        if words > max_words:
            return None, f"{words} words, more than the limit of {max_words}"
        if _normal(candidate) == _normal(original):
            return None, "the same as the original prompt"
        return candidate, ""
    except Exception as exc:  # a reply must never crash the optimization
        return None, f"unreadable reply ({type(exc).__name__}: {exc})"


def extract_prompt(reply: str, *, original: str, max_words: int) -> str | None:
    """The new prompt in an optimizer reply, or None when it is unusable; never raises.

    Unusable: not text, empty, no markers and too long for the fallback, more than
    `max_words` words, a placeholder in braces ({question}), or the original again
    (ignoring case, whitespace and a final "." or "!"). Labels ("Prompt:"), bullets,
    code fences and enclosing quotes are stripped; whitespace runs become one space.
    """
    return extract_prompt_with_reason(reply, original=original, max_words=max_words)[0]


def extract_introspection(reply: str) -> str:
    """An introspection reply, trimmed to one paragraph of at most MAX_INTROSPECTION_CHARS ("" when empty)."""
    if not isinstance(reply, str):
        return ""
    text = " ".join(_THINK.sub("", reply).split())
    if len(text) <= MAX_INTROSPECTION_CHARS:
        return text
    cut = text[:MAX_INTROSPECTION_CHARS - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return cut.rstrip(" ,;:") + "…"
