"""Statistical regression limits in a pytest run: `=significant` and `=DROP@ALPHA`, from the command line and ini."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("scipy.stats")

ARGS = ("-p", "no:cacheprovider", "--mllm-bench=shapes", "-k", "existence")


def test_significance_limits_tell_noise_from_a_drop(pytester: pytest.Pytester) -> None:
    base = pytester.path / "base.json"
    assert pytester.runpytest(*ARGS, "--mllm=baseline:random:1", f"--mllm-json={base}").ret == pytest.ExitCode.OK
    document = json.loads(base.read_text())
    bench = document["benchmarks"]["shapes"]
    assert bench["intervals"]["accuracy"]["method"] == "wilson" and "setup" in bench
    perfect = pytester.path / "perfect.jsonl"
    perfect.write_text("".join(json.dumps({"id": r["id"], "response": r["answer"].capitalize()}) + "\n"
                               for r in document["records"]))
    good = pytester.path / "good.json"
    assert pytester.runpytest(*ARGS, f"--mllm=replay:{perfect}", f"--mllm-json={good}").ret == pytest.ExitCode.OK

    pytester.makepyprojecttoml("""
        [tool.pytest.ini_options]
        mllm_max_drop = ["shapes.accuracy=significant"]
    """)
    head = pytester.path / "head.json"
    noise = pytester.runpytest(*ARGS, "--mllm=baseline:random:2", f"--mllm-baseline={base}",
                               "--mllm-max-drop=shapes.existence.accuracy_plus=0.3@0.05", f"--mllm-json={head}")
    noise.stdout.fnmatch_lines(["*shapes.accuracy drop significant@0.05*pass*",
                                "*shapes.existence.accuracy_plus drop<=0.3@0.05*pass*"])
    assert noise.ret == pytest.ExitCode.OK
    notes = {g["gate"]: g["note"] for g in json.loads(head.read_text())["gates"]}
    assert "mcnemar, 80 shared samples" in notes["shapes.accuracy drop significant@0.05"]
    assert "paired bootstrap" in notes["shapes.existence.accuracy_plus drop<=0.3@0.05"]

    drop = pytester.runpytest(*ARGS, "--mllm=baseline:random:2", f"--mllm-baseline={good}")
    assert drop.ret == pytest.ExitCode.TESTS_FAILED
    drop.stdout.fnmatch_lines(["*shapes.accuracy drop significant@0.05*fail*"])


def test_a_statistical_limit_needs_records_in_the_baseline(pytester: pytest.Pytester) -> None:
    base = pytester.path / "base.json"
    assert pytester.runpytest(*ARGS, "--mllm=baseline:random:1", f"--mllm-json={base}").ret == pytest.ExitCode.OK
    document = json.loads(base.read_text())
    document["records"] = []
    base.write_text(json.dumps(document))
    result = pytester.runpytest(*ARGS, "--mllm=baseline:random:1", f"--mllm-baseline={base}",
                                "--mllm-max-drop=shapes.accuracy=significant")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*shapes.accuracy drop significant@0.05*fail*",
                                 "gate failed: shapes.accuracy drop significant@0.05*no per-sample records*"])
