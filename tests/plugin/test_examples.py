"""examples/model-repo, black-box: a model repository that uses pytest-mllm as its CI gate.

The example is copied as it is into a fresh folder and run there with the commands its
README and its CI workflow give: the gates in its pyproject pass, the regression gate against
its committed baseline passes, an unmeetable gate fails the session, and a plain `pytest`
runs its unit test and skips its benchmark tests.
"""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "model-repo"
NO_CACHE = ("-p", "no:cacheprovider")
PYPROJECT_GATES = ("shapes.perception.accuracy>=0.80", "shapes.color.accuracy>=0.95",
                   "shapes.choice.accuracy>=0.90", "shapes.yes_ratio<=0.7")


@pytest.fixture
def model_repo(pytester: pytest.Pytester) -> Path:
    """The example repository, copied into pytester's folder, which is also the working directory."""
    shutil.copytree(EXAMPLE, pytester.path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".mllm_cache", "results.json",
                                                  "report.html", "junit.xml"))
    pytester.chdir()
    return pytester.path


def workflow_command(repo: Path, step_name: str) -> list[str]:
    """The pytest arguments of one step of the example's CI workflow (so the test runs what CI runs)."""
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "eval.yml").read_text())
    steps = {step.get("name"): step for step in workflow["jobs"]["eval"]["steps"]}
    command = shlex.split(steps[step_name]["run"])
    assert command[0] == "pytest", command
    return command[1:]


def gates_section(result: pytest.RunResult) -> str:
    """The terminal summary from the gates table on."""
    out = result.stdout.str()
    assert "gates" in out, out
    return out[out.index("gates"):]


def test_evaluation_passes_the_pyproject_gates(model_repo: Path, pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*NO_CACHE, "--mllm=my-vlm", "--mllm-bench=shapes", "--mllm-json=results.json")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*pytest-mllm scores*", "*overall*360*", "gates*",
                                 *(f"*{gate}*pass*" for gate in PYPROJECT_GATES)])
    assert "fail" not in gates_section(result)
    data = json.loads((model_repo / "results.json").read_text())
    assert data["settings"]["model"] == "my-vlm"
    metrics = data["benchmarks"]["shapes"]["metrics"]
    # a real (tiny) model: far above chance (50 % yes/no, 25 % choice) where it has the skill ...
    assert metrics["color.accuracy"] >= 0.95 and metrics["existence.accuracy"] >= 0.9
    assert metrics["count.accuracy"] >= 0.9 and metrics["choice.accuracy"] >= 0.9
    assert metrics["position.accuracy"] == 0.5  # ... and "No" where it has none (no spatial reasoning yet)
    # the committed baseline is this model's run: regenerate it when the model changes
    baseline = json.loads((model_repo / "baselines" / "main.json").read_text())
    assert baseline["benchmarks"]["shapes"]["metrics"] == metrics


def test_regression_gate_of_the_ci_workflow_passes(model_repo: Path, pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    args = workflow_command(model_repo, "Benchmark and gates")
    assert "--mllm-baseline=baselines/main.json" in args
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(model_repo / "step_summary.md"))  # as GitHub Actions sets it
    result = pytester.runpytest_subprocess(*NO_CACHE, *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*shapes.perception.accuracy drop<=0.02*0.875*0.855*pass*baseline*",
                                 "pytest-mllm: shapes: 360 answers generated, 0 from the cache"])
    assert "fail" not in gates_section(result)
    workflow = yaml.safe_load((model_repo / ".github" / "workflows" / "eval.yml").read_text())
    steps = {step.get("name"): step for step in workflow["jobs"]["eval"]["steps"]}
    uploaded = steps["Upload the results and the report"]["with"]["path"].split()
    assert uploaded == ["results.json", "report.html", "junit.xml"]
    assert all((model_repo / name).is_file() for name in uploaded)  # what the workflow uploads
    summary = (model_repo / "step_summary.md").read_text()
    assert "| `shapes.perception.accuracy drop<=0.02` | 0.875 | 0.855 | ✅ pass |" in summary
    assert steps["Restore the response cache"]["with"]["path"] == ".mllm_cache"
    again = pytester.runpytest_subprocess(*NO_CACHE, *args)  # the next run, with the cache CI restores
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(["pytest-mllm: shapes: 0 answers generated, 360 from the cache"])


def test_a_gate_the_model_cannot_meet_fails_the_session(model_repo: Path, pytester: pytest.Pytester) -> None:
    # a subset is enough here (colour: 100 %, position: 50 %); `-o mllm_gates=` switches off the
    # pyproject gates, which are written for the whole benchmark, so that this gate alone decides
    result = pytester.runpytest_subprocess(*NO_CACHE, "--mllm=my-vlm", "--mllm-bench=shapes", "-k", "color or position",
                                           "-o", "mllm_gates=", "--mllm-gate=shapes.accuracy>=0.99")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["gates*", "*shapes.accuracy>=0.99*0.75*0.99*fail*"])
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] == 120 and outcomes["incorrect"] == 40
    assert "failed" not in outcomes and "errors" not in outcomes  # no sample failed: the gate decides


def test_plain_pytest_runs_the_unit_test_and_skips_benchmark_tests(model_repo: Path,
                                                                   pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(*NO_CACHE, "-rs")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1, skipped=2)
    result.stdout.fnmatch_lines(["*benchmark test: pass --mllm=MODEL to run it*"])
    assert "pytest-mllm" not in result.stdout.str()


def test_behaviour_tests_of_the_ci_workflow_pass_with_the_model(model_repo: Path, pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(model_repo / "step_summary.md"))  # as GitHub Actions sets it
    result = pytester.runpytest_subprocess(*NO_CACHE, *workflow_command(model_repo, "Unit and behaviour tests"))
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    # 80 colour samples checked for clean answers, the 40 wrong-colour ones for hallucination, 1 unit test
    result.assert_outcomes(passed=121, skipped=40)
    # the benchmark as a whole did not run: its gates are "not run" (--mllm-gate-skip-missing), never "passed"
    summary = (model_repo / "step_summary.md").read_text()
    assert "**0 of 4 gates ran**" in summary and "passed" not in summary, summary
    result.stdout.fnmatch_lines(["pytest-mllm: 0 of 4 gates ran"])
