"""Shared test helpers: paths of the repository's fixtures and bundled specs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may come from a model hub, here or in CI

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
