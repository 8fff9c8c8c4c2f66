"""The optimizer LLM's calls: through the shared OpenAI-compatible client, stored in the response cache.

The same conversation asked again at temperature > 0 is a new draw (within one round, or in a
later round whose meta-prompt happens to be unchanged), so a reply is keyed by the
conversation, the call settings and its draw number: how many times this process asked that
conversation before. The requests of an optimization follow from the replies, so a re-run
replays every stored reply in order and asks only for what is missing: an interrupted
optimization resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

Message = dict[str, Any]


class ReplyStore(Protocol):
    """The part of the response cache the proposer uses."""

    def get_many(self, keys: Sequence[str]) -> Mapping[str, str]: ...

    def put_many(self, entries: Mapping[str, str], model: str) -> None: ...


def reply_key(optimizer: str, messages: Sequence[Message], settings: Mapping[str, Any], draw: int) -> str:
    """The key one optimizer reply is stored under."""
    payload = {"optimizer": optimizer, "messages": list(messages), "settings": dict(sorted(settings.items())),
               "draw": draw}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class CachedProposer:
    """`propose(conversations, temperature)` → one reply text (or the call's exception) per conversation."""

    def __init__(self, client: Any, model: str, *, identity: str, max_tokens: int,
                 cache: ReplyStore | None = None) -> None:
        self.client = client
        self.model = model
        self.identity = identity  # model@endpoint: what the replies are keyed by
        self.max_tokens = max_tokens
        self.cache = cache
        self.made = 0  # calls sent to the endpoint
        self.replayed = 0  # replies taken from the cache
        self._draws: dict[str, int] = {}  # conversation → times asked so far

    def __call__(self, conversations: Sequence[Sequence[Message]], temperature: float) -> list[str | Exception]:
        settings = {"temperature": temperature, "max_tokens": self.max_tokens}
        keys = []
        for messages in conversations:
            text = json.dumps([list(messages), settings], sort_keys=True)
            draw = self._draws.get(text, 0)
            self._draws[text] = draw + 1
            keys.append(reply_key(self.identity, messages, settings, draw))
        stored = dict(self.cache.get_many(keys)) if self.cache is not None else {}
        replies: list[str | Exception | None] = [stored.get(k) for k in keys]
        todo = [i for i, reply in enumerate(replies) if reply is None]
        self.replayed += len(conversations) - len(todo)
        if todo:
            self.made += len(todo)
            results = self.client.chat_many(self.model, [conversations[i] for i in todo], temperature=temperature,
                                            max_tokens=self.max_tokens)
            fresh: dict[str, str] = {}
            for i, result in zip(todo, results):
                replies[i] = result if isinstance(result, Exception) else str(result.text)
                if not isinstance(result, Exception):
                    fresh[keys[i]] = str(result.text)
            if self.cache is not None:
                self.cache.put_many(fresh, self.identity)
        return [r if r is not None else RuntimeError("no reply") for r in replies]
