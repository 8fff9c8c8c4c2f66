"""MathVista, MM-Vet and LLaVA-Bench graded by a judge: every number VLMEvalKit reports, from its own judged
files replayed (`--mllm-judge=replay:FILE`) and from a served judge answering with the same replies; a judge
failure is that sample's error and the rest is scored; the results say who graded.

The expected numbers are VLMEvalKit's, run outside the project on fixtures/official/judged/ (repository
open-compass/VLMEvalKit, commit e8e78f05f3080fe28154f2130321f17951c3be94; fixtures/official/run_reference_judged.py,
command in fixtures/official/README.md, "The judge-graded benchmarks"): `report` holds its score tables on every
row (its judge failures scored as it scores them: `--mllm-judge-mode=compat` here), `without_failures` the same
tables without the rows whose judge never gave a usable reply (what the default, where those rows are errors,
reports). The served judge is `chat_stub.ChatStub`, a fake on purpose: it answers each question with the reply
recorded for its row, and can fail on demand.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openpyxl")
pytest.importorskip("openai")

from chat_stub import ChatStub  # noqa: E402
from local_serve import free_port  # noqa: E402

OFFICIAL = Path(__file__).resolve().parents[2] / "fixtures" / "official"
JUDGED = OFFICIAL / "judged"
REFERENCE = json.loads((OFFICIAL / "reference_scores_judged.json").read_text(encoding="utf-8"))
BENCHMARKS = {  # spec → (folder, VLMEvalKit's judged file)
    "mathvista": ("MathVista_MINI", "Model_MathVista_MINI_gpt-4o-mini.xlsx"),
    "mmvet": ("MMVet", "Model_MMVet_gpt-4-turbo.xlsx"),
    "llavabench": ("LLaVABench", "Model_LLaVABench_openai_result.xlsx"),
}
FAILED_ROWS = {"mathvista": "16", "mmvet": "10", "llavabench": "5"}  # the rows whose judge never gave a usable reply


def _run(pytester: pytest.Pytester, spec: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    folder, judged = BENCHMARKS[spec]
    out = pytester.path / f"{spec}.json"
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm=replay:{JUDGED / folder / judged}",
                                f"--mllm-bench={spec}", f"--mllm-data={spec}={JUDGED / folder}", f"--mllm-json={out}",
                                f"--mllm-cache-dir={pytester.path / 'cache'}", *args)
    assert out.is_file(), result.stdout.str()
    return result, json.loads(out.read_text(encoding="utf-8"))


def _rows(table: dict[str, list[Any]], key: str) -> dict[str, dict[str, Any]]:
    """A VLMEvalKit score table ({column: values}) by its row names."""
    return {name: {column: values[n] for column, values in table.items()} for n, name in enumerate(table[key])}


def assert_vlmevalkits_numbers(spec: str, bench: dict[str, Any], compat: bool) -> None:
    """Every number of VLMEvalKit's report for this benchmark equals ours (×100 there)."""
    scopes = bench["scopes"]
    breakdowns = scopes["graded"]["breakdowns"]
    reference = REFERENCE[{"mathvista": "MathVista_MINI", "mmvet": "MMVet", "llavabench": "LLaVABench"}[spec]]
    if spec == "mathvista":
        table = reference["report"] if compat else reference["without_failures"]
        for name, row in _rows(table, "Task&Skill").items():
            scope = scopes["overall"] if name == "Overall" else scopes["tasks"].get(name) or breakdowns["skill"][name]
            assert scope["count"] == row["tot"], name
            assert (scope["prefetch"], round(scope["accuracy"] * scope["count"])) == (row["prefetch"], row["hit"]), name
            assert 100 * scope["accuracy"] == pytest.approx(row["acc"], abs=1e-9), name
            assert 100 * scope["prefetch_rate"] == pytest.approx(row["prefetch_rate"], abs=1e-9), name
        assert set(breakdowns["skill"]) | set(scopes["tasks"]) | {"Overall"} == set(table["Task&Skill"])
    elif spec == "mmvet":
        tables = reference if compat else reference["without_failures"]
        for kind, table in (("capability", tables["report"]), ("combination", tables["report_fine"])):
            for name, row in _rows(table, "Category").items():
                scope = scopes["overall"] if name == "Overall" else breakdowns[kind][name]
                assert scope["count"] == row["tot"], (kind, name)
                assert 100 * scope["mean_score"] == pytest.approx(row["acc"], abs=1e-9), (kind, name)
            assert set(breakdowns[kind]) | {"Overall"} == set(table["Category"])
    else:
        tables = reference if compat else reference["without_failures"]
        rounded = _rows(tables["report"], "split")
        for name, row in _rows(tables["report_unrounded"], "split").items():
            scope = scopes["overall"] if name == "overall" else scopes["tasks"][name]
            for ours, theirs in (("relative_score", "Relative Score (main)"), ("model_score", "VLM Score"),
                                 ("reference_score", "GPT4 Score")):
                assert 100 * scope[ours] == pytest.approx(row[theirs], abs=1e-9), (name, ours)
                assert round(100 * scope[ours], 1) == rounded[name][theirs], (name, ours)
        assert set(scopes["tasks"]) | {"overall"} == set(tables["report"]["split"])


