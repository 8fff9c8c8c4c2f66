"""The CEE judge in the plugin: five prompts per open answer, every vote recorded, judge failures
are errors (never scores), judge calls cached, word matching alongside, agreement with humans.

The judge here is a fault injector on loopback replaying the hand-written judge replies of
fixtures/judge/vqa_mini/answers.json (failed calls included), so the numbers are exact; the run
against a real small instruct model lives in test_judge_real_server.py."""

from __future__ import annotations

import json
import threading
from fractions import Fraction
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from pytest_mllm.judge import PROMPTS, JudgeItem, render_messages
from pytest_mllm.loaders import load_samples
from pytest_mllm.spec import load_spec

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


class RecordedJudge(BaseHTTPRequestHandler):
    """Fault injector: answers chat completions from the recorded replies; {error} entries → HTTP 500."""

    replies: dict[str, object] = {}
    calls = 0

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        reply = self.replies.get(body["messages"][-1]["content"])
        if not isinstance(reply, str):
            self.send_response(500)
            self.end_headers()
            self.wfile.write(b'{"error": "recorded failure"}')
            return
        payload = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply},
                                           "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def judge_url() -> Iterator[str]:
    RecordedJudge.replies = _replies()
    RecordedJudge.calls = 0
    server = ThreadingHTTPServer(("127.0.0.1", 0), RecordedJudge)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


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


def test_judge_calls_are_cached(pytester: pytest.Pytester, judge_url: str, predictions: Path) -> None:
    args = ("--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={judge_url}", "--mllm-max-retries=0")
    _, first = _run(pytester, predictions, *args)
    calls = RecordedJudge.calls
    assert calls == 40
    _, second = _run(pytester, predictions, *args)
    failing = sum(not isinstance(reply, str) for reply in RecordedJudge.replies.values())
    assert failing == 2 and RecordedJudge.calls - calls == failing  # only failed calls are asked again
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
