"""The calibration report (`pytest-mllm-estimate-check`) on a simulated panel: members held out in turn."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from pytest_mllm.estimate.check import check, lines, main
from pytest_mllm.estimate.design import parse_size

pytest.importorskip("scipy.stats")


def _panel(folder: Path, models: int = 8, units: int = 120) -> list[Path]:
    """Models of rising ability answering units of spread difficulty (a logistic item response), one file each."""
    rng = random.Random(7)
    difficulty = [rng.uniform(-3, 3) for _ in range(units)]
    files = []
    for m in range(models):
        ability = -1.5 + 3 * m / (models - 1)
        records = []
        for u, b in enumerate(difficulty):
            right = rng.random() < 1 / (1 + math.exp(b - ability))
            records.append({"id": f"q{u}", "benchmark": "sim", "task": "ab"[u % 2], "group": None, "image": "",
                            "pair_group": None, "answer": "yes", "answer_type": "yes_no", "parsed": "yes" if right else "no",
                            "correct": right, "status": "correct" if right else "incorrect"})
        path = folder / f"m{m}.json"
        path.write_text(json.dumps({"settings": {"model": f"m{m}"}, "records": records, "benchmarks": {
            "sim": {"metrics": {}, "headline": "accuracy", "setup": {"metrics": ["accuracy"], "groups": {},
                                                                      "task_order": []}}}}))
        files.append(path)
    return files


def test_each_member_is_held_out_and_the_stratified_draw_beats_a_random_one(tmp_path: Path) -> None:
    report = check(_panel(tmp_path), [parse_size("20%")], range(150))
    found = report["benchmarks"]["sim"]
    assert found["metric"] == "accuracy" and found["units"] == 120 and len(found["members"]) == 8
    row = found["sizes"]["20%"]
    assert row["units"] == 24 and row["stratified"]["estimates"] == 8 * 150
    assert row["stratified"]["mae"] < 0.95 * row["random"]["mae"]  # 0.86 with 200 seeds at 10 %, 20 %, 50 %
    assert row["stratified"]["coverage"] >= 0.93 and row["random"]["coverage"] >= 0.93
    text, ok = lines(report, min_coverage=0.0)
    assert ok and any("MAE strat" in line for line in text)
    assert not lines(report, min_coverage=1.01)[1]


def test_a_panel_too_small_to_hold_out_is_skipped(tmp_path: Path) -> None:
    report = check(_panel(tmp_path, models=2), [parse_size("20%")], range(3))
    assert "hold-out needs 3 or more" in report["benchmarks"]["sim"]["skipped"]


def test_the_command_writes_json_and_fails_on_low_coverage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(p) for p in _panel(tmp_path, models=4, units=40)]
    out = tmp_path / "report.json"
    assert main([*files, "--sizes", "20%", "--seeds", "5", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["benchmarks"]["sim"]["sizes"]["20%"]["units"] == 8
    assert main([*files, "--sizes", "20%", "--seeds", "5", "--min-coverage", "1.01"]) == 1
    assert main([*files, "--sizes", "150%"]) == 2
    assert "--mllm-estimate='150%'" in capsys.readouterr().err
