"""The optimizer's cached calls: every ask of the same conversation is a new draw, replayed in order."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pytest_mllm.engine.cache import ResponseCache
from pytest_mllm.tpeval.proposer import CachedProposer


@dataclass
class _Result:
    text: str


class CountingClient:
    """Replies "draw N" with N counting every call made (a stand-in for a sampling LLM)."""

    def __init__(self) -> None:
        self.calls = 0

    def chat_many(self, model: str, conversations: Sequence[Any], *, temperature: float,
                  max_tokens: int) -> list[Any]:
        out = []
        for _ in conversations:
            out.append(_Result(f"draw {self.calls}"))
            self.calls += 1
        return out


MESSAGES = [{"role": "user", "content": "write a prompt"}]


def test_repeated_conversations_are_new_draws_within_and_across_calls(tmp_path: Path) -> None:
    client = CountingClient()
    proposer = CachedProposer(client, "m", identity="m@url", max_tokens=8, cache=ResponseCache(tmp_path / "c.db"))
    assert proposer([MESSAGES, MESSAGES], 1.0) == ["draw 0", "draw 1"]
    assert proposer([MESSAGES], 1.0) == ["draw 2"]  # an unchanged meta-prompt in a later round
    assert (proposer.made, proposer.replayed) == (3, 0)


def test_a_new_process_replays_the_draws_in_order_then_asks_for_more(tmp_path: Path) -> None:
    first = CountingClient()
    CachedProposer(first, "m", identity="m@url", max_tokens=8, cache=ResponseCache(tmp_path / "c.db"))(
        [MESSAGES, MESSAGES], 1.0)
    again = CountingClient()
    again.calls = 100
    proposer = CachedProposer(again, "m", identity="m@url", max_tokens=8, cache=ResponseCache(tmp_path / "c.db"))
    assert proposer([MESSAGES], 1.0) == ["draw 0"]
    assert proposer([MESSAGES, MESSAGES], 1.0) == ["draw 1", "draw 100"]
    assert (proposer.replayed, proposer.made) == (2, 1)


def test_other_settings_are_other_draws(tmp_path: Path) -> None:
    client = CountingClient()
    proposer = CachedProposer(client, "m", identity="m@url", max_tokens=8, cache=ResponseCache(tmp_path / "c.db"))
    assert proposer([MESSAGES], 1.0) == ["draw 0"]
    assert proposer([MESSAGES], 0.0) == ["draw 1"]
