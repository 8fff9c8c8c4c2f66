"""MME results files are read line by line as the official calculation.py reads them
(`open(...).readlines()`: lines end at "\\n" only, after universal newlines), so a response
holding U+2028, U+0085 or a form feed stays one response on its line.

Expected numbers: MME's official eval_tool/calculation.py (repository
BradyFU/Awesome-Multimodal-Large-Language-Models, branch Evaluation, commit
dd2950902889cd614d4edf606827240166d29381, tools/eval_tool.zip, file sha256
66f154c0d3568cdd0c95b7d3e6b5a4b10cd393c71463328352c8c417c20a0607; see fixtures/README.md) run
outside the project on fixtures/mme_results with the three edits `_edit` makes:
`python calculation.py --results_dir /tmp/mme_u2028` printed Perception "total score:
1014.642857142857" and "existence  score: 140.0" (Cognition unchanged, 408.57142857142856). The
copy in zjunlp/Deco (commit a3ccc150b715373f3019fc07cb1836c1961d7e15, sha256 3300b5f8…02a5), cited
here before, prints the same lines: it differs only outside the scoring (fixtures/README.md).

Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_mllm.loaders.mme_results import read_mme_results

RESULTS = Path(__file__).resolve().parents[2] / "fixtures" / "mme_results"
EDITS = {0: "Yes.\u2028I am sure.", 1: "n\x85o", 2: "Yes\x0cno"}  # line → new response in existence.txt


def _edit(folder: Path) -> Path:
    for source in RESULTS.glob("*.txt"):
        shutil.copy(source, folder / source.name)
    path = folder / "existence.txt"
    lines = path.read_text(encoding="utf-8").split("\n")
    for number, response in EDITS.items():
        parts = lines[number].split("\t")
        lines[number] = "\t".join([*parts[:3], response])
    path.write_text("\n".join(lines), encoding="utf-8")
    return folder


def test_responses_with_unicode_line_breaks_stay_on_their_line(tmp_path: Path) -> None:
    lines = [line for line in read_mme_results(_edit(tmp_path)) if line.task == "existence"]
    assert [line.response for line in lines[:3]] == list(EDITS.values())
    assert len(lines) == len((RESULTS / "existence.txt").read_text(encoding="utf-8").strip("\n").split("\n"))


def test_scores_equal_the_official_script_on_such_responses(pytester: pytest.Pytester, tmp_path: Path) -> None:
    folder = _edit(tmp_path)
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=mme_results", f"--mllm-data={folder}",
                                f"--mllm=replay:{folder}", "--mllm-cache=off", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    metrics = json.loads(out.read_text())["benchmarks"]["mme"]["metrics"]
    assert metrics["perception"] == 1014.642857142857
    assert metrics["existence.score"] == 140.0
    assert metrics["cognition"] == 408.57142857142856