# --- VLMEvalKit's judged files, replayed --------------------------------------------------------------------------

@pytest.mark.parametrize("spec", sorted(BENCHMARKS))
@pytest.mark.parametrize("compat", [False, True], ids=["strict", "compat"])
def test_a_replayed_judged_file_gives_vlmevalkits_numbers(pytester: pytest.Pytester, spec: str, compat: bool) -> None:
    folder, judged = BENCHMARKS[spec]
    result, data = _run(pytester, spec, f"--mllm-judge=replay:{JUDGED / folder / judged}",
                        *(["--mllm-judge-mode=compat"] if compat else []))
    bench = data["benchmarks"][spec]
    assert_vlmevalkits_numbers(spec, bench, compat)
    failed = next(r for r in data["records"] if r["id"].endswith(f"::{FAILED_ROWS[spec]}"))
    if compat:  # scored as VLMEvalKit scores a judge failure, and said so
        assert failed["status"] != "error" and failed["graded"]["source"] == "fallback"
        assert "--mllm-judge-mode=compat" in failed["graded"]["error"]
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    else:  # a judge failure is the sample's error, never a score
        assert failed["status"] == "error" and failed["score"] is None and failed["correct"] is None
        assert failed["error"] == ("judge error: the recorded judge gave no usable reply (VLMEvalKit's file says its "
                                   "judge failed)")
        assert bench["metrics"]["errors"] == 1 and result.parseoutcomes()["errors"] == 1
    identity = {"kind": "replay", "file": judged, "model": {"mathvista": "gpt-4o-mini", "mmvet": "gpt-4-turbo"}.get(spec),
                "prompt": "VLMEvalKit's (the judged file's replies answered it)"}
    assert [{k: j[k] for k in identity} for j in bench["scopes"]["graded"]["judges"]] == [identity]
    assert all(r["graded"]["judge"] == bench["scopes"]["graded"]["judges"][0] for r in data["records"])
    assert re.fullmatch("[0-9a-f]{16}", bench["scopes"]["graded"]["judges"][0]["sha256"])
    result.stdout.fnmatch_lines([f"{spec} · judge-graded ({spec}):*", f"  graded by the replies recorded in {judged}*"])


def test_mathvistas_rules_decide_without_the_judge_as_vlmevalkits_prefetch(pytester: pytest.Pytester) -> None:
    folder, judged = BENCHMARKS["mathvista"]
    _, data = _run(pytester, "mathvista", f"--mllm-judge=replay:{JUDGED / folder / judged}", "--mllm-judge-mode=compat")
    rows = REFERENCE["MathVista_MINI"]["rows"]
    for record in data["records"]:
        index = record["id"].split("::")[-1]
        theirs = rows[index]
        assert (record["graded"]["source"] == "rules") == (theirs["log"] == "Prefetch succeed"), index
        assert record["correct"] == theirs["hit"], index
        if record["graded"]["source"] == "rules":  # the rules' own answer, as VLMEvalKit's res holds it
            assert record["graded"]["values"]["extracted"] == theirs["res"], index


