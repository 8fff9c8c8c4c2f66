"""Rescoring other tools' outputs: a VLMEvalKit prediction file and an lmms-eval samples file replayed
through `--mllm=replay:FILE` get the benchmark's official scores, and `pytest-mllm-compare` sets such a
rescored run beside one of ours.

Expected numbers: VLMEvalKit's own evaluation of its prediction files (fixtures/predictions/
vlmevalkit_scores.json: open-compass/VLMEvalKit e8e78f05f3080fe28154f2130321f17951c3be94,
`vlmeval/dataset/image_mcq.py` ImageMCQDataset.evaluate with judge exact_matching); POPE's official
`evaluate.py` on the answers the lmms-eval file holds (fixtures/pope_splits/official_scores.json:
AoiDragon/POPE 08d957b917e5a378a2f99d35b6293c536a66298b). Commands: fixtures/predictions/README.md.
Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
PREDICTIONS = FIXTURES / "predictions"
SCORES = json.loads((PREDICTIONS / "vlmevalkit_scores.json").read_text())["vlmevalkit"]
VLMEVALKIT, VANILLA_0, VANILLA_ALL = (SCORES[k] for k in ("report_acc", "report_acc_vanilla_0", "report_acc_vanilla_all"))
POPE = json.loads((FIXTURES / "pope_splits" / "official_scores.json").read_text())
LMMS_EVAL = PREDICTIONS / "20260101_000000_samples_pope.jsonl"


def rescore(pytester: pytest.Pytester, bench: str, data: Path, recording: Path, out: Path) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={bench}", f"--mllm-data={data}",
                                         f"--mllm=replay:{recording}", "--mllm-cache=off", f"--mllm-json={out}")


@pytest.mark.parametrize("name", ["Model_MMBench_DEV_EN.xlsx", "Model_MMBench_DEV_EN.tsv", "Model_MMBench_DEV_EN.json"])
def test_a_vlmevalkit_prediction_file_rescored_equals_vlmevalkits_evaluation(pytester: pytest.Pytester,
                                                                             name: str) -> None:
    out = pytester.path / "rescored.json"
    result = rescore(pytester, "mmbench", FIXTURES / "mmbench_circular", PREDICTIONS / name, out)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()  # wrong answers are "incorrect", not failures
    document = json.loads(out.read_text())
    assert not [r for r in document["records"] if r["status"] == "error"]
    metrics = document["benchmarks"]["mmbench"]["metrics"]
    assert metrics["circular_accuracy"] == VLMEVALKIT["Overall"][0] == 8 / 18
    assert metrics["vanilla_accuracy"] == VANILLA_0["Overall"][0]  # first passes
    assert metrics["accuracy"] == VANILLA_ALL["Overall"][0]  # every pass
    for category in ("attribute_recognition", "image_scene", "spatial_relationship", "object_localization"):
        assert metrics[f"category.{category}.circular_accuracy"] == VLMEVALKIT[category][0]
    for short, l2 in (("CP", "coarse_perception"), ("RR", "relation_reasoning"),
                      ("FP-S", "finegrained_perception (instance-level)")):
        assert metrics[f"l2_category.{l2}.circular_accuracy"] == VLMEVALKIT[short][0]


def test_an_lmms_eval_samples_file_rescored_equals_popes_official_scores(pytester: pytest.Pytester) -> None:
    out = pytester.path / "rescored.json"
    result = rescore(pytester, "pope", FIXTURES / "pope_splits", LMMS_EVAL, out)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    document = json.loads(out.read_text())
    assert len(document["records"]) == 30 and not [r for r in document["records"] if r["status"] == "error"]
    metrics = document["benchmarks"]["pope"]["metrics"]
    assert metrics["pooled_f1"] == POPE["pooled"]["F1 score"]
    for split, theirs in POPE["splits"].items():
        assert metrics[f"{split}.f1"] == theirs["F1 score"] and metrics[f"{split}.count"] == theirs["n"]
    # lmms-eval's own POPE reading (exact match) scores these answers 0.1667 accurate; POPE's reads 0.667
    assert metrics["accuracy"] == POPE["pooled"]["Accuracy"]


def test_compare_sets_a_rescored_run_beside_one_of_ours(pytester: pytest.Pytester) -> None:
    rescored, ours = pytester.path / "lmms_eval.json", pytester.path / "ours.json"
    assert rescore(pytester, "pope", FIXTURES / "pope_splits", LMMS_EVAL, rescored).ret == pytest.ExitCode.OK
    ran = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=pope",
                                        f"--mllm-data={FIXTURES / 'pope_splits'}", "--mllm=baseline:yes",
                                        f"--mllm-json={ours}")
    assert ran.ret == pytest.ExitCode.OK
    diff = pytester.path / "diff.json"
    command = Path(sys.executable).with_name("pytest-mllm-compare")
    result = pytester.run(command, rescored, ours, "--json", diff)
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*pope.mean_f1*", "ours.json: * regressed, * fixed of 30 samples in both runs"])
    runs = [json.loads(p.read_text()) for p in (rescored, ours)]
    comparison = json.loads(diff.read_text())["benchmarks"]["pope"]
    assert comparison["metrics"]["mean_f1"] == [r["benchmarks"]["pope"]["metrics"]["mean_f1"] for r in runs]
    verdicts = [{r["id"]: r["status"] == "correct" for r in run["records"]} for run in runs]
    flips = {i for i in verdicts[0] if verdicts[0][i] != verdicts[1][i]}
    assert flips and {f["id"] for f in json.loads(diff.read_text())["flips"]} == flips
