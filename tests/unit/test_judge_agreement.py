"""Agreement and Cohen's kappa on hand-computed values, and judge/word-match vs human labels on vqa_mini."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

import pytest

from pytest_mllm.engine.chat import ChatResult, EndpointError, EndpointUnreachable
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.judge import PROMPTS, Judge, JudgeItem, agreement, cohen_kappa, word_match
from pytest_mllm.loaders.tiny_lvlm_ehub import load_vqa
from pytest_mllm.sample import Sample

MINI = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"
T, F = True, False


@pytest.mark.parametrize(("a", "b", "p_o", "kappa"), [
    ([T, T, F, F], [T, F, F, F], 3 / 4, 1 / 2),  # p_e = 1/2·1/4 + 1/2·3/4 = 1/2
    ([T, F, T, F], [T, F, T, F], 1.0, 1.0),
    ([T, F], [F, T], 0.0, -1.0),
    ([T, T, T, F], [T, T, F, T], 1 / 2, -1 / 3),  # p_e = 3/4·3/4 + 1/4·1/4 = 5/8
    ([T, T, T, T, F, F, F, F, F, F], [T, T, T, F, F, F, F, F, F, T], 8 / 10, 7 / 12),  # p_e = .4·.4 + .6·.6
])
def test_agreement_and_kappa_by_hand(a: list[bool], b: list[bool], p_o: float, kappa: float) -> None:
    assert agreement(a, b) == pytest.approx(p_o)
    assert cohen_kappa(a, b) == pytest.approx(kappa)
    assert cohen_kappa(b, a) == pytest.approx(kappa)


def test_kappa_is_undefined_when_both_raters_are_constant_and_equal() -> None:
    assert agreement([T, T], [T, T]) == 1.0
    assert math.isnan(cohen_kappa([T, T], [T, T]))
    assert cohen_kappa([T, T], [T, F]) == 0.0  # p_o = p_e = 1/2


def test_agreement_refuses_unpaired_or_empty_labels() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        agreement([T], [T, F])
    with pytest.raises(ValueError, match="at least one"):
        cohen_kappa([], [])


class RecordedJudge:
    """A stand-in / fault injector for `ChatClient`: replays `answers.json`'s judge replies.

    A reply written as {"error", "message"} comes back as that exception, as the real client
    returns a failed call's exception in its slot.
    """

    ERRORS: dict[str, Callable[[str], Exception]] = {
        "EndpointUnreachable": EndpointUnreachable, "EndpointError": lambda m: EndpointError(m, 429)}

    def __init__(self, answers: dict[str, Any]) -> None:
        self.by_answer = {a["answer"]: a["replies"] for a in answers.values()}

    def chat_many(self, model: str, conversations: Sequence[Sequence[dict[str, Any]]], **_: Any) -> list[Any]:
        out: list[Any] = []
        for conversation in conversations:
            prompt = next(i for i, p in enumerate(PROMPTS) if p.system == conversation[0]["content"])
            reply = self.by_answer[conversation[1]["content"].rsplit("Answer to grade: ", 1)[1]][prompt]
            out.append(self.ERRORS[reply["error"]](reply["message"]) if isinstance(reply, dict)
                       else ChatResult(reply, "stop", 0.0))
        return out


def test_judge_and_word_match_against_human_labels_on_vqa_mini(tmp_path: Path) -> None:
    answers = json.loads((MINI / "answers.json").read_text(encoding="utf-8"))["answers"]
    spec = BenchmarkSpec(path=tmp_path / "bench.yaml", name="vqa_mini", loader="vqa", data_file="vqa.json")
    samples = [s for s in load_vqa(spec, MINI) if isinstance(s, Sample)]
    assert len(samples) == 8
    model_answers = [answers[s.metadata["source_id"]]["answer"] for s in samples]
    items = [JudgeItem(s.question, s.metadata["references"], a) for s, a in zip(samples, model_answers)]
    outcomes = Judge(RecordedJudge(answers), "recorded").judge_many(items)
    human = [s.metadata["human_label"] for s in samples]

    assert [o.split for o in outcomes] == ["5-0", "4-1", "0-5", "0-0+5 abstain", "5-0", "3-2", "3-0+2 abstain", "0-5"]
    judged = [(h, o.correct) for h, o in zip(human, outcomes) if o.status == "judged"]
    assert len(judged) == 7  # c4: judge error, left out
    h, j = [x for x, _ in judged], [bool(y) for _, y in judged]
    assert agreement(h, j) == pytest.approx(6 / 7)
    assert cohen_kappa(h, j) == pytest.approx(16 / 23)

    words = [word_match(a, s.metadata["references"]) for s, a in zip(samples, model_answers)]
    assert words == [T, F, F, T, T, T, T, F]
    assert agreement(human, words) == pytest.approx(6 / 8)
    assert cohen_kappa(human, words) == pytest.approx(7 / 15)
