"""What a CI job shows of a run: the gates and scores in the JUnit XML (read with junitparser, as a CI
page reads it), the Markdown summary, logs whose tables are never cut, where the answers came from,
and the listing of the bundled benchmarks and their markers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from junitparser import Failure, JUnitXml, Properties, Skipped

BASE = ("-p", "no:cacheprovider", "-p", "no:randomly")
FEW = ("--mllm-bench=shapes", "-k", "img_000")  # 9 samples: 4 yes/no pairs and a multiple-choice question

# A model that knows the answers: a fake standing in for a strong model, so that a baseline run
# scores 1.0 and a later, weaker run breaks the regression limit. Its `identity` keys the cache.
ORACLE_CONFTEST = '''
from pytest_mllm.sample import Response

class Oracle:
    name = "oracle"
    identity = "oracle-v1"
    needs_images = False

    def generate(self, requests):
        return [Response(r.sample.answer) for r in requests]

def pytest_mllm_make_model(spec, config):
    return Oracle() if spec == "oracle" else None
'''


def _suite(path: Path):  # type: ignore[no-untyped-def]
    suites = list(JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    return suites[0]


def _case_properties(case) -> dict[str, str]:  # type: ignore[no-untyped-def]
    found = case.child(Properties)
    return {} if found is None else {p.name: p.value for p in found}


@pytest.fixture
def baseline(pytester: pytest.Pytester) -> Path:
    """A results file of the oracle: every headline at 1.0."""
    pytester.makeconftest(ORACLE_CONFTEST)
    path = pytester.path / "baseline.json"
    result = pytester.runpytest(*BASE, "--mllm=oracle", *FEW, f"--mllm-json={path}", "--mllm-cache=off")
    assert result.ret == 0, result.stdout.str()
    assert json.loads(path.read_text())["benchmarks"]["shapes"]["metrics"]["accuracy"] == 1.0
    return path


def test_gates_and_limits_are_junit_test_cases_and_the_markdown_summary_shows_them(
        pytester: pytest.Pytester, baseline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    junit, summary, step, html = (pytester.path / n for n in ("junit.xml", "summary.md", "step.md", "report.html"))
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    for name, value in (("GITHUB_SERVER_URL", "https://github.com"), ("GITHUB_REPOSITORY", "me/vlm"),
                        ("GITHUB_RUN_ID", "42")):
        monkeypatch.setenv(name, value)
    result = pytester.runpytest(
        *BASE, "--mllm=baseline:yes", *FEW, f"--junitxml={junit}", f"--mllm-markdown={summary}",
        f"--mllm-html={html}", "--mllm-gate=shapes.accuracy>=0.99", "--mllm-gate=shapes.color>=0.1",
        "--mllm-gate=pope.f1>=0.8", "--mllm-gate-skip-missing", f"--mllm-baseline={baseline}",
        "--mllm-max-drop=shapes.accuracy=0.05")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()

    suite = _suite(junit)
    cases = {(case.classname, case.name): case for case in suite}
    gate = cases[("shapes.gates", "shapes.accuracy>=0.99")]
    assert isinstance(gate.result[0], Failure) and gate.result[0].message == "gate failed: shapes.accuracy 0.4444 < 0.99"
    assert cases[("shapes.gates", "shapes.color>=0.1")].is_passed
    skipped = cases[("pope.gates", "pope.f1>=0.8")]
    assert isinstance(skipped.result[0], Skipped) and "benchmark 'pope' did not run" in skipped.result[0].message
    limit = cases[("shapes.regressions", "shapes.accuracy drop<=0.05")]
    assert isinstance(limit.result[0], Failure)
    assert limit.result[0].message == ("gate failed: shapes.accuracy 0.4444 < 0.95 (max drop 0.05) "
                                       "(baseline 1, change -0.5556)")
    assert (suite.tests, suite.failures, suite.skipped) == (9 + 4, 2, 1)  # 9 samples, 3 gates, 1 limit

    properties = {p.name: p.value for p in suite.properties()}
    assert float(properties["shapes.accuracy"]) == pytest.approx(4 / 9)
    assert float(properties["shapes.perception"]) == 0.5
    assert re.fullmatch(r"\[0\.\d+, 0\.\d+\]", properties["shapes.accuracy.ci95"])
    assert (properties["shapes.answers_generated"], properties["shapes.answers_cached"]) == ("9", "0")
    wrong = cases[("shapes.existence.img_000.png", "q2")]  # "Yes" to a question whose answer is "no"
    assert wrong.is_passed and _case_properties(wrong) == {"mllm.status": "incorrect", "mllm.expected": "no",
                                                           "mllm.parsed": "yes"}
    assert _case_properties(cases[("shapes.existence.img_000.png", "q1")]) == {}

    text = summary.read_text()
    assert "**2 of 4 gates failed; 1 did not run**" in text
    assert "| `shapes.accuracy>=0.99` | 0.444444 | 0.99 | ❌ **fail** |  |" in text
    assert "| `pope.f1>=0.8` | – | 0.8 | ⏭️ not run | benchmark 'pope' did not run |" in text
    assert "### Regressions against the baseline" in text
    assert ("| `shapes.accuracy drop<=0.05` | 0.444444 | 0.95 | ❌ **fail** | baseline 1, change -0.5556 |"
            in text)
    assert re.search(r"\| shapes \| overall \| accuracy \| 44\.44 % \| \[\d+\.\d\d %, \d+\.\d\d %\] \| 9 \| 0 \| "
                     r"9 generated, 0 from the cache \|", text), text
    assert f"- HTML report: `{html}`" in text
    assert "- uploaded with [this run's artifacts](https://github.com/me/vlm/actions/runs/42)" in text
    assert step.read_text() == "earlier step\n" + text + "\n"  # appended, as GitHub expects


def test_strict_makes_wrong_answers_failures_in_the_junit_xml(pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(*BASE, "--mllm=baseline:yes", *FEW, "--mllm-strict", f"--junitxml={junit}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suite = _suite(junit)
    assert (suite.tests, suite.failures) == (9, 5)
    wrong = next(case for case in suite if (case.classname, case.name) == ("shapes.existence.img_000.png", "q2"))
    assert isinstance(wrong.result[0], Failure) and "expected: no" in wrong.result[0].text
    assert _case_properties(wrong) == {}


def test_under_xdist_the_controller_writes_the_gates_and_the_wrong_answers_properties(
        pytester: pytest.Pytester) -> None:
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(*BASE, "-n", "2", "--mllm=baseline:yes", *FEW, f"--junitxml={junit}",
                                           "--mllm-gate=shapes.accuracy>=0.99")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    suite = _suite(junit)
    assert (suite.tests, suite.failures) == (10, 1)
    cases = {(case.classname, case.name): case for case in suite}
    assert isinstance(cases[("shapes.gates", "shapes.accuracy>=0.99")].result[0], Failure)
    assert _case_properties(cases[("shapes.choice", "img_000.png")]) == {
        "mllm.status": "incorrect", "mllm.expected": "A", "mllm.parsed": "unreadable"}


def test_off_a_terminal_no_table_cell_or_title_is_cut(pytester: pytest.Pytester) -> None:
    """pytester's output is not a terminal: every table is as wide as its cells, whatever $COLUMNS says."""
    pytester.makeconftest(ORACLE_CONFTEST)
    result = pytester.runpytest(*BASE, "--mllm=baseline:yes", "--mllm-bench=shapes", "-k", "img_000 and existence",
                                "--mllm-gate=shapes.color>=0.1", "--mllm-gate=shapes.accuracy>=0.4")
    output = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    note = ("not evaluated: no sample of 'color' ran; pass --mllm-gate-skip-missing to let such a gate be 'not run'")
    assert any(line.rstrip().endswith(note) and "shapes.color>=0.1" in line for line in result.outlines), output
    assert "gates (in the gate's unit: rates as fractions 0–1, not %; MME scores in points)" in result.outlines
    assert not [line for line in result.outlines if "│" in line and "…" in line]