def test_a_judge_graded_benchmark_without_a_judge_is_a_usage_error(pytester: pytest.Pytester) -> None:
    folder, _ = BENCHMARKS["mmvet"]
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm=replay:{JUDGED / folder / 'Model_MMVet.xlsx'}",
                                "--mllm-bench=MMVet", f"--mllm-data=mmvet={JUDGED / folder}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mllm-bench: mmvet is graded by a judge LLM" in result.stderr.str()
    assert "--mllm-judge=openai:MODEL" in result.stderr.str()


def test_a_file_that_is_no_judged_file_is_refused_before_the_run(pytester: pytest.Pytester) -> None:
    folder, _ = BENCHMARKS["mmvet"]
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm=replay:{JUDGED / folder / 'Model_MMVet.xlsx'}",
                                "--mllm-bench=mmvet", f"--mllm-data=mmvet={JUDGED / folder}",
                                f"--mllm-judge=replay:{JUDGED / folder / 'Model_MMVet.xlsx'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "not a judged file of VLMEvalKit's: it needs an 'index' column and the judge's replies" in result.stderr.str()


# --- a served judge -------------------------------------------------------------------------------------------------

def _recorded() -> dict[str, dict[str, list[str]]]:
    found = {}
    for spec, (folder, _) in BENCHMARKS.items():
        lines = (JUDGED / folder / "judge_replies.jsonl").read_text(encoding="utf-8").splitlines()
        found[spec] = {json.loads(line)["id"]: json.loads(line)["replies"] for line in lines}
    return found


