"""MMMU from VLMEvalKit's TSV (benchmarks/mmmu_tsv.yaml) end to end: fixtures/mmmu/tsv holds the
parquet fixture's rows in MMMU_DEV_VAL.tsv's layout, a replay model answers, and `mmmu_accuracy`
per subject, per discipline and overall equals MMMU's own script on the same rows.

Expected numbers: MMMU-Benchmark/MMMU at commit bb0b95a945998d91dfef37e969e07d49d1139438,
`mmmu/main_parse_and_eval.py --path OUT --subject ALL` then `mmmu/print_results.py --path OUT`, on
output.json files a scratch driver wrote from fixtures/mmmu/tsv/MMMU_DEV_VAL.tsv and its
responses.jsonl (fixtures/mmmu/tsv/README.md gives the steps).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TSV = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu" / "tsv"

OFFICIAL_SUBJECTS = {"Accounting": 1.0, "Art": 0.5, "Math": 0.5, "Clinical_Medicine": 0.3333333333333333,
                     "History": 0.6666666666666666}  # result.json of each subject
OFFICIAL_OVERALL = 0.6111111111111112  # print_results.py shows 0.611: 11 of 18


def test_mmmu_accuracy_equals_mmmus_script(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=mmmu_tsv", f"--mllm-data={TSV}",
                                           f"--mllm=replay:{TSV / 'responses.jsonl'}", "--mllm-cache=off",
                                           f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK
    bench = json.loads(out.read_text())["benchmarks"]["mmmu_tsv"]
    scopes = bench["scopes"]
    assert {t: s["mmmu_accuracy"] for t, s in scopes["tasks"].items()} == OFFICIAL_SUBJECTS
    assert scopes["groups"]["Business"]["mmmu_accuracy"] == 1.0
    assert scopes["overall"]["mmmu_accuracy"] == OFFICIAL_OVERALL and scopes["overall"]["count"] == 18
    records = {r["id"]: r for r in json.loads(out.read_text())["records"]}
    art = records["Art::29"]  # images as options; five images, read from the TSV's list cell
    assert art["prompt"].startswith("Which painting shares the palette of <image 1>?\nA. <image 2>")
    assert records["Math::75"]["correct"] is True  # the list answer "['24/7', '3.429']", matched as 3.43
    assert records["Accounting::16"]["parsed"] == "random:ABCDE"


def test_only_the_validation_rows_run_and_subjects_are_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=mmmu_tsv", f"--mllm-data={TSV}",
                                           "--mllm=baseline:yes", "-m", "Science", "--collect-only", "-q")
    lines = [line for line in result.outlines if "::" in line]
    assert len(lines) == 4 and all("Math::" in line for line in lines), result.outlines
