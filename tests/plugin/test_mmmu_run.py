"""MMMU end to end: the bundled spec reads fixtures/mmmu/data (the Hugging Face release's layout),
a replay model answers from fixtures/mmmu/responses.jsonl, and the --mllm-json document's
`mmmu_accuracy` per subject, per discipline and overall equals MMMU's own script on the same
responses; markers per subject and discipline select subsets.

Expected numbers: MMMU-Benchmark/MMMU at commit bb0b95a945998d91dfef37e969e07d49d1139438,
mmmu/main_parse_and_eval.py --path OUT --subject ALL, then mmmu/print_results.py --path OUT, on
output.json files written from the fixture (see tests/unit/test_mmmu.py and fixtures/mmmu/README.md);
for `-m Health_and_Medicine`, the same on a copy holding only the Clinical_Medicine folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

MMMU = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu"

OFFICIAL_SUBJECTS = {"Accounting": 1.0, "Art": 0.5, "Math": 0.5, "Clinical_Medicine": 0.3333333333333333,
                     "History": 0.6666666666666666}
OFFICIAL_DISCIPLINES = {"Business": 1.0, "Art_and_Design": 0.5, "Science": 0.5,
                        "Health_and_Medicine": 0.3333333333333333, "Humanities_and_Social_Science": 0.6666666666666666}
OFFICIAL_OVERALL = 0.6111111111111112  # print_results.py shows 0.611
OFFICIAL_DEV_OVERALL = 0.9  # the dev split, same commands


def _run(pytester: pytest.Pytester, bench: str = "mmmu", *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={bench}",
                                           f"--mllm-data={bench}={MMMU / 'data'}",
                                           f"--mllm=replay:{MMMU / 'responses.jsonl'}", f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


@pytest.mark.parametrize("workers", ["0", "2"])
def test_accuracy_per_subject_discipline_and_overall_equals_mmmus(pytester: pytest.Pytester, workers: str) -> None:
    result, data = _run(pytester, "mmmu", "-n", workers)
    assert result.ret == pytest.ExitCode.OK
    bench = data["benchmarks"]["mmmu"]
    scopes = bench["scopes"]
    assert {t: s["mmmu_accuracy"] for t, s in scopes["tasks"].items()} == OFFICIAL_SUBJECTS
    assert {g: s["mmmu_accuracy"] for g, s in scopes["groups"].items()} == OFFICIAL_DISCIPLINES
    assert scopes["overall"]["mmmu_accuracy"] == OFFICIAL_OVERALL
    assert scopes["overall"]["count"] == 18 and scopes["overall"]["accuracy"] == 10 / 18  # draws counted wrong
    assert bench["headline"] == "mmmu_accuracy" and bench["metrics"]["mmmu_accuracy"] == OFFICIAL_OVERALL
    records = {r["id"]: r for r in data["records"]}
    assert records["Accounting::validation_Accounting_4"]["parsed"] == "random:ABCDE"
    assert records["Math::validation_Math_1"]["correct"] is True  # a list answer, matched as 3.43
    assert records["Art::validation_Art_1"]["prompt"].startswith("Which painting shares the palette of <image 1>?\nA. <image 2>")
    result.stdout.fnmatch_lines(["*headline: mmmu_accuracy*", "* overall *61.11*"])


def test_dev_split(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "mmmu_dev")
    assert result.ret == pytest.ExitCode.OK
    assert data["benchmarks"]["mmmu_dev"]["scopes"]["overall"]["mmmu_accuracy"] == OFFICIAL_DEV_OVERALL


def test_markers_select_a_discipline(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "mmmu", "-m", "Health_and_Medicine")
    assert result.ret == pytest.ExitCode.OK
    assert {r["task"] for r in data["records"]} == {"Clinical_Medicine"}
    assert data["benchmarks"]["mmmu"]["scopes"]["overall"]["mmmu_accuracy"] == 0.3333333333333333
    result, data = _run(pytester, "mmmu", "-k", "Math or History")
    assert {r["task"] for r in data["records"]} == {"Math", "History"}
