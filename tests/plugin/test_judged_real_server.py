"""MathVista and LLaVA-Bench graded by a real local judge: SmolLM2-135M-Instruct served by `transformers serve`.

test_judged_benchmarks.py checks the numbers with a stub answering the recorded replies; this checks the run end
to end against a real (and weak) served model: one call per answer the rules cannot decide, each reply kept and
read as the grader reads it, the judge's identity in the results, judge failures as errors, and a second run
answered wholly from the cache. It asserts nothing about the judge's grades. The server is the `smollm2_server`
fixture of conftest.py.
"""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("gguf", reason="needs gguf to read the GGUF weights: pip install 'pytest-mllm[test]'")

from local_serve import Server  # noqa: E402

from pytest_mllm.judge.graders import GRADERS, GradeItem  # noqa: E402
import pytest_mllm.judge.mathvista as mathvista  # noqa: E402

JUDGED = Path(__file__).resolve().parents[2] / "fixtures" / "official" / "judged"
# Rows whose answer only the judge can read (two each): on two busy cores a reply takes seconds.
ROWS = {"mathvista": ("MathVista_MINI", ("2", "5")), "llavabench": ("LLaVABench", ("0", "3"))}
RUN_TIMEOUT_S = 480
MAX_TOKENS = 96  # caps LLaVA-Bench's 2048-token replies: SmolLM2 would ramble for minutes on two busy cores


def _data(root: Path) -> list[str]:
    """The chosen rows of each fixture TSV in a folder of its own, and the recorded answers; the run's arguments."""
    args, answers = [], []
    for spec, (folder, indexes) in ROWS.items():
        with (JUDGED / folder / f"{folder}.tsv").open(encoding="utf-8", newline="") as handle:
            reader = csv.DictReader(handle, delimiter="\t")
            rows = [row for row in reader if row["index"] in indexes]
            header = reader.fieldnames
        target = root / folder
        target.mkdir(parents=True)
        with (target / f"{folder}.tsv").open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, header, delimiter="\t", lineterminator="\n")  # type: ignore[arg-type]
            writer.writeheader()
            writer.writerows(rows)
        lines = (JUDGED / folder / "responses.jsonl").read_text(encoding="utf-8").splitlines()
        responses = {json.loads(line)["id"]: json.loads(line)["response"] for line in lines}
        for row in rows:
            task = row.get("task") or row.get("category")
            answers.append({"id": f"{spec}::{task}::{row['index']}", "response": responses[row["index"]]})
        args += [f"--mllm-bench={spec}", f"--mllm-data={spec}={target}"]
    recorded = root / "answers.jsonl"
    recorded.write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")
    return [f"--mllm=replay:{recorded}", *args]


def _run(pytester: pytest.Pytester, server: Server, args: list[str], out: Path) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", *args, f"--mllm-judge=openai:{server.model}", f"--mllm-judge-base-url={server.base_url}",
        "--mllm-judge-revision=smollm2-135m-instruct-gguf", f"--mllm-json={out}", f"--mllm-cache-dir={pytester.path / 'cache'}",
        "--mllm-concurrency=2", "--mllm-timeout=300", "--mllm-max-retries=0", f"--mllm-judge-max-tokens={MAX_TOKENS}",
        timeout=RUN_TIMEOUT_S)
    assert out.exists(), result.stdout.str() + result.stderr.str()
    return result, json.loads(out.read_text(encoding="utf-8"))


def test_a_real_served_judge_grades_mathvista_and_llavabench(smollm2_server: Server, pytester: pytest.Pytester) -> None:
    server = smollm2_server
    args = _data(pytester.path / "data")
    posted = server.log().count('"POST /v1/chat/completions')  # the server is shared with other tests
    start = time.monotonic()
    result, data = _run(pytester, server, args, pytester.path / "first.json")
    first_s = time.monotonic() - start
    output = result.stdout.str()
    calls = server.log().count('"POST /v1/chat/completions') - posted
    records = data["records"]
    assert len(records) == 4, output
    attempts = 0
    for record in records:
        graded = record["graded"]
        assert graded["source"] == "judge" and graded["grader"] == record["benchmark"]
        attempts += len(graded["attempts"])
        if record["status"] == "error":  # a failure names itself and carries no score
            assert record["error"].startswith("judge error: ") and record["correct"] is None, record
            continue
        reply = graded["attempts"][-1]["reply"]
        assert isinstance(reply, str) and reply, record
        grader = GRADERS.get(record["benchmark"])()
        if record["benchmark"] == "mathvista":  # the verdict is VLMEvalKit's comparison of the judge's extraction
            assert record["correct"] is mathvista.is_hit(reply, mathvista.question(
                _columns(record), record["answer"]))
        else:  # the two ratings are the first line's, as VLMEvalKit reads them
            grade = grader.read(reply, GradeItem("", {}))
            assert grade is not None and dict(grade.values) == graded["values"]
    failed = sum(1 for r in records for a in r["graded"]["attempts"] if a["error"])
    assert attempts - failed <= calls <= attempts, (calls, attempts)  # one call per attempt, none hidden
    for name in ROWS:
        [identity] = data["benchmarks"][name]["scopes"]["graded"]["judges"]
        assert {k: identity[k] for k in ("kind", "model", "url", "revision")} == {
            "kind": "served", "model": f"openai:{server.model}", "url": server.base_url,
            "revision": "smollm2-135m-instruct-gguf"}
        assert identity["server"] and identity["prompt"].startswith("sha256:")
    result.stdout.fnmatch_lines([f"  graded by openai:{server.model} at {server.base_url}, revision "
                                 "smollm2-135m-instruct-gguf, server *, prompt *"])
    errors = [r for r in records if r["status"] == "error"]
    assert result.parseoutcomes().get("errors", 0) == len(errors), output

    # Again: every reply from the cache, keyed by the judge's identity; nothing is asked.
    before = server.log().count('"POST /v1/chat/completions')
    start = time.monotonic()
    _, again = _run(pytester, server, args, pytester.path / "second.json")
    second_s = time.monotonic() - start
    assert server.log().count('"POST /v1/chat/completions') - before <= failed  # failed calls are never cached
    for name in ROWS:
        assert again["benchmarks"][name]["metrics"] == data["benchmarks"][name]["metrics"]
    print(f"timings: first run {first_s:.1f}s ({calls} judge calls), second run {second_s:.1f}s")
    for record in records:
        print(f"{record['benchmark']} {record['id']}: {record['status']} ← {record['graded']['attempts'][-1]['reply']!r}")


def _columns(record: dict) -> dict[str, str]:
    """The MathVista row's cells scoring reads, from the fixture TSV."""
    with (JUDGED / "MathVista_MINI" / "MathVista_MINI.tsv").open(encoding="utf-8", newline="") as handle:
        row = next(r for r in csv.DictReader(handle, delimiter="\t") if r["index"] == record["id"].split("::")[-1])
    return {k: row[k] for k in mathvista.COLUMNS}
