"""The bundled `lime` spec over fixtures/hf_parquet/lime (a Hugging Face parquet dataset folder):
per-task scores from recorded answers, markers per LIME-M domain, images decoded lazily from
their parquet cells, and a corrupt row erroring alone."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pyarrow")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "hf_parquet" / "lime"
CAPTION_ONE_WORD = (6 / 35) ** 0.25  # one word changed in seven: n-gram precisions 6/7, 4/6, 3/5, 2/4


def _run(pytester: pytest.Pytester, *args: str, data: Path = FIXTURE,
         model: str = f"replay:{FIXTURE / 'predictions.jsonl'}") -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=lime", f"--mllm-data=lime={data}",
                                           f"--mllm={model}", f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


@pytest.mark.parametrize("workers", ["0", "2"])
def test_lime_per_task_scores(pytester: pytest.Pytester, workers: str) -> None:
    result, data = _run(pytester, "-n", workers)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*10 passed, 8 incorrect*"])
    records = {r["id"]: r for r in data["records"]}
    assert len(records) == 18 and all(r["status"] in ("correct", "incorrect") for r in records.values())
    assert records["infovqa::infovqa_1"]["score"] == pytest.approx(0.9)
    assert records["textvqa::textvqa_1"]["score"] == pytest.approx(0.6) and records["textvqa::textvqa_1"]["correct"]
    assert records["ai2d::ai2d_0"]["parsed"] == "B" and records["ai2d::ai2d_0"]["correct"]
    # LIME's pope_suit: right only when the whole response, lowercased and stripped, is the answer
    assert records["pope::pope_0"]["parsed"] == "yes, there is." and not records["pope::pope_0"]["correct"]

    scopes = data["benchmarks"]["lime"]["scopes"]
    tasks = scopes["tasks"]
    assert list(tasks) == ["chartqa", "infovqa", "textvqa", "textcaps", "ai2d", "pope"]
    for task in ("chartqa", "ai2d"):  # right, wrong, right (chartqa: 105 for 100 is within 5 %)
        assert tasks[task]["accuracy"] == pytest.approx(2 / 3) and tasks[task]["mean_score"] == pytest.approx(2 / 3)
    assert tasks["pope"]["accuracy"] == pytest.approx(1 / 3)  # "Yes, there is." and "No." wrong, "no" right
    assert tasks["infovqa"]["accuracy"] == pytest.approx(1 / 3)
    assert tasks["infovqa"]["mean_score"] == pytest.approx((1 + 0.9 + 0) / 3)  # ANLS
    assert tasks["textvqa"]["mean_score"] == pytest.approx((1 + 0.6 + 0.3) / 3)  # VQA match
    assert tasks["textcaps"]["mean_score"] == pytest.approx((1 + 0 + CAPTION_ONE_WORD) / 3)  # BLEU-4
    assert scopes["groups"]["infographic_qa"]["count"] == 6
    # the subtask's number (the headline): captions by BLEU-4 over the subtask, the rest by the row mean
    assert data["benchmarks"]["lime"]["headline"] == "lime_score"
    assert tasks["textcaps"]["lime_score"] == tasks["textcaps"]["bleu_4"] != tasks["textcaps"]["mean_score"]
    assert tasks["infovqa"]["lime_score"] == tasks["infovqa"]["mean_score"]


def test_markers_per_domain_select_tasks(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "-m", "infographic_qa or pope")
    assert result.ret == pytest.ExitCode.OK
    assert sorted({r["task"] for r in data["records"]}) == ["chartqa", "infovqa", "pope"]


def test_images_are_decoded_from_their_cells(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, model="baseline:yes")  # a model that needs images: every cell is decoded
    assert result.ret == pytest.ExitCode.OK
    assert len(data["records"]) == 18 and not [r for r in data["records"] if r["status"] == "error"]


def test_a_corrupt_row_errors_alone(pytester: pytest.Pytester, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    copy = tmp_path / "lime"
    shutil.copytree(FIXTURE, copy)
    target = copy / "data" / "test-00001-of-00002.parquet"
    table = pq.read_table(target).to_pylist()
    table[0]["question"] = None  # row 0 of the second file: textcaps_0
    table[1]["image"] = {"bytes": b"\x89PNG broken", "path": None}  # row 1 there: textcaps_1
    pq.write_table(__import__("pyarrow").Table.from_pylist(table, schema=pq.read_schema(target)), target,
                   row_group_size=4)
    result, data = _run(pytester, data=copy, model="baseline:yes")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*{target}: row 0: field 'question': empty question cell*"])
    result.stdout.fnmatch_lines([f"*cannot decode {target}: row 1, field 'image'*"])
    statuses = {r["id"]: r["status"] for r in data["records"]}
    assert statuses["textcaps::textcaps_1"] == "error"
    assert sum(status != "error" for status in statuses.values()) == 16
