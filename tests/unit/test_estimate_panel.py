"""The estimate's panel: results files and curation manifests read into each unit's difficulty."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.estimate.panel import PanelError, read_panel


def _results(path: Path, model: str, verdicts: dict[str, str | None], bench: str = "b") -> Path:
    records = [{"id": i, "benchmark": bench, "task": "t", "status": status or "error"} for i, status in verdicts.items()]
    path.write_text(json.dumps({"settings": {"model": model}, "benchmarks": {bench: {"metrics": {}}},
                                "records": records}))
    return path


def _manifest(path: Path, correct: dict[str, int], panel: int, runs: list[str]) -> Path:
    entries = [{"id": i, "task": "t", "unit": f"id:{i}", "class": "hard", "correct": c, "unknown": 0}
               for i, c in correct.items()]
    settings: dict[str, Any] = {"benchmark": "b", "thresholds": {"panel": panel},
                                "panel": [{"model": f"m{n}", "results": r} for n, r in enumerate(runs)]}
    path.write_text(json.dumps({"settings": settings, "kept": entries[:1], "dropped": entries[1:]}))
    return path


def test_difficulty_is_the_share_of_members_right_on_a_unit(tmp_path: Path) -> None:
    files = [_results(tmp_path / "1.json", "m1", {"x": "correct", "y": "incorrect", "z": "correct"}),
             _results(tmp_path / "2.json", "m2", {"x": "correct", "y": "correct", "z": None}),
             _results(tmp_path / "3.json", "m3", {"x": "incorrect", "y": "incorrect", "z": "incorrect"})]
    bench = read_panel(files).benchmark("b")
    units = {"x": ["x"], "pair": ["y", "z"]}
    found = bench.difficulty(units)
    assert found["x"] == pytest.approx(2 / 3)
    assert found["pair"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)  # an errored answer is unknown, never wrong
    assert bench.difficulty(units, leave_out="m3")["x"] == 1.0


def test_the_digest_names_the_content_not_the_files(tmp_path: Path) -> None:
    one = _results(tmp_path / "one.json", "m1", {"x": "correct"})
    two = _results(tmp_path / "two.json", "m2", {"x": "incorrect"})
    copy = tmp_path / "elsewhere.json"
    copy.write_text(json.dumps(json.loads(one.read_text()), indent=3))
    assert read_panel([one, two]).digest == read_panel([two, copy]).digest
    changed = _results(tmp_path / "three.json", "m2", {"x": "correct"})
    assert read_panel([one, changed]).digest != read_panel([one, two]).digest


def test_a_model_named_twice_keeps_both_runs_apart(tmp_path: Path) -> None:
    files = [_results(tmp_path / "a.json", "m", {"x": "correct"}), _results(tmp_path / "b.json", "m", {"x": "incorrect"})]
    labels = [m.label for m in read_panel(files).benchmark("b").members]
    assert labels == ["m (a.json)", "m (b.json)"]


def test_a_manifest_reads_its_panel_s_runs_when_they_are_there(tmp_path: Path) -> None:
    run = _results(tmp_path / "run.json", "m1", {"x": "correct", "y": "incorrect"})
    panel = read_panel([_manifest(tmp_path / "manifest.json", {"x": 0, "y": 3}, 3, [run.name])])
    assert [m.label for m in panel.benchmark("b").members] == ["m1"]
    assert panel.benchmark("b").difficulty({"y": ["y"]}) == {"y": 0.0}


def test_a_manifest_without_its_runs_gives_the_share_of_the_panel_right(tmp_path: Path) -> None:
    panel = read_panel([_manifest(tmp_path / "manifest.json", {"x": 1, "y": 3}, 4, ["gone.json"])])
    bench = panel.benchmark("b")
    assert bench.members == () and bench.difficulty({"u": ["x", "y"]}) == {"u": pytest.approx(0.5)}


def test_a_benchmark_the_panel_lacks_is_named_with_what_it_holds(tmp_path: Path) -> None:
    panel = read_panel([_results(tmp_path / "r.json", "m", {"x": "correct"}, bench="other")])
    with pytest.raises(PanelError, match=r"no records of benchmark 'b' \(it holds: other\)"):
        panel.benchmark("b")


@pytest.mark.parametrize(("content", "problem"), [
    ("{", "not JSON"), ("[]", "not a JSON object"), ('{"benchmarks": {}}', "not a --mllm-json results file"),
    ('{"benchmarks": {}, "records": []}', "no per-sample records"),
    ('{"settings": {"benchmark": "b"}, "kept": []}', "without its benchmark or panel size")])
def test_a_file_that_is_no_panel_is_named_with_the_fix(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(PanelError, match=problem) as error:
        read_panel([path])
    assert str(path) in str(error.value)


def test_no_panel_file_at_all_says_what_to_give(tmp_path: Path) -> None:
    with pytest.raises(PanelError, match="--mllm-estimate-panel"):
        read_panel([])
    with pytest.raises(PanelError, match="cannot read it"):
        read_panel([tmp_path / "missing.json"])
