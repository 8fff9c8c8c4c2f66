"""LLM choice extraction in the plugin, on the MMBench circular fixture: with --mllm-judge, the
answers VLMEvalKit's rules cannot read go to the judge LLM; a letter decides them, Z or an unusable
reply leaves them wrong, a failed call makes the sample an error (never a score); replies are cached.

The judge is the loopback fault injector of chat_stub.py, replying per answer from `REPLIES`, so
the numbers are exact. Without a judge the fixture scores as VLMEvalKit's rules do: circular 8/18,
vanilla 12/18, every pass 55/67 (tests/plugin/test_mmbench_circular.py).
Each run is a subprocess: a clean interpreter per pytest session, as a user runs it.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from typing import Any, Iterator

import pytest
from chat_stub import ChatStub

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmbench_circular"
ARGS = ("-p", "no:cacheprovider", "--mllm-bench=mmbench", f"--mllm-data={FIXTURE}",
        f"--mllm=replay:{FIXTURE / 'responses.jsonl'}", "--mllm-judge=openai:judge-model", "--mllm-max-retries=0")

# The fixture's unreadable answers → what the judge replies. The empty answer of dev::116 is "nan" as
# VLMEvalKit's .xlsx prediction file hands it over, and asked about as VLMEvalKit asks.
REPLIES = {
    "A and B": "Z",                  # dev::1000103 (right: A): no single option → stays unreadable
    "B or C": "B or C",              # dev::104 (right: B): an unusable reply → stays unreadable
    "A is my choice because the object sits on the left side of the frame": "A",  # dev::107 (A): right
    "dark red": "B",                 # dev::109 (right: B): right
    "none": "C",                     # dev::2000114 (right: D, "one"): the judge picks C, "none": wrong
    "d": "D",                        # dev::3000117 (right: D): right
    "nan": "Z",                      # dev::116 (empty, read "nan"): no option → stays unreadable
}
EXTRACTED = {"dev::107": "A", "dev::109": "B", "dev::2000114": "C", "dev::3000117": "D"}


def _answer_of(body: dict[str, Any]) -> str:
    return body["messages"][-1]["content"].rsplit("Answer: ", 1)[1].removesuffix("\nLetter:")


@pytest.fixture
def judge() -> Iterator[ChatStub]:
    with ChatStub(lambda body: REPLIES.get(_answer_of(body))) as stub:
        yield stub


def _run(pytester: pytest.Pytester, url: str, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(*ARGS, f"--mllm-judge-base-url={url}", f"--mllm-json={out}",
                                           f"--mllm-cache-dir={pytester.path / 'cache'}", *args)
    return result, json.loads(out.read_text())


def _metrics(data: dict[str, Any]) -> dict[str, Any]:
    return data["benchmarks"]["mmbench"]["metrics"]


def _fraction(value: float) -> Fraction:
    return Fraction(value).limit_denominator(100)


def test_unreadable_answers_are_extracted_and_replayed_from_the_cache(pytester: pytest.Pytester,
                                                                      judge: ChatStub) -> None:
    html = pytester.path / "report.html"
    result, data = _run(pytester, judge.base_url, f"--mllm-html={html}")
    assert result.ret == pytest.ExitCode.OK  # a wrong answer is reported ("i"), not a failed test
    asked = sorted(_answer_of(r["body"]) for r in judge.requests)
    assert asked == sorted(REPLIES) and judge.calls == 7  # one call per unreadable answer
    assert {r["body"]["temperature"] for r in judge.requests} == {0.0}
    assert {r["body"]["model"] for r in judge.requests} == {"judge-model"}
    records = {r["id"]: r for r in data["records"]}
    for sample_id, letter in EXTRACTED.items():
        record = records[sample_id]
        assert record["parsed"] == letter and record["extraction"]["status"] == "extracted", record
        assert record["correct"] is (letter == record["answer"])
    assert records["dev::1000103"]["extraction"]["status"] == "no_match"
    assert records["dev::104"]["extraction"] == {"kind": "choice_extraction", "status": "unusable", "letter": None,
                                                 "reply": "B or C", "error": None}
    assert records["dev::116"]["extraction"]["status"] == "no_match"
    assert (records["dev::116"]["response"], records["dev::116"]["read_response"]) == ("", "nan")
    for sample_id in ("dev::1000103", "dev::104", "dev::116"):
        assert records[sample_id]["parsed"] == "unreadable" and records[sample_id]["status"] == "incorrect"
    readable = [r for r in data["records"] if "extraction" not in r]
    assert len(readable) == 67 - 7 and all(r["judge"] is None for r in data["records"])
    metrics = _metrics(data)  # rules alone: 8/18, 12/18, 55/67; now 107, 109 and 117 are right
    assert _fraction(metrics["circular_accuracy"]) == Fraction(11, 18)
    assert _fraction(metrics["vanilla_accuracy"]) == Fraction(14, 18)
    assert _fraction(metrics["accuracy"]) == Fraction(58, 67)
    assert "judge" not in data["benchmarks"]["mmbench"].get("scopes", {}) or \
        not data["benchmarks"]["mmbench"]["scopes"]["judge"]  # the CEE section counts open answers only

    assert "circular %" in html.read_text()  # the report renders records carrying "extraction"

    calls = judge.calls
    _, second = _run(pytester, judge.base_url)
    assert judge.calls == calls  # every reply from the response cache
    assert [r.get("extraction") for r in second["records"]] == [r.get("extraction") for r in data["records"]]
    assert _metrics(second)["circular_accuracy"] == metrics["circular_accuracy"]


def test_a_failed_judge_call_makes_the_sample_an_error(pytester: pytest.Pytester) -> None:
    failing = {**REPLIES, "dark red": None}  # dev::109, the first pass of question 109: HTTP 500
    with ChatStub(lambda body: failing.get(_answer_of(body))) as stub:
        result, data = _run(pytester, stub.base_url)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an errored sample fails the run
    records = {r["id"]: r for r in data["records"]}
    record = records["dev::109"]
    assert record["status"] == "error" and record["correct"] is None and record["parsed"] == "unreadable"
    assert record["extraction"]["status"] == "error"
    assert record["error"].startswith("choice extraction error: ") and "500" in record["error"]
    result.stdout.fnmatch_lines(["*ERROR*109*"])
    metrics = _metrics(data)  # question 109 left out, never scored: 10 of the 17 others
    assert metrics["circular_errors"] == 1 and metrics["circular_count"] == 17
    assert _fraction(metrics["circular_accuracy"]) == Fraction(10, 17)
    assert _fraction(metrics["vanilla_accuracy"]) == Fraction(13, 17)


def test_without_a_judge_the_rules_alone_read_the_answers(pytester: pytest.Pytester) -> None:
    out = pytester.path / "out.json"
    pytester.runpytest_subprocess(*ARGS[:5], "--mllm-cache=off", f"--mllm-json={out}")
    data = json.loads(out.read_text())
    assert all("extraction" not in r for r in data["records"])
    assert _fraction(_metrics(data)["circular_accuracy"]) == Fraction(8, 18)
