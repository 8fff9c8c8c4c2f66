"""TP-Eval in the plugin: --mllm-optimize writes per-task prompts, --mllm-prompts evaluates with them.

Two fault injectors make the numbers exact (a real model cannot be made to react to one word,
nor a real optimizer to fail on demand): a model under test that answers right only when its
prompt says "carefully", and an optimizer on loopback that replays a script of replies. The
run against real models (SmolLM2 as optimizer, the tiny LLaVA under test) is in
test_tp_eval_real.py.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

pytest.importorskip("sentence_transformers", reason="needs the tpeval extra: pip install 'pytest-mllm[tpeval]'")

from chat_stub import ChatStub  # noqa: E402

PROMPT_SENSITIVE_MODEL = '''
from pytest_mllm.sample import Response


class PromptSensitive:
    """Fault injector: the right answer when the prompt says "carefully", a wrong one otherwise."""

    name = "prompt-sensitive"
    needs_images = False

    def generate(self, requests):
        wrong = {"Yes": "No", "No": "Yes"}
        return [Response(r.sample.answer if "carefully" in r.prompt.lower()
                         else wrong.get(r.sample.answer, "Z")) for r in requests]


def pytest_mllm_make_model(spec, config):
    return PromptSensitive() if spec == "prompt-sensitive" else None
'''


class ScriptedOptimizer:
    """Fault injector behind a ChatStub: meta-prompts get the next scripted reply, introspection
    requests a fixed one."""

    def __init__(self, stub: ChatStub | None = None) -> None:
        self.script = [
            "<prompt>Answer the questions about existence carefully</prompt>",  # round 1, draw 1: usable
            "Sure! {question}",  # round 1, draw 2: a placeholder, unusable
            "",  # round 2: nothing usable at all
            "   ",
        ]
        self.meta_calls = 0
        self.stub = stub

    def __call__(self, body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        if "Write ONE new prompt" in text or "improve the prompt of a new task" in text:
            self.meta_calls += 1
            return self.script[(self.meta_calls - 1) % len(self.script)]
        return "The model answers the opposite of the truth; the prompt should ask for care."

    @property
    def calls(self) -> int:
        return self.stub.calls if self.stub else 0

    @property
    def base_url(self) -> str:
        return self.stub.base_url if self.stub else ""


@pytest.fixture
def optimizer() -> Iterator[ScriptedOptimizer]:
    scripted = ScriptedOptimizer()
    with ChatStub(scripted) as stub:
        scripted.stub = stub
        yield scripted


def _optimize(pytester: pytest.Pytester, optimizer: ScriptedOptimizer, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes", "-k", "existence",
        "--mllm-optimize=prompts.yaml", "--mllm-optimizer=openai:scripted",
        f"--mllm-optimizer-base-url={optimizer.base_url}",
        "--mllm-tp-rounds=2", "--mllm-tp-per-round=2", "--mllm-tp-few=4", "--mllm-concurrency=1",
        f"--mllm-cache-dir={pytester.path / 'cache'}", *args)


def test_optimization_writes_the_prompt_the_model_does_best_with(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    result = _optimize(pytester, optimizer)
    out = result.stdout.str()
    assert result.ret == 0, out + result.stderr.str()
    # the plan comes before anything runs: 2 rounds × 2 prompts, D_few of 4
    plan = next(line for line in out.splitlines() if line.startswith("TP-Eval shapes:"))
    assert "1 task(s) to optimize" in plan and "N=2 rounds × M=2 prompts, D_few=4" in plan
    assert out.index("TP-Eval shapes:") < out.index("TP-Eval existence: round 0/2")
    assert "warning: shapes::existence: 3 optimizer replies unusable: empty reply (2); contains a placeholder" in out
    assert "warning: shapes::existence: no new usable prompt in round(s) 2" in out

    document = yaml.safe_load((pytester.path / "prompts.yaml").read_text())
    assert (document["model"], document["benchmark"], document["benchmark_version"]) == ("prompt-sensitive", "shapes", "1")
    task = document["tasks"]["existence"]
    assert task["mode"] == "prefix"  # the question is the whole prompt: a phrase before it is optimized
    assert task["original"] == "Answer the questions about existence"
    assert task["optimized"] == "Answer the questions about existence carefully"
    assert task["template"] == "Answer the questions about existence carefully\n{question}"
    assert len(task["d_few"]) == 4 and all(i.startswith("existence::") for i in task["d_few"])
    assert (task["d_few_size"], task["d_few_source"]) == (4, "seeded")  # shapes has no validation split
    assert re.search(r"existence\S*\s+│\s+prefix\s+│\s+4\s+│", out)  # the summary table: D_few's size
    assert "existence: (D_few: 4 seeded) Answer the questions about existence carefully" in out  # and its source
    rounds = [(h["round"], h["prompt"], h["accuracy"]) for h in task["history"]]
    assert rounds == [(0, "Answer the questions about existence", 0.0),
                      (1, "Answer the questions about existence carefully", 1.0)]
    first = task["history"][1]
    assert first["score"] == pytest.approx(0.8 * 1.0 + 0.2 * first["similarity"])
    assert task["history"][0]["introspection"]  # wrong answers under the original were explained
    # the optimizer was asked 4 prompts (2 rounds × 2) and 1 introspection (the original's; the winner has no
    # wrong answer); the model answered D_few twice (original and one usable candidate)
    assert (optimizer.meta_calls, optimizer.calls) == (4, 5)
    assert "TP-Eval existence: round 2/2 · calls made: optimizer 5, model 8" in out


def test_an_interrupted_optimization_is_replayed_from_the_cache(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    written = (pytester.path / "prompts.yaml").read_text()
    calls = optimizer.calls
    # a finished task is not redone
    again = _optimize(pytester, optimizer)
    assert again.ret == 0 and optimizer.calls == calls
    assert "0 task(s) to optimize (1 already in prompts.yaml)" in again.stdout.str()
    # a run that died before writing the file: every optimizer reply comes back from the cache
    (pytester.path / "prompts.yaml").unlink()
    resumed = _optimize(pytester, optimizer)
    assert resumed.ret == 0 and optimizer.calls == calls, resumed.stdout.str()
    # the model under test here is not cacheable; the optimizer's replies are
    assert "TP-Eval existence: round 2/2 · calls made: optimizer 0, model 8" in resumed.stdout.str()
    assert yaml.safe_load((pytester.path / "prompts.yaml").read_text()) == yaml.safe_load(written)


def test_evaluation_with_the_prompts_reports_original_vs_customized_on_unseen_samples(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    few = set(yaml.safe_load((pytester.path / "prompts.yaml").read_text())["tasks"]["existence"]["d_few"])
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes", "-k", "existence",
        "--mllm-prompts=prompts.yaml", "--mllm-json=out.json")
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "76 passed, 284 deselected" in out  # 280 other tasks + the 4 D_few samples
    document = json.loads((pytester.path / "out.json").read_text())
    scored = {r["id"] for r in document["records"]}
    assert len(scored) == 76 and not few & scored
    tp = document["benchmarks"]["shapes"]["scopes"]["tp_eval"]
    assert tp["tasks"]["existence"] == {"samples": 76, "original_accuracy": 0.0, "optimized_accuracy": 1.0, "delta": 1.0,
                                        "ratio": None}  # optimized / original: none from an original of 0
    assert (tp["improved_tasks"], tp["task_count"], tp["improvement_ratio"]) == (1, 1, None)
    assert tp["improved_tasks_ratio"] is None  # the gain on improved tasks, relative to 0 right
    record = document["records"][0]
    assert record["prompt"].startswith("Answer the questions about existence carefully\n")
    assert record["original"]["prompt"] == record["question"] and record["original"]["correct"] is False
    assert "TP-Eval: benchmark prompt vs customized prompt" in out and "improved tasks 1/1" in out


def test_transfer_evaluates_another_model_with_these_prompts_only_when_asked(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    refused = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                            "-k", "existence", "--mllm-prompts=prompts.yaml")
    assert refused.ret != 0
    refused.stdout.fnmatch_lines(["*prompt-sensitive*baseline:yes*--mllm-prompts-transfer*"])
    moved = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                          "-k", "existence", "--mllm-prompts=prompts.yaml", "--mllm-prompts-transfer",
                                          "--mllm-json=out.json")
    assert moved.ret == 0, moved.stdout.str()
    document = json.loads((pytester.path / "out.json").read_text())
    assert document["settings"]["prompts_model"] == "prompt-sensitive"
    tp = document["benchmarks"]["shapes"]["scopes"]["tp_eval"]
    # "yes" to everything is 50 % right under either prompt
    assert tp["original_accuracy"] == tp["optimized_accuracy"] == 0.5 and tp["improved_tasks"] == 0


def test_zero_shot_mode_writes_prompts_for_new_tasks_from_the_optimized_ones(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    optimizer.script = ["<prompt>Answer the questions about color carefully</prompt>"]
    optimizer.meta_calls = 0
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes", "-k", "color",
        "--mllm-optimize=prompts.yaml", "--mllm-optimizer=openai:scripted",
        f"--mllm-optimizer-base-url={optimizer.base_url}",
        "--mllm-tp-rounds=2", "--mllm-tp-per-round=2", "--mllm-tp-few=4", "--mllm-tp-zero-shot",
        f"--mllm-cache-dir={pytester.path / 'cache'}")
    assert result.ret == 0, result.stdout.str()
    tasks = yaml.safe_load((pytester.path / "prompts.yaml").read_text())["tasks"]
    assert set(tasks) == {"existence", "color"}
    assert tasks["color"]["mode"] == "zero-shot" and tasks["color"]["d_few"] == [] and tasks["color"]["history"] == []
    assert tasks["color"]["optimized"] == "Answer the questions about color carefully"
    assert optimizer.meta_calls == 2  # M draws of one zero-shot request, no scoring


def test_prompt_mode_edits_the_instruction_of_a_multiple_choice_task(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    optimizer.script = ["<prompt>Look carefully, then answer with the option's letter.</prompt>"]
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes", "-k", "choice",
        "--mllm-optimize=prompts.yaml", "--mllm-optimizer=openai:scripted",
        f"--mllm-optimizer-base-url={optimizer.base_url}",
        "--mllm-tp-rounds=1", "--mllm-tp-per-round=1", "--mllm-tp-few=4", f"--mllm-cache-dir={pytester.path / 'c'}")
    assert result.ret == 0, result.stdout.str()
    task = yaml.safe_load((pytester.path / "prompts.yaml").read_text())["tasks"]["choice"]
    assert task["mode"] == "prompt"
    assert task["original"] == "Answer with the option's letter from the given choices directly."
    assert task["template"] == "{question}\n{options}\nLook carefully, then answer with the option's letter."


# -- bad input ---------------------------------------------------------------------------------


def test_a_task_with_fewer_examples_than_d_few_needs_errors_alone(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes", "-k", "existence or choice",
        "--mllm-optimize=prompts.yaml", "--mllm-optimizer=openai:scripted",
        f"--mllm-optimizer-base-url={optimizer.base_url}",
        "--mllm-tp-rounds=1", "--mllm-tp-per-round=1", "--mllm-tp-few=50", f"--mllm-cache-dir={pytester.path / 'c'}")
    out = result.stdout.str()
    assert result.ret == 1, out
    result.assert_outcomes(passed=1, failed=1)
    assert "choice" in out and "--mllm-tp-few" in out  # 40 multiple-choice samples cannot give 50 + a test split
    assert set(yaml.safe_load((pytester.path / "prompts.yaml").read_text())["tasks"]) == {"existence"}


def test_an_optimizer_with_nothing_usable_keeps_the_original_prompt(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    optimizer.script = ["", "I cannot help with that {question}", "<prompt></prompt>"]
    result = _optimize(pytester, optimizer)
    out = result.stdout.str()
    assert result.ret == 0, out
    assert "warning: shapes::existence: no new usable prompt in round(s) 1, 2" in out
    task = yaml.safe_load((pytester.path / "prompts.yaml").read_text())["tasks"]["existence"]
    assert task["optimized"] == task["original"] and [h["round"] for h in task["history"]] == [0]


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(model="llava-1.5-7b"), "*llava-1.5-7b*prompt-sensitive*--mllm-prompts-transfer*"),
    (lambda d: d.update(benchmark_version="0"), "*version*0*1*"),
    (lambda d: d["tasks"].update(sizes=d["tasks"]["existence"]), "*sizes*"),
    (lambda d: d.update(benchmark="mme"), "*mme*shapes*"),
])
def test_a_prompts_file_that_does_not_fit_is_a_clear_error(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer, edit: object, message: str) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    document = yaml.safe_load((pytester.path / "prompts.yaml").read_text())
    edit(document)  # type: ignore[operator]
    (pytester.path / "other.yaml").write_text(yaml.safe_dump(document))
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=prompt-sensitive", "--mllm-bench=shapes",
                                           "-k", "existence", "--mllm-prompts=other.yaml")
    assert result.ret not in (0, 1)
    result.stdout.fnmatch_lines([message])
    assert "other.yaml" in result.stdout.str()


def test_a_prompts_file_with_other_settings_is_never_overwritten(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    assert _optimize(pytester, optimizer).ret == 0
    written = (pytester.path / "prompts.yaml").read_text()
    result = _optimize(pytester, optimizer, "--mllm-tp-rounds=1")  # the later option wins
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*prompts.yaml holds prompts optimized with other settings (rounds differ)*"])
    assert (pytester.path / "prompts.yaml").read_text() == written


def test_optimize_needs_an_optimizer(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                           "--mllm-optimize=p.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mllm-optimize needs an optimizer LLM*--mllm-optimizer=openai:MODEL*"])


def test_a_bad_setting_names_its_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                           "--mllm-tp-alpha=1.5")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--mllm-tp-alpha*"])


def test_the_prompts_file_never_holds_an_api_key(
        pytester: pytest.Pytester, optimizer: ScriptedOptimizer, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeconftest(PROMPT_SENSITIVE_MODEL)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-should-not-leak")
    assert _optimize(pytester, optimizer).ret == 0
    for path in [pytester.path / "prompts.yaml", *Path(pytester.path / "cache").glob("*")]:
        assert b"sk-secret-should-not-leak" not in path.read_bytes()
