"""The CEE judge against a real small instruct model: SmolLM2-135M-Instruct served by `transformers serve`.

test_judge.py checks the numbers with a fault injector replaying hand-written replies; this
checks the protocol and what is recorded when the judge is a real (and weak) model: five calls
per open answer, every reply kept as its vote's analysis, outcomes that follow from the votes,
judge failures as errors, and a second run answered wholly from the cache. It asserts nothing
about the model's verdicts: SmolLM2-135M mostly ignores the requested verdict line.

The server is the `smollm2_server` fixture of conftest.py.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("gguf", reason="needs gguf to read the GGUF weights: pip install 'pytest-mllm[test]'")

from local_serve import Server, free_port  # noqa: E402

from pytest_mllm.engine.chat import ChatClient  # noqa: E402
from pytest_mllm.engine.spec import load_spec  # noqa: E402
from pytest_mllm.judge import PROMPTS, PROMPTS_BY_ID, JudgeItem, decide, render_messages  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402

VQA = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"
# Three of the eight samples: 15 judge calls. On two busy CPU cores a short reply takes ~3 s, and
# SmolLM2 loops on one prompt of colors::c3 up to the judge's 512-token cap (about a minute).
SAMPLES = ("colors::c2", "colors::c4", "shapes::s2")
RUN_TIMEOUT_S = 480
CALL_ERRORS = ("EndpointUnreachable: ", "EndpointError: ", "MalformedResponse: ")  # a vote's error when a call failed


def _run(pytester: pytest.Pytester, predictions: Path, server: Server, out: Path,
         base_url: str | None = None) -> tuple[pytest.RunResult, dict]:
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", str(VQA / "bench.yaml"), "-k", " or ".join(s.split("::")[1] for s in SAMPLES),
        f"--mllm=replay:{predictions}", f"--mllm-judge=openai:{server.model}", f"--mllm-judge-base-url={base_url or server.base_url}",
        f"--mllm-json={out}", f"--mllm-cache-dir={pytester.path / 'cache'}",
        "--mllm-concurrency=2", "--mllm-timeout=300", "--mllm-judge-max-tokens=128", "--mllm-max-retries=0",
        timeout=RUN_TIMEOUT_S)
    assert out.exists(), result.stdout.str() + result.stderr.str()
    return result, json.loads(out.read_text())


def _failed_call(vote: dict[str, Any]) -> bool:
    return vote["analysis"] == "" and vote["verdict"] is None and str(vote["error"]).startswith(CALL_ERRORS)


def _check_record(record: dict[str, Any]) -> None:
    """One open answer's judge record: five votes in prompt order, each the model's reply (or why
    there is none), and the outcome the decision rule gives for exactly those votes."""
    judge = record["judge"]
    votes = judge["votes"]
    assert [v["prompt_id"] for v in votes] == [p.id for p in PROMPTS] == ["p1", "p2", "p3", "p4", "p5"]
    assert [(v["rule"], v["key"]) for v in votes] == [(p.rule, p.key) for p in PROMPTS]
    for vote in votes:
        if _failed_call(vote):
            continue
        assert isinstance(vote["analysis"], str)
        if vote["verdict"] is None:  # a reply without a readable verdict says why
            assert isinstance(vote["error"], str) and vote["error"], vote
        else:
            assert vote["verdict"] in (0, 1) and vote["error"] is None, vote
    replies = [RuntimeError(v["error"]) if _failed_call(v) else v["analysis"] for v in votes]
    expected = decide(replies).as_record()
    for mine, theirs in zip(expected["votes"], votes):
        if not _failed_call(theirs):
            assert mine == theirs
    assert (judge["status"], judge["correct"], judge["split"]) == (expected["status"], expected["correct"],
                                                                   expected["split"])
    if judge["status"] == "judged":
        assert judge["error"] is None and isinstance(judge["correct"], bool)
        assert record["correct"] is judge["correct"]
        assert record["status"] == ("correct" if judge["correct"] else "incorrect")
    else:
        assert judge["status"] == "judge-error" and judge["correct"] is None and judge["error"]
        assert record["status"] == "error" and record["correct"] is None
        assert record["error"] == f"judge error: {judge['error']}"


def test_a_real_judge_is_asked_five_times_per_answer_and_cached(
    smollm2_server: Server, pytester: pytest.Pytester, predictions: Path
) -> None:
    server = smollm2_server
    posted_before = server.log().count('"POST /v1/chat/completions')  # the server is shared with other tests
    start = time.monotonic()
    result, data = _run(pytester, predictions, server, pytester.path / "first.json")
    first_run_s = time.monotonic() - start
    output = result.stdout.str() + result.stderr.str()
    records = data["records"]
    assert sorted(r["id"] for r in records) == sorted(SAMPLES), output
    assert data["settings"]["judge"] == f"openai:{server.model}"

    # Five calls per open answer, no retries: counted in the server's access log.
    calls = server.log().count('"POST /v1/chat/completions') - posted_before
    assert calls == len(PROMPTS) * len(SAMPLES), server.log()[-3000:]
    for record in records:
        assert record["answer_type"] == "open" and isinstance(record["word_match"], bool)
        _check_record(record)
    votes = [v for r in records for v in r["judge"]["votes"]]
    assert any(v["analysis"].strip() for v in votes), "the server answered no judge call with text"

    # A recorded analysis is the model's reply to that very conversation (greedy decoding).
    record = records[0]
    spec = load_spec(VQA / "bench.yaml")
    sample = next(s for s in load_samples(spec, spec.resolve_data_root(None)) if s.id == record["id"])
    item = JudgeItem(sample.question, list(sample.metadata["references"]), record["response"])
    vote = next(v for v in record["judge"]["votes"] if not _failed_call(v))
    client = ChatClient(server.base_url, timeout_s=300, max_retries=0)
    reply = client.chat(server.model, render_messages(PROMPTS_BY_ID[vote["prompt_id"]], item), temperature=0.0)
    assert reply.text == vote["analysis"]

    # Judge errors are test errors; judged answers are not.
    errors = [r for r in records if r["judge"]["status"] == "judge-error"]
    assert result.parseoutcomes().get("errors", 0) == len(errors), output
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if errors else pytest.ExitCode.OK), output
    for r in errors:
        result.stdout.fnmatch_lines([f"*ERROR at call of vqa_mini: {r['id']} *", f"judge error: {r['judge']['error']}"],
                                    consecutive=True)
    result.stdout.fnmatch_lines(["*open answers: CEE judge + word matching*", "*judge errors*"])
    judge = data["benchmarks"]["vqa_mini"]["scopes"]["judge"]
    assert judge["scoring"] == "cee" and judge["answered"] == len(SAMPLES)
    assert judge["judge_errors"] == len(errors)
    assert judge["judge_error_rate"] == pytest.approx(len(errors) / len(SAMPLES))
    assert judge["word_accuracy"] == pytest.approx(sum(r["word_match"] for r in records) / len(records))

    # Against a port nothing listens on (the server itself is shared with other tests), an identical
    # run can only be answered from the cache: judge replies are keyed by the judge model, not its URL.
    start = time.monotonic()
    second, again = _run(pytester, predictions, server, pytester.path / "second.json",
                         base_url=f"http://127.0.0.1:{free_port()}/v1")
    second_run_s = time.monotonic() - start
    assert second.ret == result.ret, second.stdout.str()
    by_id = {r["id"]: r for r in again["records"]}
    if not any(_failed_call(v) for v in votes):
        assert [by_id[r["id"]]["judge"] for r in records] == [r["judge"] for r in records]
    for r in records:  # failed calls are never cached: only they were asked again, of a dead server
        for old, new in zip(r["judge"]["votes"], by_id[r["id"]]["judge"]["votes"]):
            if _failed_call(old):
                assert new["error"].startswith("EndpointUnreachable: "), new
            else:
                assert new == old
    assert again["benchmarks"]["vqa_mini"]["scopes"]["judge"] == judge

    print(f"timings: convert {server.timings['convert_s']:.1f}s, server start {server.timings['server_start_s']:.1f}s, "
          f"first run {first_run_s:.1f}s ({calls} judge calls), second run {second_run_s:.1f}s")
    for v in votes[:2]:
        print(f"example reply ({v['prompt_id']}): {v['analysis']!r}")
