"""Scoring prompt candidates: c = α·accuracy + (1−α)·similarity, top-K, and the final re-rank.

While optimizing, α (0.8 in the paper) weighs accuracy on D_few against the cosine
similarity of the candidate to the original prompt. Because D_few is small, the candidate
with the best score may have over-fitted it; the final choice re-ranks every candidate with
a smaller α* (0.6), which favours prompts that stay close to the original.

Ties are broken deterministically: scores are compared rounded to 9 decimals (so float
noise never decides), then the earlier round wins, then the text (top-K) or the original
prompt (re-rank) wins.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

_DECIMALS = 9


def combined_score(accuracy: float, similarity: float, alpha: float) -> float:
    """α·accuracy + (1−α)·similarity."""
    return alpha * accuracy + (1.0 - alpha) * similarity


@dataclass
class Candidate:
    """One prompt the optimizer tried (round 0 is the original) and how it fared on D_few."""

    round: int
    prompt: str  # the instruction text, not the full template
    accuracy: float
    similarity: float
    score: float
    introspection: str = ""
    wrong: int = 0  # how many D_few examples the model got wrong under this prompt

    def as_dict(self) -> dict[str, Any]:
        """A YAML/JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Candidate:
        """The inverse of `as_dict`; ValueError naming the field when one is missing or of the wrong type."""
        if not isinstance(raw, Mapping):
            raise ValueError(f"a candidate must be a mapping, not {type(raw).__name__}")
        values: dict[str, Any] = {}
        for name, kind, required in (("round", int, True), ("prompt", str, True), ("accuracy", float, True),
                                     ("similarity", float, True), ("score", float, True),
                                     ("introspection", str, False), ("wrong", int, False)):
            if name not in raw:
                if required:
                    raise ValueError(f"field {name!r} is missing")
                continue
            value = raw[name]
            if kind is str:
                ok = isinstance(value, str)
            elif kind is int:
                ok = isinstance(value, int) and not isinstance(value, bool)
            else:
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
                value = float(value) if ok else value
            if not ok:
                raise ValueError(f"field {name!r} must be {'a string' if kind is str else 'a number'}, got {value!r}")
            values[name] = value
        return cls(**values)


def _rounded(value: float) -> float:
    return round(value, _DECIMALS)


def top_k(candidates: Iterable[Candidate], k: int) -> list[Candidate]:
    """The k best by score, best first; ties go to the earlier round, then to the text."""
    ranked = sorted(candidates, key=lambda c: (-_rounded(c.score), c.round, c.prompt))
    return ranked[:max(k, 0)]


def rerank(candidates: Iterable[Candidate], alpha_final: float) -> Candidate:
    """The final choice: the best by α*·accuracy + (1−α*)·similarity over all candidates.

    Include the original (round 0): a candidate must beat it under α* to be chosen. Ties
    go to the original, then to the earlier round, then to the text.
    """
    pool = list(candidates)
    if not pool:
        raise ValueError("rerank() needs at least one candidate (the original prompt)")

    def key(c: Candidate) -> tuple[float, int, int, str]:
        final = _rounded(combined_score(c.accuracy, c.similarity, alpha_final))
        return (-final, 0 if c.round == 0 else 1, c.round, c.prompt)

    return min(pool, key=key)
