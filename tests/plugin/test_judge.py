"""The CEE judge in the plugin: five prompts per open answer, every vote recorded, judge failures
are errors (never scores), judge calls cached, word matching alongside, agreement with humans.

The judge here is a fault injector on loopback replaying the hand-written judge replies of
fixtures/judge/vqa_mini/answers.json (failed calls included), so the numbers are exact; the run
against a real small instruct model lives in test_judge_real_server.py."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Iterator

import pytest
from chat_stub import ChatStub

from pytest_mllm.engine.spec import load_spec
from pytest_mllm.judge import PROMPTS, JudgeItem, render_messages
from pytest_mllm.loaders import load_samples

VQA = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"


def _replies() -> dict[str, object]:
    """User message text → recorded reply (a string, or an {error} entry meaning the call fails)."""
    answers = json.loads((VQA / "answers.json").read_text())["answers"]
    spec = load_spec(VQA / "bench.yaml")
    table: dict[str, object] = {}
    for sample in load_samples(spec, spec.resolve_data_root(None)):
        entry = answers[sample.metadata["source_id"]]
        item = JudgeItem(sample.question, list(sample.metadata["references"]), entry["answer"])
        for prompt, reply in zip(PROMPTS, entry["replies"]):
            table[render_messages(prompt, item)[-1]["content"]] = reply
    return table


@pytest.fixture
def judge() -> Iterator[ChatStub]:
    """Fault injector: answers from the recorded replies; their {error} entries fail with HTTP 500."""
    replies = _replies()
    with ChatStub(lambda body: r if isinstance(r := replies.get(body["messages"][-1]["content"]), str) else None) as stub:
        stub.replies = replies  # type: ignore[attr-defined]
        yield stub


@pytest.fixture
def judge_url(judge: ChatStub) -> str:
    return judge.base_url


def _run(pytester: pytest.Pytester, predictions: Path, *args: str) -> tuple[pytest.RunResult, dict]:
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", str(VQA / "bench.yaml"), f"--mllm=replay:{predictions}",
                                f"--mllm-json={out}", f"--mllm-cache-dir={pytester.path / 'cache'}", *args)
    return result, json.loads(out.read_text())


def test_votes_are_recorded_and_judge_failures_are_errors(pytester: pytest.Pytester, judge_url: str,
                                                          predictions: Path) -> None:
    result, data = _run(pytester, predictions, "--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={judge_url}",
                        "--mllm-max-retries=0", "--mllm-gate=vqa_mini.judge.judge_error_rate<=0.1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    records = {r["id"]: r for r in data["records"]}
    c2 = records["colors::c2"]["judge"]
    assert c2["status"] == "judged" and c2["split"] == "4-1" and records["colors::c2"]["correct"] is True
    assert [v["prompt_id"] for v in c2["votes"]] == ["p1", "p2", "p3", "p4", "p5"]
    assert all(v["analysis"] for v in c2["votes"])
    assert records["colors::c2"]["word_match"] is False  # "navy" is not "blue": the judge and words disagree
    c4 = records["colors::c4"]
    assert c4["status"] == "error" and c4["judge"]["status"] == "judge-error" and c4["correct"] is None
    result.stdout.fnmatch_lines(["*ERROR*c4*", "*judge error:*", "*open answers: CEE judge + word matching*",
                                 "*vote splits*", "*vqa_mini.judge.judge_error_rate<=0.1*fail*"])
    judge = data["benchmarks"]["vqa_mini"]["scopes"]["judge"]
    assert judge["judge_errors"] == 1 and judge["scoring"] == "cee"
    human = judge["human"]["cee"]
    assert human["count"] == 7 and Fraction(human["agreement"]).limit_denominator(100) == Fraction(6, 7)
    assert Fraction(human["kappa"]).limit_denominator(100) == Fraction(16, 23)


def test_judge_calls_are_cached(pytester: pytest.Pytester, judge: ChatStub, judge_url: str, predictions: Path) -> None:
    args = ("--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={judge_url}", "--mllm-max-retries=0")
    _, first = _run(pytester, predictions, *args)
    calls = judge.calls
    assert calls == 40
    _, second = _run(pytester, predictions, *args)
    failing = sum(not isinstance(reply, str) for reply in judge.replies.values())
    assert failing == 2 and judge.calls - calls == failing  # only failed calls are asked again
    assert [r["judge"] for r in second["records"]] == [r["judge"] for r in first["records"]]


def test_without_a_judge_open_answers_use_word_matching(pytester: pytest.Pytester, predictions: Path) -> None:
    result, data = _run(pytester, predictions)
    result.stdout.fnmatch_lines(["*open answers: word matching (no --mllm-judge)*"])
    assert data["benchmarks"]["vqa_mini"]["scopes"]["judge"]["scoring"] == "word_match"
    assert all(r["judge"] is None for r in data["records"])


def test_a_judge_base_url_that_is_not_a_url_is_a_usage_error(pytester: pytest.Pytester, predictions: Path) -> None:
    result = pytester.runpytest(str(VQA / "bench.yaml"), f"--mllm=replay:{predictions}", "--mllm-judge=x",
                                "--mllm-judge-base-url=ftp://judge")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mllm-judge-base-url: the base URL must look like" in result.stderr.str()
