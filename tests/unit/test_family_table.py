"""The reference's family table (docs/reference.md) is the one generated from the sweep's recorded results (docs/family_sweep.json)
and the families' conventions; the results cover every family of transformers' mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.models.family_table import STATUSES, current_table, family_table, load_results

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "docs" / "family_sweep.json"


def test_the_reference_table_is_the_generated_one() -> None:
    pytest.importorskip("transformers")  # the conventions' module is read through the package
    expected = family_table(load_results(RESULTS))
    assert current_table((REPO / "docs" / "reference.md").read_text()) == expected, (
        "docs/reference.md's family table is stale: run `python scripts/family_sweep.py --table` (or the sweep with --write)")


def test_the_results_cover_every_family_of_the_mapping_each_with_a_known_status() -> None:
    transformers = pytest.importorskip("transformers")
    from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES

    from pytest_mllm.models.families import conventions_for

    results = load_results(RESULTS)
    assert results["environment"]["transformers"] == transformers.__version__
    families = results["families"]
    assert set(families) == set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    assert {o["status"] for o in families.values()} <= set(STATUSES)
    for model_type, outcome in families.items():
        refused = conventions_for(model_type).refused
        assert (outcome["status"] == "refused") == bool(refused), model_type
        if refused:
            assert outcome["detail"] == refused, model_type


def test_a_stale_table_is_told_apart() -> None:
    pytest.importorskip("transformers")
    results = load_results(RESULTS)
    some = sorted(results["families"])[0]
    changed = {**results, "families": {**results["families"], some: {**results["families"][some], "status": "differs",
                                                                      "detail": "batch 8 'a', batch 1 'b'"}}}
    assert family_table(changed) != family_table(results)
