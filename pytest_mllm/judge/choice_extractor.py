"""LLM choice extraction: a judge LLM reads the multiple-choice answers the rules cannot read.

MMBench as VLMEvalKit scores it (`extract_answer_from_item` in
vlmeval/dataset/utils/multiple_choice.py) reads each answer by rules first (`can_infer`, our
`choice` parser); only an answer those rules cannot decide goes to an LLM, which is shown the
question, the options and the answer and asked for the letter of the option the answer means,
or Z when no option matches. The LLM's reply is itself read by the same rules.

Here, with a judge endpoint (``--mllm-judge=openai:MODEL``), every ``choice`` answer parsed as
"unreadable" is asked about once (temperature 0, all of a batch in one ``chat_many``):

* a reply the rules read as one of the item's option letters → that letter is the answer
  (status ``extracted``); the verdict follows from it;
* a reply of Z (or a refusal) → the answer stays "unreadable", wrong (``no_match``);
* any other reply → stays "unreadable", wrong (``unusable``);
* a failed call → the sample is an ERROR, never a score (``error``);
* an empty answer is not asked (nothing to match): stays "unreadable" (``empty``). The answer is the
  one the rules read: for VLMEvalKit's benchmarks as its .xlsx prediction file hands it over, where an
  empty response is "nan", asked about as VLMEvalKit asks (`scoring/prediction_cells.py`).

Where we differ from VLMEvalKit, on purpose: it retries an unusable reply up to three times and
then picks a random option (or Z); at temperature 0 a retry says the same again, and a random
pick is a coin toss, not a reading, so an unusable reply stays wrong and a failed call is an
error (the client's own retries, ``--mllm-max-retries``, still apply). It stops a circular group
at its first wrong pass; we ask about every unreadable pass (the circular verdicts are the same,
and each pass's record shows its own reading). The prompt is ours, worded afresh with the same
meaning (theirs also has a Chinese variant for Chinese questions; ours is English only).

Replies are cached in the response cache under a key covering the judge model, the prompt's
template text, the question, options and answer, and the call settings (`cache_key`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Sequence, TypedDict

from pytest_mllm.judge.ensemble import ChatManyClient, ReplyCache
from pytest_mllm.judge.prompts import Message
from pytest_mllm.record import RecordPart
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.parsers import REFUSED, UNREADABLE, multiple_choice

NONE_LETTER = "Z"  # the reply meaning "no option matches"
KIND = "choice_extraction"
Status = Literal["extracted", "no_match", "unusable", "error", "empty"]

# Our own wording; {letters} lists the item's option letters ("A, B, C or D").
TEMPLATE = """\
Your job is to decide which option of a single-choice question a given answer stands for.
You get the question, its lettered options and an answer someone gave. Pick the option whose \
meaning is closest to the answer. If the answer means something clearly different from every \
option, pick Z instead.
Reply with exactly one uppercase letter: {letters}, or Z. Write nothing else.

For instance:
Question: What is the weather like in the photo?
Options:
A. sunny
B. foggy
C. stormy
Answer: you can barely see through the mist
Letter: B

Question: What is the weather like in the photo?
Options:
A. sunny
B. foggy
C. stormy
Answer: a red bicycle
Letter: Z

Now this one:
Question: {question}
Options:
{options}
Answer: {answer}
Letter:"""


@dataclass(frozen=True)
class ChoiceItem:
    """One answer to read: the question, its (letter, text) options, the model's answer."""

    question: str
    choices: tuple[tuple[str, str], ...]
    answer: str

    @property
    def letters(self) -> list[str]:
        return [letter for letter, _ in self.choices]


@dataclass(frozen=True)
class Extraction:
    """What the judge made of one answer; `letter` is set exactly when status is "extracted"."""

    status: Status
    letter: str | None = None
    reply: str | None = None
    error: str | None = None

    def as_record(self) -> ExtractionPart:
        """The record's "extraction" part (`EXTRACTION`)."""
        return {"kind": KIND, "status": self.status, "letter": self.letter, "reply": self.reply, "error": self.error}


class ExtractionPart(TypedDict):
    """A `choice` answer the rules could not read, as the judge LLM read it, in its record. Kept apart from
    the "judge" part, which holds CEE outcomes of open answers only."""

    kind: str  # KIND
    status: Status
    letter: str | None
    reply: str | None
    error: str | None


EXTRACTION: RecordPart[ExtractionPart] = RecordPart("extraction")


_PLACEHOLDER = re.compile(r"\{(letters|question|options|answer)\}")


