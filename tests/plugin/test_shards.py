"""`--mllm-shard=I/N` and `pytest-mllm-merge`: a run split over machines merges into the results of one run."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from pytest_mllm.report.merge import main as merge_main

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

RUN = ("-p", "no:cacheprovider", "--mllm=baseline:random:3", "--mllm-bench=shapes")


def run(pytester: pytest.Pytester, name: str, *args: str) -> tuple[pytest.RunResult, dict]:
    """One run in its own process, as each machine of a split run is."""
    out = pytester.path / f"{name}.json"
    result = pytester.runpytest_subprocess(*RUN, f"--mllm-json={out}", *args)
    return result, json.loads(out.read_text())


def dumps(value: object) -> str:
    return json.dumps(value, sort_keys=True)


@pytest.fixture
def shards(pytester: pytest.Pytester) -> tuple[dict, list[Path]]:
    """The whole run's results, and the results files of its 4 shards."""
    result, single = run(pytester, "single")
    assert result.ret == 0
    paths = []
    for index in range(1, 5):
        result, _ = run(pytester, f"shard{index}", f"--mllm-shard={index}/4")
        assert result.ret == 0, result.stdout.str()
        paths.append(pytester.path / f"shard{index}.json")
    return single, paths


def test_four_shards_merge_into_the_single_run(shards: tuple[dict, list[Path]], tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    single, paths = shards
    parts = [json.loads(p.read_text()) for p in paths]
    sizes = [len(p["records"]) for p in parts]
    assert sum(sizes) == 360 and all(50 <= n <= 130 for n in sizes), sizes  # every sample once, roughly even
    assert all(p["settings"]["shard"]["expected_records"] == {"shapes": 360} for p in parts)
    shard_of_group = defaultdict(set)  # MME-style pairs stay in one shard
    for index, part in enumerate(parts):
        for record in part["records"]:
            if record["pair_group"]:
                shard_of_group[record["pair_group"]].add(index)
    assert shard_of_group and all(len(found) == 1 for found in shard_of_group.values())

    out = tmp_path / "merged.json"
    code = merge_main([str(out), *map(str, reversed(paths)), "--gate", "shapes.accuracy>=0.99",
                       "--gate", "shapes.accuracy>=0.1", "--html", str(tmp_path / "merged.html")])
    merged = json.loads(out.read_text())
    assert dumps(merged["benchmarks"]) == dumps(single["benchmarks"])  # metrics, scopes, intervals: byte-identical
    assert dumps(merged["benchmarks"]["shapes"]["metrics"]) == dumps(single["benchmarks"]["shapes"]["metrics"])
    strip = lambda records: [{k: v for k, v in r.items() if k not in ("duration_s", "latency_s")} for r in records]  # noqa: E731
    assert strip(merged["records"]) == strip(single["records"])  # the same records, in collection order
    per_run = ("gates", "model_loads")  # the loads are each machine's own: one per shard once merged
    assert {k: v for k, v in merged["settings"].items() if k not in per_run} == \
        {k: v for k, v in single["settings"].items() if k not in per_run}
    assert len(merged["settings"]["model_loads"]) == 4
    assert code == 1  # a gate decided on the merge
    assert [(g["gate"], g["verdict"]) for g in merged["gates"]] == [("shapes.accuracy>=0.99", "fail"),
                                                                    ("shapes.accuracy>=0.1", "pass")]
    assert (tmp_path / "merged.html").stat().st_size > 1000
    assert "gate shapes.accuracy>=0.99: fail" in capsys.readouterr().out

    baseline = [str(out), *map(str, paths), "--baseline", str(paths[0].parent / "single.json"),
                "--max-drop", "shapes.accuracy=0"]
    assert merge_main(baseline) == 0  # the merge equals its baseline: no drop

    cut = json.loads(paths[2].read_text())  # a shard whose run was cut short after its last sample
    cut["incomplete"] = [{"kind": "interrupted", "reason": "interrupted: SIGTERM after 90 of 90 tests"}]
    paths[2].write_text(json.dumps(cut))
    assert merge_main([str(out), *map(str, paths), "--gate", "shapes.accuracy>=0.1"]) == 1
    merged = json.loads(out.read_text())
    assert merged["incomplete"] == cut["incomplete"]
    assert merged["gates"][0]["note"] == "not passed: the run was interrupted: SIGTERM after 90 of 90 tests"
    assert "incomplete run: interrupted: SIGTERM after 90 of 90 tests" in capsys.readouterr().out


def test_merge_refuses_missing_duplicated_and_foreign_shards(shards: tuple[dict, list[Path]], tmp_path: Path,
                                                             pytester: pytest.Pytester,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    _, paths = shards
    out = str(tmp_path / "merged.json")

    def error(*files: Path) -> str:
        assert merge_main([out, *map(str, files)]) == 2
        return capsys.readouterr().err

    assert "shard 3/4 missing" in error(paths[0], paths[1], paths[3])
    assert "given twice" in error(*paths, paths[2]) and str(paths[2]) in error(*paths, paths[2])
    single = pytester.path / "single.json"
    assert "written without --mllm-shard" in error(*paths, single) and str(single) in error(*paths, single)

    half = json.loads(paths[1].read_text())  # an interrupted shard: records missing
    half["records"] = half["records"][:10]
    cut = tmp_path / "cut.json"
    cut.write_text(json.dumps(half))
    assert "sample(s) missing" in error(paths[0], cut, paths[2], paths[3])

    twice = json.loads(paths[1].read_text())  # a sample in two files
    twice["records"].append(json.loads(paths[0].read_text())["records"][0])
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps(twice))
    message = error(paths[0], dup, paths[2], paths[3])
    assert "is also in" in message and str(dup) in message

    other = json.loads(paths[3].read_text())  # another model's shard
    other["settings"]["model"] = "baseline:random:4"
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(other))
    message = error(*paths[:3], foreign)
    assert "not the same run" in message and "baseline:random:4" in message and str(foreign) in message
    assert not Path(out).exists()

    moved = json.loads(paths[3].read_text())  # a shard run on a machine with the specs in another folder
    moved["settings"]["benchmarks"] = ["/elsewhere/benchmarks/shapes.yaml"]
    moved["benchmarks"]["shapes"]["spec"] = "/elsewhere/benchmarks/shapes.yaml"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps(moved))
    assert merge_main([out, *map(str, paths[:3]), str(elsewhere)]) == 0


def test_a_shard_selects_with_k_and_xdist(pytester: pytest.Pytester) -> None:
    _, whole = run(pytester, "whole", "--mllm-shard=2/4")
    result, some = run(pytester, "some", "--mllm-shard=2/4", "-k", "color")
    assert [r["id"] for r in some["records"]] == [r["id"] for r in whole["records"] if r["task"] == "color"]
    assert some["settings"]["shard"]["expected_records"] == {"shapes": 80}
    out = pytester.path / "xdist.json"
    spread = pytester.runpytest_subprocess(*RUN, "-n", "2", "--mllm-shard=2/4", f"--mllm-json={out}")
    assert spread.ret == 0, spread.stdout.str()
    xdist = json.loads(out.read_text())
    assert dumps(xdist["benchmarks"]) == dumps(whole["benchmarks"])
    assert xdist["settings"]["shard"] == whole["settings"]["shard"]  # the controller learned the counts


@pytest.mark.parametrize("value", ["0/4", "5/4", "2", "a/b", "1/0"])
def test_a_bad_shard_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    result = pytester.runpytest(*RUN, f"--mllm-shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--mllm-shard={value}:*"])
