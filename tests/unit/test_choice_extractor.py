"""LLM choice extraction (VLMEvalKit's `extract_answer_from_item`, our prompt): the prompt, how a
reply is read, the cache key, the batching and caching of calls, and what the evaluator does with
each outcome (a letter decides; Z or an unusable reply stays wrong; a failed call is an error)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_mllm.engine.evaluator import Evaluator
from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.judge.choice_extractor import (TEMPLATE, ChoiceExtractor, ChoiceItem, Extraction, cache_key,
                                                read_reply, render_messages, render_prompt)
from pytest_mllm.judge.review import JudgePass
from pytest_mllm.loaders import load_samples
from pytest_mllm.sample import Request, Response

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmbench_circular"
ITEM = ChoiceItem("What colour is the car?", (("A", "red"), ("B", "dark red"), ("C", "pink"), ("D", "orange")),
                  "it is a deep maroon")


class Result:
    def __init__(self, text: str) -> None:
        self.text = text


class FakeClient:
    """`chat_many` answering from a function of the user message; None fails that call."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.calls: list[dict[str, Any]] = []

    def chat_many(self, model: str, conversations: Sequence[Sequence[dict[str, Any]]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> list[Any]:
        self.calls.append({"model": model, "n": len(conversations), "temperature": temperature,
                           "max_tokens": max_tokens})
        out: list[Any] = []
        for messages in conversations:
            text = self.reply(messages[-1]["content"])
            out.append(RuntimeError("HTTP 500") if text is None else Result(text))
        return out


class DictCache:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put_many(self, entries: dict[str, str], model: str) -> None:
        self.data.update(entries)


# -- the prompt ---------------------------------------------------------------------------------

def test_the_prompt_gives_question_options_answer_and_the_letters_to_choose_from() -> None:
    text = render_prompt(ITEM)
    assert "Question: What colour is the car?\nOptions:\nA. red\nB. dark red\nC. pink\nD. orange\n" in text
    assert text.endswith("Answer: it is a deep maroon\nLetter:")
    assert "A, B, C or D, or Z" in text
    assert render_messages(ITEM) == [{"role": "user", "content": text}]
    two = render_prompt(ChoiceItem("q", (("A", "x"), ("B", "y")), "x"))
    assert "A or B, or Z" in two and "C." not in two.split("Now this one:")[1]


def test_braces_in_the_question_or_answer_are_kept_as_they_are() -> None:
    item = ChoiceItem("Which set is {x | x > 0}?", (("A", "{1}"), ("B", "{answer}")), "the {answer} one {question}")
    text = render_prompt(item)
    assert "Question: Which set is {x | x > 0}?" in text
    assert "B. {answer}" in text and "Answer: the {answer} one {question}\nLetter:" in text


# -- reading the reply --------------------------------------------------------------------------

@pytest.mark.parametrize(("reply", "status", "letter"), [
    ("B", "extracted", "B"),
    ("B.", "extracted", "B"),
    ("Letter: C", "extracted", "C"),
    ("The answer is D", "extracted", "D"),
    ("pink", "extracted", "C"),  # VLMEvalKit reads the reply by its rules, option texts included
    ("Z", "no_match", None),
    ("Cannot determine the answer", "no_match", None),
    ("A or B", "unusable", None),
    ("E", "unusable", None),  # not one of the item's letters
    ("b", "unusable", None),  # the rules read capitals only
    ("", "unusable", None),
])
def test_a_reply_is_read_by_the_rules(reply: str, status: str, letter: str | None) -> None:
    outcome = read_reply(reply, ITEM)
    assert (outcome.status, outcome.letter, outcome.reply) == (status, letter, reply)


def test_as_record_names_its_kind() -> None:
    assert Extraction("extracted", "B", "B").as_record() == {
        "kind": "choice_extraction", "status": "extracted", "letter": "B", "reply": "B", "error": None}


# -- the cache key ------------------------------------------------------------------------------

def test_the_cache_key_covers_model_prompt_item_and_settings() -> None:
    settings = {"temperature": 0.0, "max_tokens": 512}
    key = cache_key("judge", ITEM, settings)
    assert key == cache_key("judge", ChoiceItem(ITEM.question, ITEM.choices, ITEM.answer), dict(settings))
    others = {
        cache_key("other-judge", ITEM, settings),
        cache_key("judge", ITEM, settings, template=TEMPLATE + " "),
        cache_key("judge", ChoiceItem("What colour is the bike?", ITEM.choices, ITEM.answer), settings),
        cache_key("judge", ChoiceItem(ITEM.question, ITEM.choices[::-1], ITEM.answer), settings),
        cache_key("judge", ChoiceItem(ITEM.question, ITEM.choices, "maroon"), settings),
        cache_key("judge", ITEM, {**settings, "max_tokens": 16}),
    }
    assert key not in others and len(others) == 6


# -- the extractor ------------------------------------------------------------------------------

def _items() -> list[ChoiceItem]:
    return [ChoiceItem("q1", ITEM.choices, "maroon"), ChoiceItem("q2", ITEM.choices, "   "),
            ChoiceItem("q3", ITEM.choices, "a bicycle"), ChoiceItem("q4", ITEM.choices, "fails"),
            ChoiceItem("q5", ITEM.choices, "A and B")]


def _reply(prompt: str) -> str | None:
    answer = prompt.rsplit("Answer: ", 1)[1]
    return {"maroon\nLetter:": "B", "a bicycle\nLetter:": "Z", "A and B\nLetter:": "A and B"}.get(answer)


def test_one_batched_call_at_temperature_0_and_every_outcome() -> None:
    client = FakeClient(_reply)
    outcomes = ChoiceExtractor(client, "judge-model", max_tokens=64).extract_many(_items())
    assert client.calls == [{"model": "judge-model", "n": 4, "temperature": 0.0, "max_tokens": 64}]  # empty: not asked
    assert [(o.status, o.letter) for o in outcomes] == [("extracted", "B"), ("empty", None), ("no_match", None),
                                                        ("error", None), ("unusable", None)]
    assert outcomes[3].error == "RuntimeError: HTTP 500"


def test_a_client_that_raises_fails_every_item_of_the_batch() -> None:
    class Down:
        def chat_many(self, *args: Any, **kwargs: Any) -> list[Any]:
            raise ConnectionError("refused")

    outcomes = ChoiceExtractor(Down(), "judge").extract_many(_items())  # type: ignore[arg-type]
    assert [o.status for o in outcomes] == ["error", "empty", "error", "error", "error"]
    assert outcomes[0].error == "ConnectionError: refused"


def test_replies_are_cached_and_failed_calls_are_not() -> None:
    cache, client = DictCache(), FakeClient(_reply)
    extractor = ChoiceExtractor(client, "judge", cache=cache)
    first = extractor.extract_many(_items())
    assert len(cache.data) == 3  # the error is not stored, the empty answer never asked
    second = extractor.extract_many(_items())
    assert [c["n"] for c in client.calls] == [4, 1]  # only the failed call is asked again
    assert second == first
    assert ChoiceExtractor(FakeClient(_reply), "another-judge", cache=cache).extract_many(_items()[:1])[0].status \
        == "extracted"  # another judge model: asked afresh (a cache miss), not served from the first's reply


def test_max_tokens_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_tokens"):
        ChoiceExtractor(FakeClient(_reply), "judge", max_tokens=0)


# -- the judge's second pass over the evaluator's batch ------------------------------------------------

class Answers:
    """A model answering each MMBench pass from a table by sample id."""

    name = "answers"
    needs_images = False

    def __init__(self, table: dict[str, str]) -> None:
        self.table = table

    def generate(self, requests: list[Request]) -> list[Response]:
        return [Response(self.table[r.sample.id]) for r in requests]


ANSWERS = {"dev::101": "A",               # readable: never sent
           "dev::1000103": "A and B",     # answer A; the judge says A → correct
           "dev::104": "B or C",          # answer B; the judge says C → incorrect
           "dev::107": "A is my choice because the object sits on the left side of the frame",  # Z → unreadable
           "dev::109": "dark red",        # the call fails → error
           "dev::2000114": "none",        # an unusable reply → unreadable
           "dev::116": ""}                # empty: "nan" as VLMEvalKit's .xlsx hands it over, asked, unreadable
JUDGE = {"A and B": "A", "B or C": "C", "A is my choice because the object sits on the left side of the frame": "Z",
         "none": "I would say none of them", "nan": "Z"}


def _evaluate(extractor_factory: Any) -> dict[str, Any]:
    spec = load_spec(find_spec("mmbench"))
    samples = [s for s in load_samples(spec, FIXTURE) if s.id in ANSWERS]
    evaluator = Evaluator(lambda: Answers(ANSWERS), model_name="answers",  # type: ignore[arg-type,return-value]
                          review_steps=[JudgePass(make_extractor=extractor_factory)])
    return {r["id"]: r for r in evaluator.evaluate([(s, spec) for s in samples])}


def test_the_evaluator_lets_a_letter_decide_and_a_failed_call_error() -> None:
    client = FakeClient(lambda prompt: JUDGE.get(prompt.rsplit("Answer: ", 1)[1].removesuffix("\nLetter:")))
    records = _evaluate(lambda: ChoiceExtractor(client, "judge"))
    assert client.calls[0]["n"] == 6 and len(client.calls) == 1
    assert "extraction" not in records["dev::101"] and records["dev::101"]["parsed"] == "A"
    got = {i: (r["parsed"], r["status"], r["correct"], (r.get("extraction") or {}).get("status"))
           for i, r in records.items() if i != "dev::101"}
    assert got == {"dev::1000103": ("A", "correct", True, "extracted"),
                   "dev::104": ("C", "incorrect", False, "extracted"),
                   "dev::107": ("unreadable", "incorrect", False, "no_match"),
                   "dev::109": ("unreadable", "error", None, "error"),
                   "dev::2000114": ("unreadable", "incorrect", False, "unusable"),
                   "dev::116": ("unreadable", "incorrect", False, "no_match")}
    assert records["dev::109"]["error"] == "choice extraction error: RuntimeError: HTTP 500"
    assert records["dev::104"]["extraction"] == {"kind": "choice_extraction", "status": "extracted", "letter": "C",
                                                 "reply": "C", "error": None}
    assert all(r["judge"] is None for r in records.values())  # the CEE key stays for open answers


def test_without_a_judge_the_rules_alone_decide() -> None:
    records = _evaluate(None)
    assert [r["parsed"] for i, r in records.items() if i != "dev::101"] == ["unreadable"] * 6
    assert all("extraction" not in r and r["status"] == "incorrect" for r in records.values() if r["id"] != "dev::101")
