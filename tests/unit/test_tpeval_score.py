"""Scores, top-K and the final re-rank with alpha*, including a case where alpha and alpha* disagree."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_mllm.tpeval.score import Candidate, combined_score, rerank, top_k


def cand(round: int, prompt: str, acc: float, sim: float, alpha: float = 0.8) -> Candidate:
    return Candidate(round, prompt, acc, sim, combined_score(acc, sim, alpha))


def test_combined_score_formula() -> None:
    assert combined_score(0.5, 1.0, 0.8) == pytest.approx(0.8 * 0.5 + 0.2 * 1.0)
    assert combined_score(0.25, 0.5, 1.0) == 0.25
    assert combined_score(0.25, 0.5, 0.0) == 0.5


@given(acc=st.floats(0, 1), sim=st.floats(-1, 1), alpha=st.floats(0, 1))
def test_combined_score_lies_between_its_terms(acc: float, sim: float, alpha: float) -> None:
    value = combined_score(acc, sim, alpha)
    assert min(acc, sim) - 1e-12 <= value <= max(acc, sim) + 1e-12


def test_top_k_orders_by_score_then_round_then_text() -> None:
    a = Candidate(2, "b", 0.5, 0.5, 0.7)
    b = Candidate(1, "z", 0.5, 0.5, 0.7)
    c = Candidate(1, "a", 0.5, 0.5, 0.7)
    d = Candidate(0, "orig", 0.1, 1.0, 0.9)
    e = Candidate(3, "low", 0.1, 0.1, 0.1)
    assert top_k([a, b, c, d, e], 4) == [d, c, b, a]
    assert top_k([a, b], 0) == []
    assert top_k([a], 5) == [a]


def test_top_k_ignores_float_noise() -> None:
    early = Candidate(1, "x", 0.0, 0.0, 0.1 + 0.2)
    late = Candidate(2, "y", 0.0, 0.0, 0.3)
    assert top_k([late, early], 1) == [early]


def test_rerank_with_alpha_star_can_pick_another_prompt() -> None:
    original = cand(0, "Please answer yes or no.", 0.50, 1.00)
    bold = cand(3, "Look closely; is it there? Yes/no.", 0.875, 0.40)
    mild = cand(5, "Answer yes or no only.", 0.75, 0.90)
    pool = [original, bold, mild]
    assert top_k(pool, 1) == [bold]  # α = 0.8: bold and mild tie at 0.78, the earlier round leads
    assert bold.score == pytest.approx(0.78) and mild.score == pytest.approx(0.78)
    assert rerank(pool, 0.8) is bold  # tie under α goes to the earlier round
    assert rerank(pool, 0.6) is mild  # α* = 0.6: mild 0.81 > bold 0.685 > original 0.70


def test_rerank_alpha_and_alpha_star_disagree_strictly() -> None:
    original = cand(0, "orig", 0.40, 1.00)
    overfit = cand(1, "overfit", 0.90, 0.30)  # α=0.8: 0.78; α*=0.6: 0.66
    close = cand(2, "close", 0.70, 0.85)  # α=0.8: 0.73; α*=0.6: 0.76
    assert top_k([original, overfit, close], 1) == [overfit]
    assert rerank([original, overfit, close], 0.6) is close


def test_rerank_prefers_the_original_on_ties() -> None:
    original = Candidate(0, "orig", 0.5, 1.0, 0.6)
    same = Candidate(4, "other", 0.5, 1.0, 0.6)
    assert rerank([same, original], 0.6) is original
    later = Candidate(7, "later", 0.5, 1.0, 0.6)
    assert rerank([later, same], 0.6) is same


def test_rerank_needs_a_candidate() -> None:
    with pytest.raises(ValueError, match="at least one"):
        rerank([], 0.6)


def test_candidate_round_trip_and_errors() -> None:
    c = Candidate(2, "Answer yes or no.", 0.75, 0.9, 0.78, "too eager to say yes", 2)
    assert Candidate.from_dict(c.as_dict()) == c
    minimal = Candidate.from_dict({"round": 0, "prompt": "p", "accuracy": 1, "similarity": 1, "score": 1})
    assert minimal.accuracy == 1.0 and isinstance(minimal.accuracy, float) and minimal.introspection == ""
    with pytest.raises(ValueError, match="'score'"):
        Candidate.from_dict({"round": 0, "prompt": "p", "accuracy": 1, "similarity": 1})
    with pytest.raises(ValueError, match="'accuracy'"):
        Candidate.from_dict({"round": 0, "prompt": "p", "accuracy": "high", "similarity": 1, "score": 1})
    with pytest.raises(ValueError, match="'round'"):
        Candidate.from_dict({"round": True, "prompt": "p", "accuracy": 1, "similarity": 1, "score": 1})
    with pytest.raises(ValueError, match="mapping"):
        Candidate.from_dict(["p"])  # type: ignore[arg-type]
