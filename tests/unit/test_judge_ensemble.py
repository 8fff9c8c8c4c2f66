"""The ensemble: votes, splits, ties and abstentions, failed calls, the Judge's batching and caching."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

from pytest_mllm.engine.chat import ChatResult, EndpointError, EndpointUnreachable, MalformedResponse
from pytest_mllm.judge import PROMPTS, QUORUM, Judge, JudgeItem, cache_key, decide

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "judge"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "replies.json").read_text(encoding="utf-8"))["cases"]
CASE = {c["name"]: c for c in CASES}


def replies(*verdicts: int | None | Exception) -> list[str | Exception]:
    """One reply per prompt: its key and the verdict, a reply without a verdict (None), or a failed call."""
    out: list[str | Exception] = []
    for prompt, v in zip(PROMPTS, verdicts, strict=True):
        if isinstance(v, Exception):
            out.append(v)
        else:
            out.append(f"Analysis: checked.\n{prompt.key}: {v}" if v is not None else "Analysis: unsure.")
    return out


def timeout() -> EndpointUnreachable:
    return EndpointUnreachable("cannot reach http://judge/v1/chat/completions: no answer within 60s")


class StandIn:
    """A stand-in / fault injector for `ChatClient`: `chat_many` answers with scripted texts or errors.

    `script(conversation)` gives a text (wrapped in a ChatResult) or an exception (returned
    in its slot, as the real client does); every call is recorded.
    """

    def __init__(self, script: Any) -> None:
        self.script = script
        self.calls: list[dict[str, Any]] = []

    def chat_many(self, model: str, conversations: Sequence[Sequence[dict[str, Any]]], *,
                  temperature: float = 0.0, max_tokens: int = 512) -> list[ChatResult | Exception]:
        self.calls.append({"model": model, "conversations": list(conversations), "temperature": temperature,
                           "max_tokens": max_tokens})
        out: list[ChatResult | Exception] = []
        for conversation in conversations:
            reply = self.script(conversation)
            out.append(reply if isinstance(reply, Exception) else ChatResult(reply, "stop", 0.01))
        return out


def by_prompt(texts: Mapping[str, Sequence[str | Exception]]) -> Any:
    """A script that answers from `texts[answer]` by the prompt the conversation was built from."""
    def script(conversation: Sequence[dict[str, Any]]) -> str | Exception:
        index = next(i for i, p in enumerate(PROMPTS) if conversation[0]["content"] == p.system)
        answer = conversation[1]["content"].rsplit("Answer to grade: ", 1)[1]
        return texts[answer][index]
    return script


class DictCache:
    """A dict behind `ResponseCache`'s two methods."""

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.models: set[str] = set()

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put_many(self, entries: Mapping[str, str], model: str) -> None:
        self.data.update(entries)
        self.models.add(model)


@pytest.mark.parametrize("mode", ["strict", "compat"])
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_recorded_cases_reach_the_recorded_outcome(case: dict[str, Any], mode: str) -> None:
    outcome = decide([r["text"] for r in case["replies"]], mode=mode)  # type: ignore[arg-type]
    expected = case["outcome"][mode]
    assert (outcome.status, outcome.correct, outcome.split) == (expected["status"], expected["correct"],
                                                                expected["split"])
    assert [v.verdict for v in outcome.votes] == [r[mode] for r in case["replies"]]
    assert (outcome.error is None) == (outcome.status == "judged")


def test_every_vote_is_recorded_with_its_prompt_rule_key_and_text() -> None:
    case = CASE["self_contradiction"]
    outcome = decide([r["text"] for r in case["replies"]])
    assert [(v.prompt_id, v.rule, v.key) for v in outcome.votes] == [(p.id, p.rule, p.key) for p in PROMPTS]
    assert [v.analysis for v in outcome.votes] == [r["text"] for r in case["replies"]]
    # the paper's first example: rule-1 prompts grade the core (1), rule-2 prompts the contradiction (0)
    assert [v.verdict for v in outcome.votes if v.rule == 1] == [1, 1, 1]
    assert [v.verdict for v in outcome.votes if v.rule == 2] == [0, 0]
    record = outcome.as_record()
    assert json.loads(json.dumps(record)) == record
    assert record["split"] == "3-2" and record["votes"][3]["verdict"] == 0


@pytest.mark.parametrize(("verdicts", "status", "correct", "split"), [
    ((1, 1, 1, 1, 1), "judged", True, "5-0"),
    ((1, 1, 1, 1, 0), "judged", True, "4-1"),
    ((0, 1, 1, 0, 1), "judged", True, "3-2"),
    ((0, 0, 1, 1, 0), "judged", False, "2-3"),
    ((0, 0, 0, 0, 0), "judged", False, "0-5"),
    ((1, 1, 1, None, None), "judged", True, "3-0+2 abstain"),
    ((None, 0, 1, 0, 0), "judged", False, "1-3+1 abstain"),
    ((1, 1, None, 0, 0), "judge-error", None, "2-2+1 abstain"),
    ((1, None, None, 0, 1), "judge-error", None, "2-1+2 abstain"),
    ((None, None, 1, None, None), "judge-error", None, "1-0+4 abstain"),
    ((None, None, None, None, None), "judge-error", None, "0-0+5 abstain"),
])
def test_strict_majority_needs_three_agreeing_votes(verdicts: tuple[int | None, ...], status: str,
                                                    correct: bool | None, split: str) -> None:
    assert QUORUM == 3
    outcome = decide(replies(*verdicts))
    assert (outcome.status, outcome.correct, outcome.split) == (status, correct, split)


