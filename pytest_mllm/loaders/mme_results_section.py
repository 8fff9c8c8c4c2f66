"""MME's results format as an output: `--mllm-mme-results=DIR` writes the run's yes/no answers as the
files MME's own `calculation.py` reads (one per task)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_mllm.loaders.mme_results import write_mme_results
from pytest_mllm.sections import OutputFile, Section, register_section


class MmeResultsSection(Section):
    title = "MME results files"
    outputs = (OutputFile("--mllm-mme-results", folder=True),)

    def write(self, option: str, path: Path, results: Mapping[str, Any]) -> str | None:
        write_mme_results([r for result in results.values() for r in result.records], path)
        return None


register_section("mme_results", MmeResultsSection())