def _tsv_rows(spec: str) -> dict[str, tuple[str, str]]:
    """index → (question, response) of each row of the benchmark's fixture."""
    import csv

    folder, _ = BENCHMARKS[spec]
    with (JUDGED / folder / f"{folder}.tsv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    lines = (JUDGED / folder / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    responses = {json.loads(line)["id"]: json.loads(line)["response"] for line in lines}
    return {row["index"]: (row["question"], responses[row["index"]]) for row in rows}


class RecordedJudge:
    """The stub's replies: each question answered with its row's recorded reply for that attempt (VLMEvalKit's
    attempts go up 0.5 in temperature); a recorded "Failed to obtain answer via API." is an HTTP 500."""

    def __init__(self) -> None:
        self.recorded = _recorded()
        self.rows = {spec: _tsv_rows(spec) for spec in BENCHMARKS}
        self.asked: dict[tuple[str, str], list[float]] = {}

    def row(self, body: dict[str, Any]) -> tuple[str, str]:
        text = body["messages"][-1]["content"]
        spec = "llavabench" if "[Assistant 1]" in text else "mmvet" if "| Correctness" in text else "mathvista"
        matches = [index for index, (question, response) in self.rows[spec].items()
                   if question in text and (spec == "llavabench" or response in text)]
        longest = max(matches, key=lambda i: len(self.rows[spec][i][1]))  # "" is in every text: the longest wins
        return spec, longest

    def __call__(self, body: dict[str, Any]) -> str | None:
        spec, index = self.row(body)
        temperatures = self.asked.setdefault((spec, index), [])
        temperatures.append(body["temperature"])
        replies = self.recorded[spec][index]
        attempt = 0 if spec == "llavabench" else round(body["temperature"] / 0.5)
        reply = replies[attempt]
        return None if reply == "Failed to obtain answer via API." else reply


def _served_run(pytester: pytest.Pytester, stub: ChatStub, name: str, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / f"{name}.json"
    benches = [arg for spec, (folder, _) in BENCHMARKS.items()
               for arg in (f"--mllm-bench={spec}", f"--mllm-data={spec}={JUDGED / folder}")]
    recorded = pytester.path / "answers.jsonl"
    recorded.write_text("".join(json.dumps({"id": f"{spec}::{r['id']}", "response": r["response"]}) + "\n"
                                for spec in BENCHMARKS for r in _answers(spec)), encoding="utf-8")
    # in a subprocess: an in-process run forgets the HTTP client's lazily imported modules, and the next one's
    # timeouts then escape the client's exception mapping
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm=replay:{recorded}", *benches,
                                "--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={stub.base_url}",
                                "--mllm-max-retries=0", f"--mllm-json={out}", f"--mllm-cache-dir={pytester.path / 'cache'}",
                                *args, timeout=300)
    assert out.is_file(), result.stdout.str() + result.stderr.str()
    return result, json.loads(out.read_text(encoding="utf-8"))


def _answers(spec: str) -> list[dict[str, str]]:
    """The model's recorded answers as our replay file holds them (sample id → response)."""
    from pytest_mllm.engine.spec import find_spec, load_spec
    from pytest_mllm.loaders import load_samples

    folder, _ = BENCHMARKS[spec]
    loaded = load_spec(find_spec(spec))
    responses = {i: r for i, (_, r) in _tsv_rows(spec).items()}
    return [{"id": s.id, "response": responses[s.metadata["source_id"]]} for s in load_samples(loaded, JUDGED / folder)]


@pytest.mark.parametrize("compat", [False, True], ids=["strict", "compat"])
def test_a_served_judge_with_the_same_replies_gives_vlmevalkits_numbers(pytester: pytest.Pytester, compat: bool) -> None:
    judge = RecordedJudge()
    mode = ["--mllm-judge-mode=compat"] if compat else []
    with ChatStub(judge) as stub:
        stub.models = [{"id": "judge-model", "object": "model", "owned_by": "tests"}]
        result, data = _served_run(pytester, stub, "first", "--mllm-judge-revision=2026-01", *mode)
        calls = stub.calls
        asked = {key: list(temperatures) for key, temperatures in judge.asked.items()}
        if not compat:
            # The same run again: every reply from the cache (keyed by the judge's identity); only the failed call
            # (MathVista's row 16, an HTTP 500) is asked again: failures are never cached.
            _, repeated = _served_run(pytester, stub, "second", "--mllm-judge-revision=2026-01", *mode)
            assert stub.calls - calls == 1
            # Another revision is another judge: nothing of the first is reused.
            _served_run(pytester, stub, "third", "--mllm-judge-revision=2026-02", *mode)
            assert stub.calls - calls == 1 + calls
            for spec in BENCHMARKS:
                assert repeated["benchmarks"][spec]["metrics"] == data["benchmarks"][spec]["metrics"]
            cached = [a["cached"] for r in repeated["records"] for a in (r.get("graded") or {}).get("attempts", [])]
            assert cached.count(False) == 1 and len(cached) > 20
    for spec in BENCHMARKS:
        assert_vlmevalkits_numbers(spec, data["benchmarks"][spec], compat)
    assert calls == sum(len(t) for t in asked.values())
    # Asked as VLMEvalKit asks: the same rows at the same temperatures (a failed call ends the item here).
    for name, spec in (("MathVista_MINI", "mathvista"), ("MMVet", "mmvet"), ("LLaVABench", "llavabench")):
        theirs = {index: temps for index, temps in REFERENCE[name]["calls"].items()
                  if not (spec == "mathvista" and index == FAILED_ROWS[spec])}
        ours = {index: temps for (s, index), temps in asked.items()
                if s == spec and not (spec == "mathvista" and index == FAILED_ROWS[spec])}
        assert ours == theirs, spec
    assert asked[("mathvista", FAILED_ROWS["mathvista"])] == [0.0]
    # Who graded: the model, its URL, the revision stated, a digest of what its server says of it, the prompt.
    for bench in data["benchmarks"].values():
        [identity] = bench["scopes"]["graded"]["judges"]
        assert {k: identity[k] for k in ("kind", "model", "url", "revision")} == {
            "kind": "served", "model": "openai:judge-model", "url": stub.base_url, "revision": "2026-01"}
        assert re.fullmatch("[0-9a-f]{16}", identity["server"]) and identity["prompt"].startswith("sha256:")
    assert data["settings"]["judge"] == "openai:judge-model" and data["settings"]["judge_url"] == stub.base_url
    result.stdout.fnmatch_lines(["mmvet · judge-graded (mmvet):*", f"  graded by openai:judge-model at {stub.base_url}, "
                                 "revision 2026-01, server *, prompt *"])


@pytest.fixture
def released() -> Any:
    """Set at teardown: a slow stub's handlers return then."""
    import threading

    event = threading.Event()
    yield event
    event.set()


def test_judge_failures_are_those_samples_errors_and_the_rest_is_scored(pytester: pytest.Pytester,
                                                                          released: Any) -> None:
    """The judge returns garbage (a body that is no completion), an unreadable grade, is slow, or fails with
    HTTP 500 for one row each; every other row is graded as before."""
    judge = RecordedJudge()
    faults = {("mmvet", "2"): "garbage", ("mmvet", "3"): "unreadable", ("llavabench", "1"): "slow",
              ("mathvista", "5"): "error"}

    def reply(body: dict[str, Any]) -> Any:
        spec, index = judge.row(body)
        fault = faults.get((spec, index))
        if fault == "garbage":
            return {"id": "x", "object": "chat.completion", "note": "no choices here"}
        if fault == "unreadable":
            return "This prediction looks fine to me."
        if fault == "slow":
            released.wait(5)
        if fault == "error":
            return None
        return judge(body)

    with ChatStub(reply) as stub:
        result, data = _served_run(pytester, stub, "faults", "--mllm-timeout=1")
    errors = {(r["benchmark"], r["id"].split("::")[-1]): r["error"] for r in data["records"] if r["status"] == "error"}
    expected = {(spec, index) for spec, index in faults} | {(spec, index) for spec, index in FAILED_ROWS.items()}
    assert set(errors) == expected, errors
    assert "MalformedResponse" in errors[("mmvet", "2")]
    assert errors[("mmvet", "3")] == ("judge error: no readable grade in 5 replies (the last: "
                                     "'This prediction looks fine to me.')")
    assert "EndpointUnreachable" in errors[("llavabench", "1")] and "within 1 s" in errors[("llavabench", "1")]
    assert "EndpointError" in errors[("mathvista", "5")] and "HTTP 500" in errors[("mathvista", "5")]
    for record in data["records"]:
        if (record["benchmark"], record["id"].split("::")[-1]) in expected:
            assert record["score"] is None and record["correct"] is None
        else:
            assert record["status"] in ("correct", "incorrect"), record
    assert result.parseoutcomes()["errors"] == len(expected)
    scored = data["benchmarks"]["mmvet"]["scopes"]["overall"]
    assert (scored["count"], scored["errors"]) == (9, 3)
    mine = [r["score"] for r in data["records"] if r["benchmark"] == "mmvet" and r["status"] != "error"]
    assert scored["mean_score"] == pytest.approx(sum(mine) / len(mine))


def test_an_unreachable_judge_errors_every_judged_sample_and_the_run_completes(pytester: pytest.Pytester) -> None:
    class Closed:
        base_url = f"http://127.0.0.1:{free_port()}/v1"

    start = time.monotonic()
    result, data = _served_run(pytester, Closed(), "closed")  # type: ignore[arg-type]
    assert time.monotonic() - start < 120
    for record in data["records"]:
        graded = record["graded"]
        if graded["source"] == "rules":  # MathVista's rules need no judge
            assert record["status"] in ("correct", "incorrect")
        else:
            assert record["status"] == "error" and "EndpointUnreachable" in record["error"], record
            assert len(graded["attempts"]) == 1  # a failed call is not retried at another temperature
    assert data["benchmarks"]["mathvista"]["scopes"]["overall"]["count"] == 6  # the rules' answers are scored


def test_a_users_grading_prompts_are_asked_and_recorded(pytester: pytest.Pytester) -> None:
    from pytest_mllm.judge.graders import load_grading_prompts

    prompts = pytester.path / "grading.yaml"
    prompts.write_text("llavabench:\n  system: Rate two answers.\n  user: |\n    Caption: {caption}\n    Q: {question}\n"
                       "    First: {reference}\n    Second: {prediction}\n    Two scores, then why. [Assistant 1]\n")
    seen: list[dict[str, Any]] = []
    judge = RecordedJudge()

    def reply(body: dict[str, Any]) -> str | None:
        seen.append(body)
        return judge(body)

    with ChatStub(reply) as stub:
        _, data = _served_run(pytester, stub, "worded", f"--mllm-judge-grading-prompts={prompts}")
    worded = [b for b in seen if b["messages"][0]["content"] == "Rate two answers."]
    assert len(worded) == 6 and any(b["messages"][1]["content"].startswith(
        "Caption: A man rides a bicycle along a beach at sunset.\nQ: What is the man doing?\n") for b in worded)
    digest = load_grading_prompts(prompts)["llavabench"].digest
    assert data["benchmarks"]["llavabench"]["scopes"]["graded"]["judges"][0]["prompt"] == digest
    assert data["benchmarks"]["mmvet"]["scopes"]["graded"]["judges"][0]["prompt"] != digest  # the others keep the built-in prompts
    assert data["settings"]["judge_grading_prompts"] == {"llavabench": digest}


def test_a_bad_grading_prompts_file_is_a_usage_error_before_the_run(pytester: pytest.Pytester) -> None:
    prompts = pytester.path / "grading.yaml"
    prompts.write_text("mmvet:\n  user: 'Grade {prediction}'\n")
    folder, judged = BENCHMARKS["mmvet"]
    result = pytester.runpytest("-p", "no:cacheprovider", f"--mllm=replay:{JUDGED / folder / judged}", "--mllm-bench=mmvet",
                                f"--mllm-data=mmvet={JUDGED / folder}", "--mllm-judge=openai:j",
                                f"--mllm-judge-grading-prompts={prompts}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mllm-judge-grading-prompts: " in result.stderr.str() and "mmvet.user: lacks {question}, {answer}" \
        in result.stderr.str()


def test_the_section_shows_its_part_in_every_output_and_gates_name_its_breakdowns(pytester: pytest.Pytester) -> None:
    """The judge-graded section's part reaches the HTML report, the JUnit properties and the Markdown summary, and a
    gate may name a breakdown's value (checked before the run, decided after)."""
    folder, judged = BENCHMARKS["mmvet"]
    html, junit, markdown = (pytester.path / name for name in ("report.html", "junit.xml", "summary.md"))
    result, data = _run(pytester, "mmvet", f"--mllm-judge=replay:{JUDGED / folder / judged}", "--mllm-judge-mode=compat",
                        f"--mllm-html={html}", f"--junitxml={junit}", f"--mllm-markdown={markdown}",
                        "--mllm-gate=mmvet.graded.capability.rec.mean_score>=0.99",
                        "--mllm-gate=mmvet.graded.judge_error_rate<=0")
    rec = data["benchmarks"]["mmvet"]["scopes"]["graded"]["breakdowns"]["capability"]["rec"]["mean_score"]
    gates = {g["gate"]: g["verdict"] for g in data["gates"]}
    assert gates == {"mmvet.graded.capability.rec.mean_score>=0.99": "fail", "mmvet.graded.judge_error_rate<=0": "pass"}
    assert result.ret == pytest.ExitCode.TESTS_FAILED and rec < 0.99
    page = html.read_text(encoding="utf-8")
    assert "Judge-graded benchmarks" in page and f"graded by the replies recorded in {judged}" in page
    assert "rec_know" in page  # a combination's row
    properties = junit.read_text(encoding="utf-8")
    assert f'name="mmvet.graded.capability.rec.mean_score" value="{rec}"' in properties
    assert f"- mmvet, judge-graded by the replies recorded in {judged}" in markdown.read_text(encoding="utf-8")