def test_compare_off_a_terminal_cuts_nothing(pytester: pytest.Pytester, baseline: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_mllm.report.compare import main

    later = pytester.path / "later.json"
    assert pytester.runpytest(*BASE, "--mllm=baseline:yes", *FEW, f"--mllm-json={later}").ret == 0
    capsys.readouterr()
    assert main([str(baseline), str(later), "--max-drop=shapes.accuracy=significant"]) == 0
    output = capsys.readouterr().out
    assert "…" not in output
    assert ("regression limits (in the metric's unit: rates as fractions 0–1, not %; MME scores in points)"
            in output.splitlines())


def test_answers_from_the_cache_are_counted(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(ORACLE_CONFTEST)
    cache = f"--mllm-cache-dir={pytester.path / 'cache'}"
    first = pytester.runpytest(*BASE, "--mllm=oracle", *FEW, cache)
    first.stdout.fnmatch_lines(["pytest-mllm: shapes: 9 answers generated, 0 from the cache"])
    again = pytester.runpytest(*BASE, "--mllm=oracle", *FEW, "-k", "img_000 or img_001", cache)
    again.stdout.fnmatch_lines(["pytest-mllm: shapes: 9 answers generated, 9 from the cache"])


def test_markers_and_the_list_name_every_bundled_benchmark(pytester: pytest.Pytester) -> None:
    from pytest_mllm.engine.spec import all_aliases, bundled_specs, load_spec

    markers = pytester.runpytest("-p", "no:cacheprovider", "--markers").stdout.str()
    for marker in ("shapes", "mme", "mmbench", "pope", "perception", "existence", "cognition", "OCR"):
        assert f"@pytest.mark.{marker}: pytest-mllm " in markers, marker
    assert "@pytest.mark.perception: pytest-mllm group of mme, shapes" in markers

    listed = pytester.runpytest("-p", "no:cacheprovider", "--mllm-list")
    assert listed.ret == 0
    text = listed.stdout.str()
    for name, path in bundled_specs().items():
        assert re.search(rf"^{name}( \[[^\]]*\])?: {load_spec(path).name}", text, re.MULTILINE), name
    for alias, name in all_aliases().items():
        assert re.search(rf"^{name} \[[^\]]*\b{re.escape(alias)}\b", text, re.MULTILINE), alias
    assert ("  gate paths: mme.<metric>; mme.<task or group> (its score); mme.<task or group>.<metric>; "
            "metrics: accuracy, accuracy_plus, count, errors, score") in text
    assert "pass --mllm-data=mme=DIR or set MLLM_DATA_MME" in text


def test_a_benchmark_named_as_lmms_eval_or_vlmevalkit_name_it_runs(pytester: pytest.Pytester) -> None:
    from pytest_mllm.engine.spec import find_spec

    assert find_spec("MMBench_DEV_EN") == find_spec("mmbench_en_dev") == find_spec("mmbench")
    assert find_spec("MMMU_DEV_VAL").name == "mmmu_tsv.yaml" and find_spec("mmmu_val").name == "mmmu.yaml"
    assert find_spec("hallusion_bench_image").name == "hallusionbench_parquet.yaml"
    assert find_spec("SEEDBench_IMG").name == "seedbench.yaml" and find_spec("MME").name == "mme.yaml"
    pope = Path(__file__).resolve().parents[2] / "fixtures" / "pope_splits"
    result = pytester.runpytest(*BASE, "--mllm-bench=POPE", f"--mllm-data=pope={pope}",
                                f"--mllm=replay:{pope / 'responses.jsonl'}", "--mllm-cache=off",
                                "--mllm-gate=pope.random.f1>=0.5")  # a split the data names, not the spec
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["pope (vtsv) · headline: mean_f1*", "*pope.random.f1>=0.5*pass*"])