def _letter_list(letters: Sequence[str]) -> str:
    return letters[0] if len(letters) == 1 else ", ".join(letters[:-1]) + " or " + letters[-1]


def render_prompt(item: ChoiceItem, template: str = TEMPLATE) -> str:
    """The user message asking for `item`'s letter."""
    values = {"letters": _letter_list(item.letters), "question": item.question, "answer": item.answer,
              "options": "\n".join(f"{letter}. {text}" for letter, text in item.choices)}
    # one pass, not str.format: a question or answer may hold braces, even "{answer}"
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def render_messages(item: ChoiceItem, template: str = TEMPLATE) -> list[Message]:
    """The conversation sent to the judge: one user message."""
    return [{"role": "user", "content": render_prompt(item, template)}]


def read_reply(reply: str, item: ChoiceItem) -> Extraction:
    """The judge's reply read by the rules (`can_infer`, as VLMEvalKit reads it): one of the
    item's letters is "extracted"; Z or a refusal "no_match"; anything else "unusable"."""
    sample = Sample(id="", benchmark="", task="", question=item.question, answer="", answer_type="choice",
                    choices=item.choices)
    read = multiple_choice(reply, sample)
    if read == REFUSED:
        return Extraction("no_match", reply=reply)
    if read == UNREADABLE or read not in item.letters:
        return Extraction("unusable", reply=reply)
    return Extraction("extracted", letter=read, reply=reply)


def cache_key(judge_model: str, item: ChoiceItem, settings: dict[str, Any], template: str = TEMPLATE) -> str:
    """The key a reply is cached under: sha256 of JSON of the kind, the judge model, the template's
    text (a reworded prompt starts afresh), the question, options and answer, and the settings."""
    payload = {
        "kind": KIND,
        "judge_model": judge_model,
        "prompt": template,
        "item": {"question": item.question, "choices": [list(c) for c in item.choices], "answer": item.answer},
        "settings": dict(sorted(settings.items())),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class ChoiceExtractor:
    """Reads unreadable choice answers with a judge LLM through a chat client (`chat_many`).

    Temperature is 0 (repeatable, cacheable). With a `cache`, stored replies are not asked
    again and new replies are stored; failed calls never are.
    """

    temperature = 0.0

    def __init__(self, client: ChatManyClient, model: str, *, max_tokens: int = 512,
                 cache: ReplyCache | None = None, template: str = TEMPLATE) -> None:
        if max_tokens < 1:
            raise ValueError("choice extraction needs max_tokens >= 1")
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.cache = cache
        self.template = template

    @property
    def settings(self) -> dict[str, Any]:
        """The call settings that change a reply (part of every cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}

    def extract_many(self, items: Sequence[ChoiceItem]) -> list[Extraction]:
        """One extraction per item, in order; every uncached, non-empty item in one `chat_many` call."""
        asked = [i for i, item in enumerate(items) if item.answer.strip()]
        replies: dict[int, str | Exception] = {}
        keys: dict[int, str] = {}
        if self.cache is not None and asked:
            keys = {i: cache_key(self.model, items[i], self.settings, self.template) for i in asked}
            hits = self.cache.get_many(list(keys.values()))
            replies = {i: hits[k] for i, k in keys.items() if k in hits}
        todo = [i for i in asked if i not in replies]
        for i, result in zip(todo, self._ask([render_messages(items[i], self.template) for i in todo])):
            replies[i] = result
        if self.cache is not None:
            self.cache.put_many({keys[i]: r for i in todo if isinstance(r := replies[i], str)}, self.model)
        out: list[Extraction] = []
        for i, item in enumerate(items):
            reply = replies.get(i)
            if reply is None:
                out.append(Extraction("empty"))
            elif isinstance(reply, Exception):
                out.append(Extraction("error", error=f"{type(reply).__name__}: {reply}"))
            else:
                out.append(read_reply(reply, item))
        return out

    def _ask(self, conversations: list[list[Message]]) -> list[str | Exception]:
        """Reply texts, or the exception each failed call ended with; a client that raises fails them all."""
        if not conversations:
            return []
        try:
            results = list(self.client.chat_many(self.model, conversations, temperature=self.temperature,
                                                 max_tokens=self.max_tokens))
        except Exception as exc:  # a judge failure is never a score: every call of this batch failed
            return [exc] * len(conversations)
        if len(results) != len(conversations):
            raise RuntimeError(f"chat_many returned {len(results)} results for {len(conversations)} conversations")
        return [r if isinstance(r, Exception) else str(r.text) for r in results]
