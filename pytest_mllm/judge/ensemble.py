"""The ChatGPT Ensemble Evaluation: five judge calls per answer, one majority outcome.

Decision rule (``mode="strict"``, the default). Each prompt's reply is one vote: 1, 0, or
none (a failed call, or a reply whose verdict cannot be read). An answer is judged when one
side has at least ``QUORUM`` = 3 votes, an absolute majority of the five prompts whatever the
others did: correct on 3+ ones, incorrect on 3+ zeros. Anything else is a judge error,
never a score: a tie (``2-2+1 abstain``), too few votes (``2-1+2 abstain``) or none at all.
So one timed-out prompt leaves four votes, judged at 4-0 or 3-1 and a judge error at 2-2.

``mode="compat"`` reproduces the authors' scripts: verdicts are read the paper's way (see
`verdicts`) and the outcome is the paper's plurality, ``Counter(votes).most_common(1)`` over
1, 0 and -1 (no vote), where a tie goes to the value seen first in prompt order. When the
plurality falls on -1 (the paper's "bug item") the outcome is a judge error.

The split is written ``<votes for correct>-<votes for incorrect>``, plus ``+N abstain`` when
N prompts gave no vote: ``5-0``, ``4-1``, ``3-2``, ``2-2+1 abstain``.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Literal, Mapping, Protocol, Sequence, TypedDict

from pytest_mllm.judge.prompts import PROMPTS, PROMPTS_BY_ID, JudgeItem, Message, Prompt, Rule, references_of, render_messages
from pytest_mllm.judge.verdicts import MODES, Mode, read_verdict
from pytest_mllm.record import RecordPart

QUORUM = len(PROMPTS) // 2 + 1
Status = Literal["judged", "judge-error"]


class ChatManyClient(Protocol):
    """What the judge needs of a chat client: `openai_client.ChatClient.chat_many`.

    Returns one result per conversation, in input order: an object with a `.text` (a
    `ChatResult`), or the exception that call ended with.
    """

    def chat_many(self, model: str, conversations: Sequence[Sequence[Message]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> Sequence[Any]: ...


class ReplyCache(Protocol):
    """Where judge replies are kept between runs; `cache.ResponseCache` fits as it is."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]: ...

    def put_many(self, entries: Mapping[str, str], model: str) -> None: ...


@dataclass(frozen=True)
class Vote:
    """One prompt's vote: verdict 1, 0 or None; `analysis` is the judge's whole reply."""

    prompt_id: str
    rule: Rule
    key: str
    verdict: int | None
    analysis: str
    error: str | None = None  # why there is no verdict: a failed call or an unreadable reply


@dataclass(frozen=True)
class JudgeOutcome:
    """The ensemble's outcome for one answer; `correct` is None exactly when status is judge-error."""

    status: Status
    correct: bool | None
    split: str
    votes: tuple[Vote, ...]
    error: str | None = None

    def as_record(self) -> JudgePart:
        """The record's "judge" part (`JUDGE`), for reports and result files."""
        return {"status": self.status, "correct": self.correct, "split": self.split, "error": self.error,
                "votes": [asdict(v) for v in self.votes]}  # type: ignore[misc]


class VotePart(TypedDict):
    """One vote in a record (`Vote` as JSON)."""

    prompt_id: str
    rule: Rule
    key: str
    verdict: int | None
    analysis: str
    error: str | None


class JudgePart(TypedDict):
    """The ensemble's outcome for an open answer, in its record."""

    status: Status
    correct: bool | None
    split: str
    error: str | None
    votes: list[VotePart]


JUDGE: RecordPart[JudgePart] = RecordPart("judge", in_every_record=True)


def _split(ones: int, zeros: int, abstain: int) -> str:
    return f"{ones}-{zeros}" + (f"+{abstain} abstain" if abstain else "")


def _vote(prompt: Prompt, reply: str | Exception, mode: Mode) -> Vote:
    if isinstance(reply, Exception):
        return Vote(prompt.id, prompt.rule, prompt.key, None, "", f"{type(reply).__name__}: {reply}")
    verdict, problem = read_verdict(reply, prompt.key, mode)
    return Vote(prompt.id, prompt.rule, prompt.key, verdict, reply, problem)


