"""The bundled MMStar, SEED-Bench, ScienceQA, AI2D, RealWorldQA and MMT-Bench specs end to end,
TSV and parquet: the JSON's accuracies equal VLMEvalKit's on the recorded fixtures (see
tests/unit/test_mcq_benchmarks.py and fixtures/mcq/README.md for the reference run), and a
category is a marker that -m and -k select.
Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mcq"
GOLDEN = json.loads((FIXTURES / "vlmevalkit_scores.json").read_text())


def _args(spec_name: str) -> tuple[str, ...]:
    folder = FIXTURES / spec_name
    return ("-p", "no:cacheprovider", f"--mllm-bench={spec_name}", f"--mllm-data={folder}",
            f"--mllm=replay:{folder / 'responses.jsonl'}", "--mllm-cache=off")


@pytest.mark.parametrize("spec_name", ["mmstar", "seedbench", "scienceqa", "ai2d", "realworldqa", "mmt_bench",
                                       "ai2d_parquet", "scienceqa_parquet", "mmt_bench_parquet", "seedbench_parquet",
                                       "mmstar_parquet", "realworldqa_parquet"])
def test_scores_in_the_json_equal_vlmevalkit(pytester: pytest.Pytester, spec_name: str) -> None:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(*_args(spec_name), f"--mllm-json={out}")
    golden = GOLDEN[spec_name.removesuffix("_parquet")]
    report = golden["report_acc"]
    wrong = sum(1 for hit in golden["hit"].values() if not hit)
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes() == {"passed": len(golden["hit"]) - wrong, "incorrect": wrong}
    metrics = json.loads(out.read_text())["benchmarks"][spec_name]["metrics"]
    assert metrics["accuracy"] == pytest.approx(report["Overall"][0], abs=1e-12)
    if spec_name in ("mmstar", "seedbench", "scienceqa", "ai2d", "scienceqa_parquet", "mmstar_parquet"):
        categories = [c for c in report if c not in ("split", "Overall")]
        for category in categories:
            assert metrics[f"{category}.accuracy"] == pytest.approx(report[category][0], abs=1e-12), category
    if spec_name == "seedbench_parquet":  # dimensions named by question_type_id
        for category, number in (("Instances Counting", 5), ("Instance Attributes", 3), ("Scene Understanding", 1)):
            assert metrics[f"{number}.accuracy"] == pytest.approx(report[category][0], abs=1e-12), category
    if spec_name.startswith("mmt_bench"):
        assert metrics["crowd_counting.accuracy"] == report["crowd_counting"][0]
        assert metrics["l2_category.counting.category_mean_accuracy"] == pytest.approx(report["Count"][0])
        assert metrics["l2_category.emotion.category_mean_accuracy"] == pytest.approx(report["Emo"][0])


def test_a_category_is_selected_by_marker_and_keyword(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*_args("mmstar"), "-m", "math", "--collect-only", "-q")
    lines = [line for line in result.outlines if "::" in line]
    assert len(lines) == 3 and all("math::" in line for line in lines), result.outlines
    result = pytester.runpytest_subprocess(*_args("mmt_bench"), "-m", "facial_expression_recognition or crowd_counting",
                                           "--collect-only", "-q")
    assert len([line for line in result.outlines if "::" in line]) == 4, result.outlines
    result = pytester.runpytest_subprocess(*_args("seedbench"), "-k", "Scene", "--collect-only", "-q")
    assert len([line for line in result.outlines if "::" in line]) == 3, result.outlines
