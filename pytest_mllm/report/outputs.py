"""The files a run writes at its end: results JSON, HTML report, VRPTEST's radar chart, MME's results format."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mllm.report.results import BenchmarkResult


@dataclass(frozen=True)
class Outputs:
    """Where each output goes (None: not written)."""

    json_path: Path | None = None
    html_path: Path | None = None
    mme_results: Path | None = None
    vrp_radar: Path | None = None
    markdown_path: Path | None = None  # --mllm-markdown
    step_summary: Path | None = None  # $GITHUB_STEP_SUMMARY: the summary is appended to it

    def check(self) -> None:
        """Before anything runs: each output can be written (parent folders are created now).

        OutputError names the option, the path and the fix.
        """
        for option, path, folder in (("--mllm-json", self.json_path, False), ("--mllm-html", self.html_path, False),
                                     ("--mllm-vrp-radar", self.vrp_radar, False),
                                     ("--mllm-markdown", self.markdown_path, False),
                                     ("--mllm-mme-results", self.mme_results, True)):
            if path is not None:
                _check_writable(option, path, folder)

    def write(self, document: dict[str, Any], results: dict[str, BenchmarkResult]) -> list[tuple[str, Path]]:
        """Write every requested output; (what, where) of the ones written."""
        written: list[tuple[str, Path]] = []
        if self.json_path:
            from pytest_mllm.report.results import write_json

            write_json(self.json_path, document)
            written.append(("results", self.json_path))
        if self.html_path:
            from pytest_mllm.report.html import write_html

            write_html(document, self.html_path)
            written.append(("HTML report", self.html_path))
        if self.vrp_radar:
            from pytest_mllm.vrp.radar import write_radar

            write_radar({name: r.scopes.get("vrp") or {} for name, r in results.items()}, self.vrp_radar)
        if self.mme_results:
            from pytest_mllm.loaders.mme_results import write_mme_results

            write_mme_results([r for res in results.values() for r in res.records], self.mme_results)
        return written


class OutputError(ValueError):
    """An output path that cannot be written; the message names the option and the fix."""


def _check_writable(option: str, path: Path, folder: bool) -> None:
    """`path` (a file, or a folder when `folder`) can be written: its parents exist or are made now."""
    if folder:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{option}={path}: a file is in the way; give a folder path (it is created)")
        target = path
    else:
        if path.is_dir():
            raise OutputError(f"{option}={path}: is a folder; give a file path, e.g. {path / 'results'}"
                              f"{path.suffix or _SUFFIX.get(option, '')}")
        if path.exists() and not os.access(path, os.W_OK):
            raise OutputError(f"{option}={path}: the file exists and is not writable; give another path")
        target = path.parent
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{option}={path}: cannot create the folder {target} ({exc.strerror or exc}); "
                          "give a path in a writable folder") from None
    if not os.access(target, os.W_OK | os.X_OK):
        raise OutputError(f"{option}={path}: the folder {target} is not writable; give a path in a writable folder")


_SUFFIX = {"--mllm-json": ".json", "--mllm-html": ".html", "--mllm-vrp-radar": ".png", "--mllm-markdown": ".md"}