def decide(texts: Sequence[str | Exception], *, mode: Mode = "strict",
           prompts: Sequence[Prompt] = PROMPTS) -> JudgeOutcome:
    """The outcome from the five replies (or call errors), given in the order of `prompts`."""
    if mode not in MODES:
        raise ValueError(f"judge mode {mode!r} is not one of {', '.join(MODES)}")
    if len(texts) != len(prompts):
        raise ValueError(f"decide() needs {len(prompts)} replies, one per prompt; got {len(texts)}")
    votes = tuple(_vote(p, t, mode) for p, t in zip(prompts, texts))
    verdicts = [v.verdict for v in votes]
    ones, zeros = verdicts.count(1), verdicts.count(0)
    split = _split(ones, zeros, len(votes) - ones - zeros)
    failed = [t for t in texts if isinstance(t, Exception)]
    if len(failed) == len(texts):
        first = votes[0].error
        return JudgeOutcome("judge-error", None, split, votes, f"all {len(texts)} judge calls failed; first: {first}")
    if mode == "compat":
        winner = Counter(-1 if v is None else v for v in verdicts).most_common(1)[0][0]
        if winner == -1:
            return JudgeOutcome("judge-error", None, split, votes,
                                f"most prompts gave no readable verdict ({split}; paper plurality)")
        return JudgeOutcome("judged", winner == 1, split, votes)
    quorum = len(prompts) // 2 + 1
    if max(ones, zeros) >= quorum:
        return JudgeOutcome("judged", ones > zeros, split, votes)
    if ones == zeros == 0:
        return JudgeOutcome("judge-error", None, split, votes, "no prompt gave a readable verdict")
    return JudgeOutcome("judge-error", None, split, votes,
                        f"no majority: {split}; a verdict needs {quorum} agreeing votes of {len(prompts)}")


def cache_key(judge_model: str, prompt: Prompt | str, item: JudgeItem, settings: Mapping[str, Any] | None = None) -> str:
    """The key a judge reply is cached under: sha256 of JSON of everything that shapes the reply.

    That is the judge model, the prompt's full wording (id, rule, key, system and user text: a
    reworded or file-supplied prompt starts afresh), the item, and the call settings
    (temperature, max_tokens). `prompt` is a `Prompt` or the id of a built-in one.
    """
    if isinstance(prompt, str):
        found = PROMPTS_BY_ID.get(prompt)
        if found is None:
            raise ValueError(f"unknown judge prompt {prompt!r}; known: {', '.join(PROMPTS_BY_ID)}")
        prompt = found
    payload = {
        "judge_model": judge_model,
        "prompt": asdict(prompt),
        "item": {"question": item.question, "references": references_of(item), "answer": item.answer},
        "settings": dict(sorted((settings or {}).items())),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class Judge:
    """Grades open-ended answers with the five-prompt ensemble through a chat client.

    `temperature` defaults to 0.0 for repeatable, cacheable verdicts; the authors' script
    used 0.5. `mode` picks verdict reading and decision rule (see the module docstring).
    `prompts` are the five CEE prompts (the built-in `PROMPTS`, or a prompts file's). With a
    `cache`, replies already stored are not asked again and new replies are stored (failed
    calls never are); every key covers the prompt's wording.
    """

    def __init__(self, client: ChatManyClient, model: str, *, temperature: float = 0.0, mode: Mode = "strict",
                 max_tokens: int = 512, cache: ReplyCache | None = None,
                 prompts: Sequence[Prompt] | None = None) -> None:
        if mode not in MODES:
            raise ValueError(f"judge mode {mode!r} is not one of {', '.join(MODES)}")
        if temperature < 0 or max_tokens < 1:
            raise ValueError("the judge needs temperature >= 0 and max_tokens >= 1")
        self.prompts: tuple[Prompt, ...] = tuple(prompts) if prompts is not None else PROMPTS
        if len(self.prompts) != len(PROMPTS) or len({p.id for p in self.prompts}) != len(self.prompts):
            raise ValueError(f"the judge needs {len(PROMPTS)} prompts with distinct ids")
        self.client = client
        self.model = model
        self.temperature = temperature
        self.mode = mode
        self.max_tokens = max_tokens
        self.cache = cache

    @property
    def settings(self) -> dict[str, Any]:
        """The call settings that change a reply (part of every cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}

    def judge_many(self, items: Sequence[JudgeItem]) -> list[JudgeOutcome]:
        """One outcome per item, in order; every uncached prompt of every item goes in one `chat_many` call.

        Conversations are sent item by item, each item's five prompts in order. An item
        without a non-empty reference is a data error: ValueError, before any call.
        """
        prompts = self.prompts
        conversations = [render_messages(p, item) for item in items for p in prompts]
        replies: list[str | Exception | None] = [None] * len(conversations)
        keys: list[str] = []
        if self.cache is not None:
            keys = [cache_key(self.model, p, item, self.settings) for item in items for p in prompts]
            hits = self.cache.get_many(keys)
            replies = [hits.get(k) for k in keys]
        todo = [i for i, reply in enumerate(replies) if reply is None]
        for i, result in zip(todo, self._ask([conversations[i] for i in todo])):
            replies[i] = result
        if self.cache is not None:
            fresh = {keys[i]: r for i in todo if isinstance(r := replies[i], str)}
            self.cache.put_many(fresh, self.model)
        filled = [r for r in replies if r is not None]
        assert len(filled) == len(replies), "every prompt has a reply or an error"
        n = len(prompts)
        return [decide(filled[k * n:(k + 1) * n], mode=self.mode, prompts=prompts) for k in range(len(items))]

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
