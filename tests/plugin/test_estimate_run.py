"""`--mllm-estimate`: a subset of each benchmark drawn from a panel's difficulty, its full scores estimated,
labelled as an estimate in every output, and the gates deciding on the estimate's interval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml, Properties

pytest.importorskip("scipy.stats")

BASE = ("-p", "no:cacheprovider", "-p", "no:randomly", "--mllm-bench=shapes", "--mllm-cache=off")


def _run(pytester: pytest.Pytester, model: str, *args: str, json_path: Path | None = None,
         subprocess: bool = False) -> pytest.RunResult:
    extra = (f"--mllm-json={json_path}",) if json_path else ()
    run = pytester.runpytest_subprocess if subprocess else pytester.runpytest  # the HTML report's thumbnails: PIL's
    return run(*BASE, f"--mllm={model}", *extra, *args)  # plugins do not survive an in-process run's module reset


def _panel(pytester: pytest.Pytester) -> str:
    files = []
    for seed in (1, 2, 3):
        path = pytester.path / f"panel{seed}.json"
        assert _run(pytester, f"baseline:random:{seed}", json_path=path).ret == pytest.ExitCode.OK
        files.append(str(path))
    return ",".join(files)


def _document(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_a_subset_run_is_labelled_an_estimate_in_every_output(pytester: pytest.Pytester) -> None:
    panel = _panel(pytester)
    full = pytester.path / "full.json"
    assert _run(pytester, "baseline:random:4", json_path=full).ret == pytest.ExitCode.OK
    est, md, html, junit = (pytester.path / name for name in ("est.json", "est.md", "est.html", "junit.xml"))
    result = _run(pytester, "baseline:random:4", "--mllm-estimate=20%", f"--mllm-estimate-panel={panel}",
                  f"--mllm-markdown={md}", f"--mllm-html={html}", f"--junitxml={junit}", "--mllm-gate=shapes.accuracy>=0.05",
                  json_path=est, subprocess=True)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*shapes · ESTIMATE of the full benchmark (not a full run): estimate from * of 360 "
                                 "samples*stratified by difficulty, size 20%*panel sha256:*",
                                 "*overall*accuracy (%)*est.*"])
    document = _document(est)
    part = document["benchmarks"]["shapes"]["scopes"]["estimate"]
    settings = document["settings"]["estimate"]
    assert settings["label"] == part["label"] == "estimate"
    assert settings["panel"] == part["panel"] and part["panel"].startswith("sha256:") and len(part["panel"]) == 71
    assert (settings["method"], settings["size"], part["method"], part["size"]) == ("stratified", "20%") * 2
    digest = part["panel"]
    # the method, the size and the panel's digest beside the estimates in every output
    design = f"stratified by difficulty, size 20%, seed 0, panel {digest}"
    assert design in md.read_text() and design in html.read_text()
    estimated = [line for line in result.stdout.lines if "accuracy (%)" in line]
    assert estimated and all(" est. " in line for line in estimated)  # every estimated number says so
    gate = next(g for g in document["gates"] if g["gate"] == "shapes.accuracy>=0.05")
    assert gate["verdict"] == "pass" and gate["note"].startswith("estimate from") and "interval" in gate["note"]
    assert "| `shapes.accuracy>=0.05` |" in md.read_text() and "estimate from" in md.read_text().split("### Gates")[1]
    assert part["units_run"] == 40 and part["units"] == 200 and part["samples_run"] == len(document["records"])
    assert all(r["estimate"]["panel"] == part["panel"] and r["estimate"]["method"] == "stratified"
               for r in document["records"])
    truth = _document(full)["benchmarks"]["shapes"]["metrics"]["accuracy"]
    low, high = part["values"]["accuracy"]["ci"]
    assert low <= truth <= high
    metrics = document["benchmarks"]["shapes"]["metrics"]
    assert metrics["estimate.accuracy"] == part["values"]["accuracy"]["value"]
    assert "**estimate** (not a full run)" in md.read_text()
    assert "ESTIMATE of the full benchmark" in html.read_text()
    suite = next(iter(JUnitXml.fromfile(str(junit))))
    properties = {p.name: p.value for p in suite.child(Properties)}
    assert design in properties["shapes.estimate"] and "shapes.estimate.accuracy.ci95" in properties
    assert float(properties["shapes.estimate.accuracy"]) == metrics["estimate.accuracy"]
    estimated = {name for name in properties if name.startswith("shapes.estimate.") and not name.endswith(".ci95")}
    assert "shapes.estimate.accuracy" in estimated and all(
        float(properties[name]) == part["values"][name.removeprefix("shapes.estimate.")]["value"] for name in estimated)
    assert float(properties["shapes.accuracy"]) == part["values"]["accuracy"]["measured"]  # the subset's own, as
    assert properties["shapes.subset"].startswith("not a full run: the plain shapes.<metric> properties are the "
                                                  "subset's own")

    again = pytester.path / "again.json"
    assert _run(pytester, "baseline:random:4", "--mllm-estimate=20%", f"--mllm-estimate-panel={panel}",
                json_path=again).ret == pytest.ExitCode.OK
    other = pytester.path / "other.json"
    assert _run(pytester, "baseline:random:4", "--mllm-estimate=20%", f"--mllm-estimate-panel={panel}",
                "--mllm-estimate-seed=1", json_path=other).ret == pytest.ExitCode.OK
    ids = [{r["id"] for r in _document(p)["records"]} for p in (est, again, other)]
    assert ids[0] == ids[1] != ids[2]


def test_gates_on_an_estimate_decide_on_its_interval_and_pair_with_a_full_baseline(pytester: pytest.Pytester) -> None:
    panel = _panel(pytester)
    full = pytester.path / "full.json"
    assert _run(pytester, "baseline:random:4", json_path=full).ret == pytest.ExitCode.OK
    perfect = pytester.path / "perfect.jsonl"
    perfect.write_text("".join(json.dumps({"id": r["id"], "response": r["answer"].capitalize()}) + "\n"
                               for r in _document(full)["records"]))
    strong = pytester.path / "strong.json"
    assert _run(pytester, f"replay:{perfect}", json_path=strong).ret == pytest.ExitCode.OK
    subset = ("--mllm-estimate=20%", f"--mllm-estimate-panel={panel}")

    gated, junit = pytester.path / "gated.json", pytester.path / "gated.xml"
    result = _run(pytester, "baseline:random:4", *subset, "--mllm-gate=shapes.accuracy>=0.9",
                  "--mllm-gate=shapes.accuracy>=0.5", f"--mllm-baseline={strong}",
                  "--mllm-max-drop=shapes.accuracy=0.05", f"--junitxml={junit}", json_path=gated)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    notes = {g["gate"]: (g["verdict"], g["note"]) for g in _document(gated)["gates"]}
    verdict, note = notes["shapes.accuracy>=0.9"]
    assert verdict == "fail" and note.startswith("estimate from") and "wholly beyond the threshold" in note
    verdict, note = notes["shapes.accuracy>=0.5"]
    assert verdict == "fail" and "inconclusive" in note and "run the whole benchmark" in note
    verdict, note = notes["shapes.accuracy drop<=0.05"]
    assert verdict == "fail" and "paired with the baseline's records" in note
    failures = [case.result[0].message for case in next(iter(JUnitXml.fromfile(str(junit)))) if case.result]
    gates = [m for m in failures if m.startswith("gate failed")]
    assert len(gates) == 3 and all("estimate from" in m for m in gates)  # the JUnit test case says so too

    same = _run(pytester, "baseline:random:4", *subset, f"--mllm-baseline={full}",
                "--mllm-max-drop=shapes.accuracy=0.05", "--mllm-max-drop=shapes.accuracy=significant")
    assert same.ret == pytest.ExitCode.OK
    same.stdout.fnmatch_lines(["*shapes.accuracy drop<=0.05*pass*change +0*"])


@pytest.mark.parametrize(("args", "message"), [
    (("--mllm-estimate=20%",), "--mllm-estimate needs --mllm-estimate-panel=FILE"),
    (("--mllm-estimate-panel=p.json",), "--mllm-estimate-panel is given without --mllm-estimate=SIZE"),
    (("--mllm-estimate=150%", "--mllm-estimate-panel=p.json"), "a fraction must lie between 0 and 100 %"),
    (("--mllm-estimate=20%", "--mllm-estimate-panel=missing.json"), "missing.json: cannot read it"),
])
def test_bad_estimate_options_stop_the_run_before_anything_runs(pytester: pytest.Pytester, args: tuple[str, ...],
                                                                message: str) -> None:
    result = _run(pytester, "baseline:yes", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_a_panel_without_the_benchmark_is_named(pytester: pytest.Pytester) -> None:
    other = pytester.path / "other.json"
    assert pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=vrp_shapes", "-k",
                              "vrp_000", "--mllm-vrp=none", f"--mllm-json={other}").ret == pytest.ExitCode.OK
    result = _run(pytester, "baseline:yes", "--mllm-estimate=20%", f"--mllm-estimate-panel={other}")
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*has no records of benchmark 'shapes' (it holds: vrp_shapes)*"])


def test_every_xdist_worker_draws_the_same_subset(pytester: pytest.Pytester) -> None:
    panel = _panel(pytester)
    alone, split = pytester.path / "alone.json", pytester.path / "split.json"
    subset = ("--mllm-estimate=40", f"--mllm-estimate-panel={panel}")
    assert _run(pytester, "baseline:random:5", *subset, json_path=alone).ret == pytest.ExitCode.OK
    result = pytester.runpytest_subprocess(*BASE, "-n", "2", "--mllm=baseline:random:5", *subset, f"--mllm-json={split}")
    assert result.ret == pytest.ExitCode.OK
    ids = [sorted(r["id"] for r in _document(p)["records"]) for p in (alone, split)]
    assert ids[0] == ids[1] and len(ids[0]) in range(36, 45)
    assert _document(split)["benchmarks"]["shapes"]["scopes"]["estimate"]["values"]["accuracy"]["ci"]
