"""OCRBench, TextVQA, ChartQA, DocVQA and HallusionBench end to end: each bundled spec run on
fixtures/vqa_benchmarks (TSV and parquet releases) with recorded answers; every score in the JSON
equals the reference code's on the same files (reference_scores.json: VLMEvalKit at commit
e8e78f05f3080fe28154f2130321f17951c3be94 and OCRBench's own script, MultimodalOCR at commit
794c36d6423cf1d5764081128bcaeb46b240def6; fixtures/vqa_benchmarks/README.md gives the command).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "vqa_benchmarks"
REFERENCE = json.loads((FIXTURES / "reference_scores.json").read_text(encoding="utf-8"))
OCRBENCH_TYPES = {  # right answers per question type, as OCRBench's own script printed them
    "Regular Text Recognition": 2, "Irregular Text Recognition": 0, "Artistic Text Recognition": 1,
    "Handwriting Recognition": 0, "Digit String Recognition": 0, "Non-Semantic Text Recognition": 1,
    "Scene Text-centric VQA": 1, "Doc-oriented VQA": 0, "Key Information Extraction": 1,
    "Handwritten Mathematical Expression Recognition": 2,
}


def _run(pytester: pytest.Pytester, bench: str, folder: str, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    data = FIXTURES / folder
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={bench}", f"--mllm-data={data}",
                                           f"--mllm=replay:{data / 'responses.jsonl'}", "--mllm-cache=off",
                                           f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text(encoding="utf-8"))


def _percent(value: float) -> float:
    return pytest.approx(value / 100, rel=1e-12)


@pytest.mark.parametrize("bench", ["ocrbench", "ocrbench_parquet"])
def test_ocrbench_counts_and_total_match_its_script(pytester: pytest.Pytester, bench: str) -> None:
    result, data = _run(pytester, bench, bench)
    assert result.ret == pytest.ExitCode.OK
    scopes = data["benchmarks"][bench]["scopes"]
    assert scopes["overall"]["ocrbench_score"] == REFERENCE["OCRBench_vlmevalkit"]["Final Score"] == 8
    assert "Final Score(Total 1000): 8" in REFERENCE["OCRBench_official_stdout"]
    assert {t: s["ocrbench_score"] for t, s in scopes["tasks"].items()} == OCRBENCH_TYPES
    printed = dict(re.findall(r"^(.+?)\(Total \d+\): ?(\d+)$", REFERENCE["OCRBench_official_stdout"], re.MULTILINE))
    assert {t: int(printed[t]) for t in OCRBENCH_TYPES} == OCRBENCH_TYPES
    assert scopes["groups"]["text_recognition"]["ocrbench_score"] == REFERENCE["OCRBench_vlmevalkit"]["Text Recognition"]
    rows = {r["id"].rsplit("::", 1)[1]: r for r in data["records"]}
    assert {i: int(r["correct"]) for i, r in rows.items()} == REFERENCE["OCRBench_official_result"]
    assert data["benchmarks"][bench]["headline"] == "ocrbench_score"


def test_ocrbench_types_are_markers(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "ocrbench", "ocrbench", "-m", "Handwritten_Mathematical_Expression_Recognition")
    assert result.ret == pytest.ExitCode.OK
    assert data["benchmarks"]["ocrbench"]["scopes"]["overall"]["ocrbench_score"] == 2
    assert len(data["records"]) == 3


@pytest.mark.parametrize(("bench", "name", "tasks"), [
    ("textvqa", "TextVQA_VAL", {}),
    ("textvqa_parquet", "TextVQA_VAL", {}),
    ("chartqa", "ChartQA_TEST", {"test_human": "test_human", "test_augmented": "test_augmented"}),
    ("chartqa_parquet", "ChartQA_TEST", {"human_test": "test_human", "augmented_test": "test_augmented"}),
    ("docvqa", "DocVQA_VAL", {"val": "val"}),
    ("docvqa_parquet", "DocVQA_VAL", {"val": "val"}),
])
def test_vqa_scores_match_vlmevalkit(pytester: pytest.Pytester, bench: str, name: str, tasks: dict[str, str]) -> None:
    result, data = _run(pytester, bench, bench)
    assert result.ret == pytest.ExitCode.OK
    reference = REFERENCE[name]["scores"]
    scopes = data["benchmarks"][bench]["scopes"]
    assert data["benchmarks"][bench]["headline"] == "mean_score"
    assert scopes["overall"]["mean_score"] == _percent(reference["Overall"][0])
    for task, split in tasks.items():
        assert scopes["tasks"][task]["mean_score"] == _percent(reference[split][0])


def test_textvqa_per_sample_scores(pytester: pytest.Pytester) -> None:
    _, data = _run(pytester, "textvqa", "textvqa")
    scores = {r["id"].rsplit("::", 1)[1]: r["score"] for r in data["records"]}
    assert scores == pytest.approx(REFERENCE["TextVQA_VAL"]["per_sample"], rel=1e-12)


@pytest.mark.parametrize("spec_name", ["hallusionbench", "hallusionbench_parquet"])
def test_hallusionbench_accuracies_match_vlmevalkit(pytester: pytest.Pytester, spec_name: str) -> None:
    # the parquet release: ids joined from its columns, answers 1/0; the same rows, so the same numbers
    result, data = _run(pytester, spec_name, spec_name, f"--mllm-gate={spec_name}.q_acc>=0.6")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the gate: VLMEvalKit's qAcc is 57.14
    bench = data["benchmarks"][spec_name]
    assert bench["headline"] == "q_acc"
    reference = REFERENCE["HallusionBench"]
    expected = {split: (a, f, q) for split, a, f, q in zip(reference["split"], reference["aAcc"], reference["fAcc"],
                                                              reference["qAcc"])}
    scopes = bench["scopes"]
    found = {"Overall": scopes["overall"], **scopes["tasks"], **scopes["l2_categories"]}
    assert set(found) == set(expected)
    for split, (a_acc, f_acc, q_acc) in expected.items():
        scope = found[split]
        assert (scope["a_acc"], scope["f_acc"], scope["q_acc"]) == (_percent(a_acc), _percent(f_acc), _percent(q_acc))
    parsed = {r["id"].rsplit("::", 1)[1]: r["parsed"] for r in data["records"]}
    assert parsed == REFERENCE["HallusionBench_extracted"]  # the reference's words: Yes, No, Unknown


def test_a_corrupt_answer_cell_errors_that_sample_alone(pytester: pytest.Pytester) -> None:
    folder = pytester.mkdir("docvqa")
    lines = (FIXTURES / "docvqa" / "DocVQA_VAL.tsv").read_text(encoding="utf-8").splitlines()
    cells = lines[2].split("\t")
    cells[3] = "[]"  # an empty list of answers: VLMEvalKit's max over no match fails on it too
    # (a list cut short, "['Jane Smith', 'J. Smith'", is text to VLMEvalKit's istype: scored as text)
    lines[2] = "\t".join(cells)
    (folder / "DocVQA_VAL.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=docvqa", f"--mllm-data={folder}",
                                           f"--mllm=replay:{FIXTURES / 'docvqa' / 'responses.jsonl'}",
                                           "--mllm-cache=off", f"--mllm-json={out}")
    result.stdout.fnmatch_lines(["*ERROR at call of docvqa: val::49154*",
                                 "*cannot score the answer: answer cell '[]' is an empty list of answers, which the "
                                 "reference cannot score either*"])
    records = {r["id"].rsplit("::", 1)[1]: r for r in json.loads(out.read_text(encoding="utf-8"))["records"]}
    assert records["49154"]["status"] == "error"
    assert sum(r["status"] != "error" for r in records.values()) == 6
