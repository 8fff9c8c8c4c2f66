"""The optimization loop with fake model, optimizer and similarity: scoring, warnings, call budgets."""

from __future__ import annotations

from typing import Callable

import pytest

from pytest_mllm.tpeval.counter import edit_budget
from pytest_mllm.tpeval.metaprompt import Example
from pytest_mllm.tpeval.optimizer import TaskOptimizer, TaskOutcome, planned_calls
from pytest_mllm.tpeval.settings import TpSettings
from pytest_mllm.tpeval.slot import PromptSlot

TEMPLATE = "{question} Please answer yes or no."
EXAMPLES = [Example(f"q{i}", "yes" if i % 2 else "no") for i in range(4)]


class FakeModel:
    """Accuracy from a table keyed by the rendered template; the other examples come back wrong."""

    def __init__(self, table: dict[str, float], default: float = 0.25) -> None:
        self.table, self.default = table, default
        self.templates: list[str] = []

    def __call__(self, template: str) -> tuple[float, list[Example]]:
        self.templates.append(template)
        acc = self.table.get(template, self.default)
        n_wrong = round((1 - acc) * len(EXAMPLES))
        return acc, [Example(ex.question, ex.answer, "maybe") for ex in EXAMPLES[:n_wrong]]


class FakeOptimizer:
    """Answers meta-prompts with `script(round_no, index)` and introspection requests with a fixed text."""

    def __init__(self, script: Callable[[int, int], str | Exception]) -> None:
        self.script = script
        self.batches: list[tuple[int, float, str]] = []  # (size, temperature, kind)
        self.meta_round = 0
        self.meta_prompts: list[str] = []

    def __call__(self, conversations: list[list[dict]], temperature: float) -> list[str | Exception]:
        kind = "meta" if "Write ONE new prompt" in conversations[0][-1]["content"] else "why"
        self.batches.append((len(conversations), temperature, kind))
        if kind == "why":
            return ["It answers yes to everything."] * len(conversations)
        self.meta_round += 1
        self.meta_prompts.append(conversations[0][-1]["content"])
        return [self.script(self.meta_round, i) for i in range(len(conversations))]


def word_overlap(a: str, b: str) -> float:
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return len(wa & wb) / len(wa | wb)


def optimizer(script: Callable[[int, int], str | Exception], table: dict[str, float] | None = None,
              **settings: object) -> tuple[TaskOptimizer, FakeModel, FakeOptimizer, list[tuple[str, int]]]:
    model = FakeModel(table or {})
    opt = FakeOptimizer(script)
    events: list[tuple[str, int]] = []
    s = TpSettings(**{"rounds": 4, "per_round": 3, "few": len(EXAMPLES), **settings})  # type: ignore[arg-type]
    task = TaskOptimizer(task="existence", slot=PromptSlot.from_template(TEMPLATE), settings=s, evaluate=model,
                         propose=opt, similarity=word_overlap, examples=EXAMPLES, description="Is it there?",
                         on_progress=lambda event, n: events.append((event, n)))
    return task, model, opt, events


def check_budget(outcome: TaskOutcome, settings: TpSettings) -> None:
    plan = planned_calls(settings, len(EXAMPLES))
    assert outcome.calls["optimizer"] <= plan["optimizer"]
    assert outcome.calls["scorer"] <= plan["scorer"]


def test_planned_calls() -> None:
    assert planned_calls(TpSettings(), 8) == {"optimizer": 1 + 2 * 16 * 3, "scorer": (1 + 16 * 3) * 8}


def test_a_full_run_scores_candidates_and_reranks() -> None:
    good = "{question} Answer yes or no only."
    task, model, opt, events = optimizer(
        lambda r, i: f"<prompt>Answer yes or no only{'!' * i}{' now' * r}</prompt>" if r > 1 else
        f"<prompt>{['Answer yes or no only.', 'Reply yes or no.', 'Say yes or no please.'][i]}</prompt>",
        table={TEMPLATE: 0.5, good: 1.0})
    outcome = task.run()
    assert outcome.task == "existence" and outcome.mode == "prompt" and outcome.original == "Please answer yes or no."
    assert outcome.history[0].round == 0 and outcome.history[0].similarity == 1.0
    assert outcome.history[0].score == pytest.approx(0.8 * 0.5 + 0.2)
    assert outcome.history[0].introspection == "It answers yes to everything."
    assert outcome.best.prompt == "Answer yes or no only." and outcome.improved
    assert outcome.best.accuracy == 1.0 and outcome.best.wrong == 0 and outcome.best.introspection == ""
    assert model.templates[0] == TEMPLATE and good in model.templates
    assert len(outcome.history) == 1 + 4 * 3
    assert [c.round for c in outcome.history] == sorted(c.round for c in outcome.history)
    meta = [b for b in opt.batches if b[2] == "meta"]
    assert meta == [(3, 1.0, "meta")] * 4
    assert all(b[1] == 0.0 for b in opt.batches if b[2] == "why")
    assert ("round", 0) in events and ("round", 4) in events and ("scorer", len(EXAMPLES)) in events
    assert sum(n for e, n in events if e == "optimizer") == outcome.calls["optimizer"]
    assert sum(n for e, n in events if e == "scorer") == outcome.calls["scorer"] == 13 * len(EXAMPLES)
    assert outcome.warnings == []
    check_budget(outcome, task.settings)