def test_ties_and_abstentions_are_judge_errors_that_say_why() -> None:
    tie = decide(replies(1, 1, None, 0, 0))
    assert tie.error == "no majority: 2-2+1 abstain; a verdict needs 3 agreeing votes of 5"
    silent = decide(replies(None, None, None, None, None))
    assert silent.error == "no prompt gave a readable verdict"
    assert all(v.error == "no 'Most Likely Score' in the reply" for v in silent.votes if v.key == "Most Likely Score")


def test_one_prompt_timing_out_leaves_four_votes() -> None:
    judged = decide(replies(timeout(), 1, 1, 1, 0))
    assert (judged.status, judged.correct, judged.split) == ("judged", True, "3-1+1 abstain")
    failed = judged.votes[0]
    assert failed.verdict is None and failed.analysis == ""
    assert failed.error is not None and failed.error.startswith("EndpointUnreachable: ")
    tied = decide(replies(1, timeout(), 1, 0, 0))
    assert (tied.status, tied.correct, tied.split) == ("judge-error", None, "2-2+1 abstain")


def test_all_calls_failing_is_a_judge_error_never_a_score() -> None:
    rate_limited = EndpointError("http://judge answered HTTP 429: slow down", 429)
    outcome = decide([timeout(), rate_limited, MalformedResponse("no choices"), timeout(), timeout()])
    assert (outcome.status, outcome.correct, outcome.split) == ("judge-error", None, "0-0+5 abstain")
    assert outcome.error is not None and outcome.error.startswith("all 5 judge calls failed; first: EndpointUnreachable")
    assert decide([timeout()] * 5, mode="compat").status == "judge-error"


def test_all_replies_unreadable_is_a_judge_error() -> None:
    outcome = decide([r["text"] for r in CASE["unreadable"]["replies"]])
    assert (outcome.status, outcome.correct) == ("judge-error", None)
    assert all(v.verdict is None and v.error for v in outcome.votes)


@pytest.mark.parametrize(("verdicts", "status", "correct"), [
    ((1, 1, 1, 0, 0), "judged", True),
    ((1, 1, 0, 0, None), "judged", True),  # a 2-2 tie: the paper's Counter keeps the value seen first
    ((0, 0, 1, 1, None), "judged", False),
    ((None, 1, 0, None, 1), "judge-error", None),  # "no vote" seen first ties with 1: the paper's bug item
    ((0, None, 1, None, 0), "judged", False),  # 1-2+2 abstain: 0 was seen before "no vote", so 0 wins
])
def test_compat_uses_the_papers_plurality(verdicts: tuple[int | None, ...], status: str,
                                          correct: bool | None) -> None:
    outcome = decide(replies(*verdicts), mode="compat")
    assert (outcome.status, outcome.correct) == (status, correct)


def test_compat_plurality_of_no_votes_is_a_judge_error() -> None:
    outcome = decide(replies(None, None, None, 1, 1), mode="compat")
    assert outcome.status == "judge-error" and "paper plurality" in str(outcome.error)


def test_decide_refuses_the_wrong_number_of_replies_or_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="needs 5 replies"):
        decide(replies(1, 1, 1, 1, 1)[:4])
    with pytest.raises(ValueError, match="judge mode"):
        decide(replies(1, 1, 1, 1, 1), mode="loose")  # type: ignore[arg-type]


def test_judge_many_sends_every_prompt_of_every_item_in_one_call() -> None:
    items = [JudgeItem(c["item"]["question"], c["item"]["references"], c["item"]["answer"]) for c in CASES]
    client = StandIn(by_prompt({c["item"]["answer"]: [r["text"] for r in c["replies"]] for c in CASES}))
    judge = Judge(client, "judge-model", max_tokens=256)
    outcomes = judge.judge_many(items)
    assert len(client.calls) == 1
    call = client.calls[0]
    assert (call["model"], call["temperature"], call["max_tokens"]) == ("judge-model", 0.0, 256)
    assert len(call["conversations"]) == 5 * len(items)
    # item by item, each item's prompts in PROMPTS order
    assert [c[0]["content"] for c in call["conversations"][:5]] == [p.system for p in PROMPTS]
    assert all(items[1].question in c[1]["content"] for c in call["conversations"][5:10])
    for case, outcome in zip(CASES, outcomes):
        assert (outcome.status, outcome.correct, outcome.split) == (
            case["outcome"]["strict"]["status"], case["outcome"]["strict"]["correct"],
            case["outcome"]["strict"]["split"])


