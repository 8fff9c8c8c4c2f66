"""Every family of transformers' image-text-to-text mapping (`MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES`):
its tiny model checked as `family_check.py` does, or its refusal checked on a folder of its config.

Slow (over a hundred plugin runs): deselected unless `--family-sweep` is given. `scripts/family_sweep.py`
runs it, prints one line per family and writes `docs/family_sweep.json`, from which docs/reference.md's family
table is generated. Each outcome goes to $PYTEST_MLLM_FAMILY_RESULTS/<model_type>.json when that is set.
A family whose tiny model needs a package that is not installed (torchvision, timm) is skipped, saying so.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("pyarrow")

from family_check import Outcome, check_family, check_refused  # noqa: E402
from transformers import CONFIG_MAPPING  # noqa: E402
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES  # noqa: E402

from pytest_mllm.models.families import conventions_for  # noqa: E402
from pytest_mllm.models.tiny_families import FAMILY_BUILDERS, UNCHECKED, missing_requirements  # noqa: E402

RESULTS = "PYTEST_MLLM_FAMILY_RESULTS"


def _record(outcome: Outcome) -> None:
    folder = os.environ.get(RESULTS)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{outcome.model_type}.json").write_text(outcome.as_json() + "\n")


@pytest.mark.family_sweep
@pytest.mark.parametrize("model_type", sorted(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES))
def test_family(pytester: pytest.Pytester, family_folder: Callable[[str], Path], tmp_path: Path,
                model_type: str) -> None:
    refused = conventions_for(model_type).refused
    if refused:
        folder = tmp_path / model_type
        CONFIG_MAPPING[model_type]().save_pretrained(folder)
        _record(check_refused(pytester, model_type, folder, refused))
        return
    if model_type in UNCHECKED:
        _record(Outcome(model_type, "unchecked", UNCHECKED[model_type]))
        pytest.skip(f"{model_type} has no tiny model: {UNCHECKED[model_type]}")
    assert model_type in FAMILY_BUILDERS, f"{model_type}: no tiny model, no refusal, no reason (models/tiny_families.py)"
    missing = missing_requirements(model_type)
    if missing:
        why = (f"{model_type}'s tiny model needs {' and '.join(missing)}, not installed here "
               f"(pip install {' '.join(missing)}, matching your torch)")
        _record(Outcome(model_type, "skipped", why))
        pytest.skip(why)
    outcome = check_family(pytester, model_type, family_folder(model_type))
    _record(outcome)
    assert outcome.status in ("exact", "fails"), outcome.detail
