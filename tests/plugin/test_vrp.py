"""VRPTEST in the plugin: grid mode (the paper's 4 partial + 8 full per source), property mode
with hypothesis, the per-level / per-axis report, the radar chart, and samples without a region."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


def test_grid_mode_runs_every_source_with_its_variants(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "--mllm=baseline:yes", "--mllm-bench=vrp_shapes", f"--mllm-vrp-radar={pytester.path / 'radar.png'}")
    assert result.ret == pytest.ExitCode.OK
    records = data["records"]
    assert len(records) == 24 * 13
    levels = [r["variant"]["intervention"] for r in records]
    assert (levels.count("none"), levels.count("partial"), levels.count("full")) == (24, 96, 192)
    full = next(r for r in records if r["variant"]["intervention"] == "full")
    assert full["prompt"] == "Answer the question shown in the image." and full["variant"]["font_used"]
    vrp = data["benchmarks"]["vrp_shapes"]["scopes"]["vrp"]
    assert vrp["consistency"] == 1.0  # "Yes" whatever is drawn: the answer never moves
    assert vrp["sensitivity"] == 0.0
    assert set(vrp["axes"]) == {"Base", "C_Red", "C_Blue", "Pos_Upper", "Pos_Lower", "Arial", "TNR", "Cir", "Rect"}
    result.stdout.fnmatch_lines(["*visual referring prompts*", "*level*none*24*", "*axis*C_Red*",
                                 "*relation*consistency*100.00*"])
    assert (pytester.path / "radar.png").read_bytes()[:4] == b"\x89PNG"


def test_full_mode_widens_to_the_whole_product(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=vrp_shapes",
                                "--mllm-vrp=full", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*744 tests collected*"])  # 24 sources × 31 valid variants


def test_property_mode_checks_the_relation_per_source(pytester: pytest.Pytester) -> None:
    result, data = _run(pytester, "--mllm=baseline:yes", "--mllm-bench=vrp_shapes", "--mllm-vrp=property",
                        "--mllm-vrp-examples=4", "-k", "color")
    # "Yes" keeps the relation exactly where "Yes" is the right answer: half of the colour sources
    assert result.parseoutcomes() == {"failed": 6, "passed": 6, "deselected": 12}
    text = result.stdout.str()
    match = re.search(r"variant (\S+) \(intervention=(\w+), color=(\w+).*variant image: (\S+\.png)", text)
    assert match, text
    assert Path(match.group(4)).is_file()
    per_source = {}
    for record in data["records"]:
        per_source.setdefault(record["variant"]["source"], []).append(record["variant"]["variant"])
    assert all(ids[0] == "none" and len(ids) >= 2 for ids in per_source.values())
    again, data_again = _run(pytester, "--mllm=baseline:yes", "--mllm-bench=vrp_shapes", "--mllm-vrp=property",
                             "--mllm-vrp-examples=4", "-k", "color")
    assert [r["id"] for r in data_again["records"]] == [r["id"] for r in data["records"]]  # derandomized


def test_samples_without_a_target_region_are_skipped_with_a_reason(pytester: pytest.Pytester) -> None:
    spec = pytester.path / "mine.yaml"
    spec.write_text(f"name: mine\nloader: jsonl\nvariants: grid\nparser: mme\n"
                    f"data: {{root: {FIXTURES / 'jsonl'}, file: my_bench.jsonl}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes", "-rs")
    result.stdout.fnmatch_lines(["*no target region to point at: add target_region to this sample*", "*8 skipped*"])


def test_user_samples_with_regions_get_variants(pytester: pytest.Pytester) -> None:
    data_dir = pytester.path / "data"
    data_dir.mkdir()
    (data_dir / "red.png").write_bytes((FIXTURES / "jsonl" / "images" / "red.png").read_bytes())
    (data_dir / "b.jsonl").write_text(json.dumps({
        "id": "q1", "image": "red.png", "question": "Is the square in the middle red?", "answer": "yes",
        "target_region": [4, 4, 20, 20], "metadata": {"location": "in the middle"}}) + "\n")
    spec = pytester.path / "mine.yaml"
    spec.write_text(f"name: mine\nloader: jsonl\nvariants: grid\nparser: mme\nmetrics: [accuracy, vrp]\n"
                    f"data: {{root: {data_dir}, file: b.jsonl}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes", "-v")
    result.stdout.fnmatch_lines(["*mine::q1::none PASSED*", "*mine::q1::partial-red-box PASSED*",
                                 "*13 passed*"])


def test_relaxed_code_accuracy_is_a_scoring_option(pytester: pytest.Pytester) -> None:
    data_dir = pytester.path / "data"
    data_dir.mkdir()
    (data_dir / "red.png").write_bytes((FIXTURES / "jsonl" / "images" / "red.png").read_bytes())
    code = "for i in range(10):\n    total = total + values[i] * weights[i]\nprint(total)"
    rows = [{"id": "near", "image": "red.png", "question": "Code?", "answer": code, "answer_type": "open"},
            {"id": "far", "image": "red.png", "question": "Code?", "answer": "while True:\n    pass",
             "answer_type": "open"}]
    (data_dir / "b.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (pytester.path / "preds.jsonl").write_text(
        json.dumps({"id": "near", "response": code.replace("print(total)", "print( total )")}) + "\n"
        + json.dumps({"id": "far", "response": code}) + "\n")
    spec = pytester.path / "code.yaml"
    spec.write_text(f"name: code\nloader: jsonl\nparser: code_bleu4\ndata: {{root: {data_dir}, file: b.jsonl}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), f"--mllm=replay:{pytester.path / 'preds.jsonl'}", "-v")
    result.stdout.fnmatch_lines(["*code::near PASSED*", "*code::far INCORRECT*"])