def test_judge_options_reach_the_client_and_the_decision() -> None:
    case = CASE["format_quirks"]
    client = StandIn(by_prompt({case["item"]["answer"]: [r["text"] for r in case["replies"]]}))
    judge = Judge(client, "m", temperature=0.5, mode="compat")
    outcome = judge.judge_many([JudgeItem(**case["item"])])[0]
    assert client.calls[0]["temperature"] == 0.5
    assert (outcome.correct, outcome.split) == (False, "1-3+1 abstain")
    assert judge.judge_many([]) == [] and len(client.calls) == 1


def test_failed_calls_come_back_as_abstentions() -> None:
    texts = replies(1, 1, 1, 1, 1)
    texts[2] = timeout()
    client = StandIn(by_prompt({"circle": texts}))
    outcome = Judge(client, "m").judge_many([JudgeItem("Shape?", ["round"], "circle")])[0]
    assert (outcome.status, outcome.correct, outcome.split) == ("judged", True, "4-0+1 abstain")
    assert str(outcome.votes[2].error).startswith("EndpointUnreachable")


def test_a_client_that_raises_fails_every_item_without_a_score() -> None:
    class Down:
        """A fault injector: the whole `chat_many` call raises."""

        def chat_many(self, *args: Any, **kwargs: Any) -> list[Any]:
            raise EndpointUnreachable("cannot reach http://judge/v1/chat/completions: connection refused")

    outcomes = Judge(Down(), "m").judge_many([JudgeItem("q", ["a"], "a"), JudgeItem("q2", ["b"], "b")])
    assert [(o.status, o.correct) for o in outcomes] == [("judge-error", None)] * 2
    assert "connection refused" in str(outcomes[0].error)


def test_a_client_returning_the_wrong_number_of_results_is_a_bug() -> None:
    class Short:
        """A fault injector: one result too few."""

        def chat_many(self, model: str, conversations: Sequence[Any], **kwargs: Any) -> list[Any]:
            return [ChatResult("Final Score: 1", "stop", 0.0)] * (len(conversations) - 1)

    with pytest.raises(RuntimeError, match="4 results for 5 conversations"):
        Judge(Short(), "m").judge_many([JudgeItem("q", ["a"], "a")])


def test_judge_refuses_bad_settings() -> None:
    client = StandIn(lambda c: "")
    with pytest.raises(ValueError, match="judge mode"):
        Judge(client, "m", mode="paper")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="temperature"):
        Judge(client, "m", temperature=-0.1)
    with pytest.raises(ValueError, match="max_tokens"):
        Judge(client, "m", max_tokens=0)


def test_cache_keys_are_stable_and_cover_every_input() -> None:
    item = JudgeItem("What shape is the plate?", ["round"], "circle")
    key = cache_key("judge", "p1", item, {"temperature": 0.0, "max_tokens": 512})
    assert len(key) == 64 and int(key, 16) >= 0
    assert key == cache_key("judge", "p1", JudgeItem("What shape is the plate?", ("round", "round"), "circle"),
                            {"max_tokens": 512, "temperature": 0.0})
    others = {
        cache_key("other-judge", "p1", item, {"temperature": 0.0, "max_tokens": 512}),
        cache_key("judge", "p2", item, {"temperature": 0.0, "max_tokens": 512}),
        cache_key("judge", "p1", JudgeItem("What shape is the cup?", ["round"], "circle"),
                  {"temperature": 0.0, "max_tokens": 512}),
        cache_key("judge", "p1", JudgeItem("What shape is the plate?", ["circular"], "circle"),
                  {"temperature": 0.0, "max_tokens": 512}),
        cache_key("judge", "p1", JudgeItem("What shape is the plate?", ["round"], "oval"),
                  {"temperature": 0.0, "max_tokens": 512}),
        cache_key("judge", "p1", item, {"temperature": 0.5, "max_tokens": 512}),
        cache_key("judge", "p1", item),
    }
    assert key not in others and len(others) == 7
    with pytest.raises(ValueError, match="unknown judge prompt"):
        cache_key("judge", "p9", item)


def test_cached_replies_are_not_asked_again_and_failures_are_not_cached() -> None:
    texts = replies(1, 1, 0, 1, 1)
    texts[4] = timeout()
    client = StandIn(by_prompt({"circle": texts}))
    cache = DictCache()
    judge = Judge(client, "judge-model", cache=cache)
    item = JudgeItem("Shape?", ["round"], "circle")
    first = judge.judge_many([item])[0]
    assert first.split == "3-1+1 abstain" and len(client.calls[0]["conversations"]) == 5
    assert len(cache.data) == 4 and cache.models == {"judge-model"}
    assert cache_key("judge-model", "p1", item, judge.settings) in cache.data

    texts[4] = "Analysis: fine.\nMost Likely Score: 1"  # the endpoint is back
    second = judge.judge_many([item])[0]
    assert len(client.calls[1]["conversations"]) == 1  # only the failed prompt is asked again
    assert client.calls[1]["conversations"][0][0]["content"] == PROMPTS[4].system
    assert second.split == "4-1" and [v.analysis for v in second.votes][:4] == [v.analysis for v in first.votes][:4]

    judge.judge_many([item])
    assert len(client.calls) == 2  # everything cached: no call at all
