"""Score gates from the command line and from ini, regression gates against a baseline run,
and the exit status they decide."""

from __future__ import annotations

import json

import pytest

ARGS = ("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes", "-k", "existence")


def test_passing_and_failing_gates_are_shown_with_value_and_limit(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ARGS, "--mllm-gate=shapes.existence.accuracy>=0.5")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*gates*", "*shapes.existence.accuracy>=0.5*0.50*0.5*pass*"])
    result = pytester.runpytest(*ARGS, "--mllm-gate=shapes.existence.accuracy>=0.75", "--mllm-gate=shapes.yes_ratio<=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*shapes.existence.accuracy>=0.75*fail*", "*shapes.yes_ratio<=1*pass*"])


def test_gates_from_pyproject(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        mllm_gates = ["shapes.perception>=60", "pope.f1>=0.85"]
        mllm_gate_skip_missing = true
    """)
    result = pytester.runpytest(*ARGS)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*shapes.perception>=60*0.50*60*fail*", "*pope.f1>=0.85*not run*"])


def test_invalid_gate_is_a_usage_error_before_anything_runs(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ARGS, "--mllm-gate=shapes.accuracy => 0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*invalid gate 'shapes.accuracy => 0.5': expected BENCHMARK.METRIC OP NUMBER*"])
    assert "collected" not in result.stdout.str()


def test_unknown_metric_is_a_usage_error_before_the_run_that_lists_what_exists(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ARGS, "--mllm-gate=shapes.bleu>=0.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*gate 'shapes.bleu>=0.5': benchmark 'shapes' has no metric 'bleu'; metrics: accuracy, "
                                 "accuracy_plus, count, *; scopes: choice, color, *"])
    assert "passed" not in result.stdout.str()


def test_regression_gate_against_a_baseline_run(pytester: pytest.Pytester) -> None:
    baseline = pytester.path / "main.json"
    assert pytester.runpytest(*ARGS[:2], "--mllm=baseline:random", *ARGS[3:], f"--mllm-json={baseline}").ret == 0
    before = json.loads(baseline.read_text())["benchmarks"]["shapes"]["metrics"]
    # the branch answers "yes" to everything: accuracy+ collapses to 0
    result = pytester.runpytest(*ARGS, f"--mllm-baseline={baseline}", "--mllm-max-drop=shapes.existence.accuracy_plus=0.05")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*shapes.existence.accuracy_plus drop<=0.05*0.00*"
                                 f"{before['existence.accuracy_plus'] - 0.05:g}*fail*"])
    same = pytester.runpytest(*ARGS[:2], "--mllm=baseline:random", *ARGS[3:], f"--mllm-baseline={baseline}")
    assert same.ret == pytest.ExitCode.OK  # the default limit: no drop of the headline metric
    same.stdout.fnmatch_lines(["*shapes.accuracy drop<=0*pass*"])


def test_max_drop_without_baseline_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*ARGS, "--mllm-max-drop=0.1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mllm-max-drop needs a baseline: pass --mllm-baseline=PATH*"])