def test_meta_prompts_carry_the_decaying_counter_and_history() -> None:
    task, _, opt, _ = optimizer(lambda r, i: f"<prompt>Answer number {r} {i}.</prompt>")
    task.run()
    start = 6  # "Please answer yes or no." has 5 words: the budget starts at MIN_START
    for r, text in enumerate(opt.meta_prompts, 1):
        assert f"at most {edit_budget(r, 4, start, 2)} words" in text
    assert "Answer number 1 0." not in opt.meta_prompts[0] and "Answer number 1 0." in opt.meta_prompts[1]


def test_top_k_limits_the_history_shown() -> None:
    task, _, opt, _ = optimizer(lambda r, i: f"<prompt>Answer variant {r} {i}.</prompt>", top_k=2)
    task.run()
    assert opt.meta_prompts[-1].count("Prompt: ") == 2


def test_a_round_with_nothing_usable_warns_and_continues() -> None:
    def script(r: int, i: int) -> str | Exception:
        if r == 2:
            return ["", "<prompt>{question} yes?</prompt>", RuntimeError("timeout")][i]
        return f"<prompt>Answer variant {r} {i}.</prompt>"

    task, _, _, _ = optimizer(script)
    outcome = task.run()
    assert "round 2: the optimizer returned no usable prompt" in outcome.warnings
    assert any(w.startswith("round 2: reply 1 unusable: empty") for w in outcome.warnings)
    assert any("placeholder" in w for w in outcome.warnings)
    assert any("RuntimeError: timeout" in w for w in outcome.warnings)
    assert outcome.calls["unusable"] == 3
    assert {c.round for c in outcome.history} == {0, 1, 3, 4}
    check_budget(outcome, task.settings)


def test_all_rounds_unusable_keeps_the_original() -> None:
    task, model, _, _ = optimizer(lambda r, i: "I cannot help with that.\nSorry.\nReally.\nNo.")
    outcome = task.run()
    assert outcome.best.round == 0 and outcome.best.prompt == "Please answer yes or no." and not outcome.improved
    assert outcome.history == [outcome.best]
    assert model.templates == [TEMPLATE]
    assert [w for w in outcome.warnings if "no usable prompt" in w] == [
        f"round {r}: the optimizer returned no usable prompt" for r in range(1, 5)]
    assert outcome.calls == {"optimizer": 1 + 4 * 3, "scorer": len(EXAMPLES), "unusable": 12, "duplicate": 0}
    check_budget(outcome, task.settings)


def test_a_raising_propose_is_survived() -> None:
    model = FakeModel({})

    def propose(conversations: list[list[dict]], temperature: float) -> list[str | Exception]:
        raise ConnectionError("optimizer down")

    task = TaskOptimizer(task="t", slot=PromptSlot.from_template(TEMPLATE), settings=TpSettings(rounds=2),
                         evaluate=model, propose=propose, similarity=word_overlap, examples=EXAMPLES)
    outcome = task.run()
    assert outcome.best.round == 0 and outcome.best.introspection == ""
    assert any("no introspection" in w and "optimizer down" in w for w in outcome.warnings)
    assert sum("no usable prompt" in w for w in outcome.warnings) == 2


def test_duplicates_are_not_rescored() -> None:
    task, model, _, _ = optimizer(lambda r, i: "<prompt>Answer yes or no only.</prompt>" if i < 2 else
                                  "<prompt>please answer YES or no.</prompt>")
    outcome = task.run()
    assert [c.prompt for c in outcome.history] == ["Please answer yes or no.", "Answer yes or no only."]
    assert len(model.templates) == 2
    assert outcome.calls["duplicate"] == 1 + 3 * 2 and outcome.calls["unusable"] == 4
    assert "round 2: the optimizer returned no new prompt (2 repeated earlier ones)" in outcome.warnings
    check_budget(outcome, task.settings)


def test_prefix_mode_renders_the_prefix() -> None:
    model = FakeModel({})
    opt = FakeOptimizer(lambda r, i: f"<prompt>Answer questions about existence, take {r}.{i}</prompt>")
    task = TaskOptimizer(task="existence", slot=PromptSlot.from_template("{question}", task="existence"),
                         settings=TpSettings(rounds=1, per_round=1), evaluate=model, propose=opt,
                         similarity=word_overlap, examples=EXAMPLES)
    outcome = task.run()
    assert outcome.mode == "prefix" and outcome.original == "Answer the questions about existence"
    assert model.templates == ["Answer the questions about existence\n{question}",
                               "Answer questions about existence, take 1.0\n{question}"]


def test_deterministic_given_deterministic_callables() -> None:
    def run() -> TaskOutcome:
        task, _, _, _ = optimizer(lambda r, i: f"<prompt>Answer variant {r * i}.</prompt>",
                                  table={"{question} Answer variant 2.": 1.0})
        return task.run()

    assert run() == run()


def test_bad_settings_are_rejected() -> None:
    with pytest.raises(ValueError, match="--mllm-tp-alpha"):
        optimizer(lambda r, i: "", alpha=2.0)


def test_warnings_are_summarized_by_reason_and_round() -> None:
    from pytest_mllm.tpeval.report import summarize_warnings

    lines = summarize_warnings([
        "round 1: reply 1 unusable: empty reply", "round 1: reply 2 unusable: empty reply",
        "round 1: the optimizer returned no usable prompt", "round 2: reply 1 unusable: contains a placeholder",
        "round 3: the optimizer returned no new prompt (2 repeated earlier ones)", "something else"])
    assert lines == ["3 optimizer replies unusable: empty reply (2); contains a placeholder (1)",
                     "no new usable prompt in round(s) 1, 3", "something else"]
