"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

VQA = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"


@pytest.fixture
def predictions(tmp_path: Path) -> Path:
    """A replay file of the recorded model answers to fixtures/judge/vqa_mini."""
    answers = json.loads((VQA / "answers.json").read_text())["answers"]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"id": k, "response": v["answer"]}) + "\n" for k, v in answers.items()))
    return path
