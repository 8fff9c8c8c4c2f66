"""The main job: the bundled `shapes` benchmark runs offline, one test per sample, with scores."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning"), pytest.mark.fast]


def run_json(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


def test_random_baseline_scores_near_chance(pytester: pytest.Pytester) -> None:
    result, data = run_json(pytester, "--mllm=baseline:random", "--mllm-bench=shapes")
    assert result.ret == 0
    metrics = data["benchmarks"]["shapes"]["metrics"]
    perception = metrics["perception.accuracy"]
    assert 0.42 <= perception <= 0.58, perception  # MME's random level: 50 %
    assert 0.15 <= metrics["perception.accuracy_plus"] <= 0.35  # and 25 % for accuracy+
    assert len(data["records"]) == 360
    result.stdout.fnmatch_lines(["*pytest-mllm scores*", "*overall*360*", "*[[]perception[]]*", "*choice*"])
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] + outcomes["incorrect"] == 360


def test_yes_baseline_has_full_yes_ratio(pytester: pytest.Pytester) -> None:
    _, data = run_json(pytester, "--mllm=baseline:yes", "--mllm-bench=shapes")
    metrics = data["benchmarks"]["shapes"]["metrics"]
    assert metrics["yes_ratio"] == 1.0 and metrics["recall"] == 1.0
    assert metrics["perception.accuracy"] == 0.5 and metrics["perception.accuracy_plus"] == 0.0


def test_records_carry_what_a_person_needs(pytester: pytest.Pytester) -> None:
    _, data = run_json(pytester, "--mllm=baseline:no", "--mllm-bench=shapes", "-k", "existence")
    record = data["records"][0]
    for key in ("id", "prompt", "response", "parsed", "correct", "latency_s", "question", "answer", "status"):
        assert key in record
    assert record["id"] == "existence::img_000.png::q1" and record["response"] == "No"
    assert data["settings"]["model"] == "baseline:no"


def test_k_and_m_select_subsets(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                "-k", "existence", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["shapes::existence::img_000.png::q1", "*80/360 tests collected*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                "-m", "color or position", "--strict-markers", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["*160/360 tests collected*"])


def test_a_spec_file_is_a_test_file(pytester: pytest.Pytester) -> None:
    from pytest_mllm.engine.spec import find_spec

    spec = pytester.path / "my_shapes.yaml"
    spec.write_text(find_spec("shapes").read_text().replace("images_per_task: 40", "images_per_task: 3"))
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes", "-q")
    assert result.parseoutcomes()["passed"] == 12  # 4 yes/no tasks × 3 images × Yes-question


def test_bench_without_model_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--mllm-bench=shapes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mllm-bench needs a model: pass --mllm=NAME*"])


def test_unknown_model_lists_known_names(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=gpt-9", "--mllm-bench=shapes", "-k", "img_000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown model 'gpt-9' in --mllm; known models:*llava-1.5-7b*baseline:random*"])
