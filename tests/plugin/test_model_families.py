"""A representative few families through the plugin, end to end, on their tiny random models
(`models/tiny_families.py`): batch 8 = batch 1 = the family's documented usage (`family_check.py`).

The few cover every way a family is prompted and answered: the chat template (LLaVA, Qwen2-VL with
its default system turn, SmolVLM whose template writes the BOS, Gemma 3), a model card's prefix or
format without one (PaliGemma, BLIP-2), a task prompt replacing the question (Florence-2, an
encoder-decoder), an encoder-decoder with a chat template (T5Gemma 2), IDEFICS' interleaved prompts
and stop token, prompts answered one at a time (Kosmos-2), a processor whose video part comes first
(Video-LLaVA), a processor that needs torchvision (Mistral 3: skipped, saying so, where it is
absent). Every family of transformers' mapping is checked by `test_family_sweep.py`
(`scripts/family_sweep.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("pyarrow")

from family_check import check_family  # noqa: E402

from pytest_mllm.models.tiny_families import missing_requirements  # noqa: E402

REPRESENTATIVE = ["llava", "qwen2_vl", "smolvlm", "gemma3", "paligemma", "blip-2", "florence2", "t5gemma2", "idefics",
                  "kosmos-2", "video_llava", "mistral3"]  # mistral3: a processor that needs torchvision


@pytest.mark.parametrize("model_type", REPRESENTATIVE)
def test_family_answers_equal_batch_one_and_its_documented_usage(
        pytester: pytest.Pytester, family_folder: Callable[[str], Path], model_type: str) -> None:
    missing = missing_requirements(model_type)
    if missing:
        pytest.skip(f"{model_type}'s processor needs {' and '.join(missing)}, not installed here "
                    f"(pip install {' '.join(missing)}, matching your torch)")
    outcome = check_family(pytester, model_type, family_folder(model_type))
    assert outcome.status == "exact", outcome.detail
    assert outcome.answered >= 3
