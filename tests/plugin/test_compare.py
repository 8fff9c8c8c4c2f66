"""`pytest-mllm-compare`: runs side by side, deltas, flipped samples, and the regression gate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

COMMAND = Path(sys.executable).with_name("pytest-mllm-compare")


def compare(pytester: pytest.Pytester, *args: str | Path) -> pytest.RunResult:
    assert COMMAND.exists(), f"{COMMAND} is missing: install the package (pip install -e .)"
    return pytester.run(COMMAND, *args)


@pytest.fixture(scope="module")
def random_and_yes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Results of the random and the yes-to-everything baselines on shapes."""
    folder = tmp_path_factory.mktemp("runs")
    for model in ("random", "yes"):
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--mllm=baseline:{model}",
                   "--mllm-bench=shapes", f"--mllm-json={model}.json"]
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "random.json", folder / "yes.json"


def test_the_command_compares_runs_and_writes_both_reports(pytester: pytest.Pytester,
                                                           random_and_yes: tuple[Path, Path]) -> None:
    base, head = random_and_yes
    html, diff = pytester.path / "out" / "compare.html", pytester.path / "diff.json"
    result = compare(pytester, base, head, "--html", html, "--json", diff)
    assert result.ret == 0, result.stderr.str()
    result.stdout.fnmatch_lines(["*pytest-mllm comparison*", "*shapes.accuracy*", "*shapes.perception*",
                                 "yes.json: * regressed, * fixed of 360 samples in both runs"])

    documents = [json.loads(p.read_text()) for p in (base, head)]
    comparison = json.loads(diff.read_text())
    metrics = [d["benchmarks"]["shapes"]["metrics"] for d in documents]
    shapes = comparison["benchmarks"]["shapes"]
    for key in ("accuracy", "perception.accuracy_plus", "existence.score", "category.color.accuracy"):
        assert shapes["metrics"][key] == [metrics[0][key], metrics[1][key]]
        assert shapes["deltas"][key] == [None, pytest.approx(metrics[1][key] - metrics[0][key])]
    verdicts = [{r["id"]: r["status"] == "correct" for r in d["records"]} for d in documents]
    flipped = {i for i in verdicts[0] if verdicts[0][i] != verdicts[1][i]}
    assert flipped and {f["id"] for f in comparison["flips"]} == flipped
    fixed = {i for i in flipped if verdicts[1][i]}
    assert comparison["flip_counts"]["yes.json"] == {"compared": 360, "changed_inputs": 0,
                                                     "regressed": len(flipped - fixed), "fixed": len(fixed)}
    assert shapes["data_changed"] == [None, False] and shapes["data"][0]  # one data, read twice

    page = html.read_text(encoding="utf-8")
    assert "random.json" in page and "yes.json" in page and "<svg" in page
    assert f"Flipped samples ({len(flipped)})" in page and 'class="badge regressed"' in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page)


def test_a_broken_max_drop_limit_fails_the_command(pytester: pytest.Pytester,
                                                   random_and_yes: tuple[Path, Path]) -> None:
    base, head = random_and_yes
    before, after = (json.loads(p.read_text())["benchmarks"]["shapes"]["metrics"]["accuracy"] for p in (base, head))
    drop = before - after
    assert drop > 0.02  # yes-to-everything is worse than chance on shapes' multiple choice
    broken = compare(pytester, base, head, "--max-drop", f"shapes.accuracy={drop / 2:.4f}", "--max-drop", "1")
    assert broken.ret == 1
    broken.stdout.fnmatch_lines(["*regression limits*", "*shapes.accuracy*fail*", "*shapes.accuracy*pass*"])
    kept = compare(pytester, base, head, "--max-drop", f"shapes.accuracy={drop + 0.01:.4f}")
    assert kept.ret == 0
    assert compare(pytester, head, base, "--max-drop", "0").ret == 0  # the other way round it is a gain
    limited = json.loads(base.read_text())  # the same gain, from a run limited to 2 samples per task
    limited["incomplete"] = [{"kind": "limited", "reason": "limited to 2 samples per task", "per_task": 2}]
    smoke = pytester.path / "smoke.json"
    smoke.write_text(json.dumps(limited))
    not_passed = compare(pytester, head, smoke, "--max-drop", "0")
    assert not_passed.ret == 1  # a gain on a limited run is not passed
    not_passed.stdout.fnmatch_lines(["*shapes.accuracy*fail*not passed: the run was limited to 2 samples per task*"])


def test_input_that_is_not_results_is_named(pytester: pytest.Pytester) -> None:
    base = pytester.makefile(".json", base='{"benchmarks": {}, "records": []}')
    other = pytester.makefile(".json", other='{"hello": "world"}')
    result = compare(pytester, base, other)
    assert result.ret == 2
    result.stderr.fnmatch_lines([f"*error: {other}: not a pytest-mllm results file*--mllm-json*"])
    missing = compare(pytester, base, pytester.path / "nope.json")
    assert missing.ret == 2
    missing.stderr.fnmatch_lines(["*nope.json: cannot read it*"])
    assert compare(pytester, base, "--max-drop", "what").ret == 2
    assert compare(pytester, base).ret == 2  # one run is nothing to compare
