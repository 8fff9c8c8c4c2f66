"""TP-Eval inside a pytest run (`--mllm-optimize=FILE`): one test per task, prompts written task by task.

The scorer is the run's evaluator (the model under test, batched and cached), the
optimizer a `CachedProposer` over an OpenAI-compatible endpoint, the similarity
all-MiniLM-L6-v2. Each finished task is merged into the prompts file at once, so an
interrupted run keeps what it finished and replays the rest from the cache.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.engine.spec import BenchmarkSpec, TaskSettings
from pytest_mllm.models.ref import ModelRef
from pytest_mllm.record import MessageOnly, Record
from pytest_mllm.sample import Sample
from pytest_mllm.tpeval.counter import edit_start
from pytest_mllm.tpeval.metaprompt import Example
from pytest_mllm.tpeval.optimizer import TaskOptimizer, planned_calls
from pytest_mllm.tpeval.prompts_file import (
    PromptsFile,
    PromptsFileError,
    TaskPrompts,
    read_prompts,
    write_prompts,
)
from pytest_mllm.tpeval.score import Candidate
from pytest_mllm.tpeval.settings import TpSettings
from pytest_mllm.tpeval.slot import PromptSlot
from pytest_mllm.tpeval.split import PAPER_FEW, FewShotError, split_task_with_source
from pytest_mllm.tpeval.zero_shot import zero_shot_prompt

Answer = Callable[[Sequence[tuple[Sample, BenchmarkSpec]]], list[Record]]


@dataclasses.dataclass(frozen=True)
class OptimizationSettings:
    """An optimization run: where its prompts go, the optimizer LLM, the search settings."""

    path: Path  # the prompts file, written task by task
    optimizer: str  # "openai:<model>"
    endpoint: Endpoint
    search: TpSettings
    max_tokens: int = 256
    split: str = "auto"  # D_few from the validation split, or a seeded draw
    zero_shot: bool = False


class OptimizationError(MessageOnly):
    """A task cannot be optimized (too few examples, a model that only errors); it errors alone."""


def with_template(spec: BenchmarkSpec, task: str, template: str) -> BenchmarkSpec:
    """`spec` with `task` asked through `template` (its parser unchanged)."""
    parser = spec.task_settings(task).parser
    return dataclasses.replace(spec, tasks={**spec.tasks, task: TaskSettings(parser=parser, prompt=template)})


def task_prompts(raw: dict[str, Any]) -> TaskPrompts:
    """A task's prompts back from the plain dict that crossed from a worker."""
    fields = {k: v for k, v in raw.items() if k != "d_few_size"}  # derived from d_few
    return TaskPrompts(**{**fields, "history": [Candidate.from_dict(c) for c in raw["history"]]})


def task_order(samples: Sequence[Any]) -> list[str]:
    """Tasks in the order their first sample appears."""
    return list(dict.fromkeys(s.task for s in samples))


class OptimizationRun:
    """Per-process state of an optimization: settings, the optimizer, the similarity model, splits."""

    def __init__(self, settings: OptimizationSettings, *, model: str, answer: Answer, cache: Any) -> None:
        """`answer` scores samples with the model under test (batched, cached); `cache` keeps optimizer replies."""
        self.model = model
        self.settings: TpSettings = settings.search
        self.split_source = settings.split
        self.zero_shot = settings.zero_shot
        self.path = settings.path
        self._optimizer = settings
        self._answer = answer
        self._cache = cache
        self._proposer: Any = None
        self._similarity: Any = None

    # -- as the evaluation core's task job (`evaluation.TaskJob`): one test per task ----------------

    name = "optimize"  # the tests: <benchmark>::optimize::<task>
    title = "TP-Eval"
    calls: tuple[str, ...] = ("optimizer", "scorer")  # the optimizer's calls, the model's answers

    def calls_text(self, counts: Mapping[str, int], bar: bool = False) -> str:
        """The calls made so far, in words."""
        if bar:
            return f"optimizer calls {counts['optimizer']} · model answers {counts['scorer']}"
        return f"calls made: optimizer {counts['optimizer']}, model {counts['scorer']}"

    @property
    def steps(self) -> int:
        """Rounds per task, for its progress (none in zero-shot mode)."""
        return 0 if self.zero_shot else self.settings.rounds

    def run_task(self, spec: BenchmarkSpec, task: str, samples: Sequence[Sample],
                 progress: Callable[[str, int], None]) -> dict[str, Any]:
        """Optimize the task's prompt (`optimize`)."""
        return self.optimize(spec, task, samples, progress)

    def task_finished(self, spec: BenchmarkSpec, outcome: dict[str, Any]) -> None:
        """A finished task's prompts merged into the prompts file as its outcome arrives."""
        if not outcome["already"]:
            self.save(spec, outcome["task"], task_prompts(outcome["prompts"]))

    def summary(self, outcomes: Sequence[dict[str, Any]]) -> tuple[str, list[Any], list[str], list[str]]:
        """The optimized tasks' table, their warnings and where the prompts went (`report.optimization_summary`)."""
        from pytest_mllm.tpeval.report import optimization_summary

        return optimization_summary(outcomes, self.path)

    # -- the parts, built on first use ---------------------------------------------------------

    @property
    def proposer(self) -> Any:
        if self._proposer is None:
            from pytest_mllm.tpeval.proposer import CachedProposer

            o = self._optimizer
            self._proposer = CachedProposer(o.endpoint.client(), ModelRef.parse(o.optimizer).served_name,
                                            identity=f"{o.optimizer}@{o.endpoint.url}", max_tokens=o.max_tokens,
                                            cache=self._cache)
        return self._proposer

    @property
    def similarity(self) -> Callable[[str, str], float]:
        if self._similarity is None:
            from pytest_mllm.tpeval.similarity import Similarity

            self._similarity = Similarity()
        return self._similarity

    # -- splits and plans ----------------------------------------------------------------------

    def split(self, task: str, samples: Sequence[Sample]) -> tuple[list[Sample], list[Sample]]:
        """D_few and D_test of one task's samples; too few raise OptimizationError for that task alone."""
        few, test, _ = self.split_with_source(task, samples)
        return few, test

    def split_with_source(self, task: str, samples: Sequence[Sample]) -> tuple[list[Sample], list[Sample], str]:
        """`split`, plus where D_few came from (validation, half of dev+val, seeded)."""
        try:
            return split_task_with_source(task, samples, few=self.settings.few, seed=self.settings.seed,
                                          source=self.split_source)
        except FewShotError as exc:
            raise OptimizationError(str(exc)) from None

    def plan_lines(self, selected: Sequence[tuple[BenchmarkSpec, str]]) -> list[str]:
        """What optimizing the selected (benchmark, task) pairs will cost at most, printed before it starts."""
        lines = []
        for spec in {spec.name: spec for spec, _ in selected}.values():
            tasks = [task for s, task in selected if s.name == spec.name]
            done = self._finished_tasks(spec)
            todo = [t for t in tasks if t not in done]
            if self.zero_shot:
                lines.append(f"TP-Eval {spec.name}: {len(todo)} task(s) zero-shot from {len(done)} optimized task(s): "
                             f"at most {len(todo) * self.settings.per_round} optimizer calls, no model answers")
                continue
            head = (f"TP-Eval {spec.name}: {len(todo)} task(s) to optimize ({len(tasks) - len(todo)} already in "
                    f"{self.path}); N={self.settings.rounds} rounds × M={self.settings.per_round} prompts, ")
            if self.settings.few:
                calls = planned_calls(self.settings, self.settings.few)
                lines.append(head + f"D_few={self.settings.few}: at most {calls['optimizer'] * len(todo)} optimizer "
                             f"calls and {calls['scorer'] * len(todo)} model answers (stored answers are replayed free)")
            else:  # the paper's D_few: its size depends on each task's splits
                calls = planned_calls(self.settings, 1)
                lines.append(head + f"D_few=the paper's (validation split; half of dev+val without test answers; "
                             f"else {PAPER_FEW} drawn): at most {calls['optimizer'] * len(todo)} optimizer calls and "
                             f"{calls['scorer']} × |D_few| model answers per task (stored answers are replayed free)")
        return lines

    # -- the prompts file ----------------------------------------------------------------------

    def _existing(self, spec: BenchmarkSpec) -> PromptsFile | None:
        """The prompts file this run adds to; one written for another model, benchmark version or settings
        is never overwritten (PromptsFileError instead)."""
        if not self.path.exists():
            return None
        existing = read_prompts(self.path)
        mine = (self.model, spec.name, spec.version)
        if (existing.model, existing.benchmark, existing.benchmark_version) != mine:
            raise PromptsFileError(
                f"{self.path} holds prompts of model {existing.model!r} for benchmark {existing.benchmark!r} "
                f"version {existing.benchmark_version!r}; this run optimizes {mine[0]!r} on {mine[1]!r} version "
                f"{mine[2]!r}: choose another --mllm-optimize path")
        changed = sorted(k for k in {*existing.settings, *self.settings_dict()}
                         if existing.settings.get(k) != self.settings_dict().get(k))
        if existing.tasks and changed:
            raise PromptsFileError(
                f"{self.path} holds prompts optimized with other settings ({', '.join(changed)} differ); "
                "run with the same --mllm-tp-* settings to add tasks, or choose another --mllm-optimize path")
        return existing

    def _finished_tasks(self, spec: BenchmarkSpec) -> dict[str, TaskPrompts]:
        existing = self._existing(spec)
        return dict(existing.tasks) if existing is not None else {}

    def settings_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self.settings), "split": self.split_source}

    def save(self, spec: BenchmarkSpec, task: str, prompts: TaskPrompts) -> None:
        """Merge one finished task into the prompts file (atomically)."""
        tasks = self._finished_tasks(spec)
        tasks[task] = prompts
        write_prompts(self.path, PromptsFile(
            model=self.model, benchmark=spec.name, benchmark_version=spec.version,
            optimizer=self._optimizer.optimizer, settings=self.settings_dict(), tasks=tasks))

    # -- one task --------------------------------------------------------------------------------

    def optimize(self, spec: BenchmarkSpec, task: str, samples: Sequence[Sample],
                 progress: Callable[[str, int], None]) -> dict[str, Any]:
        """Optimize `task`'s prompt for the model under test on its `samples`; the result as the prompts
        file holds it."""
        done = self._finished_tasks(spec)
        if task in done:
            return {"task": task, "already": True, "prompts": done[task].as_dict(), "warnings": [],
                    "d_few_size": done[task].d_few_size, "d_few_source": done[task].d_few_source}
        original_template = spec.task_settings(task).prompt
        slot = PromptSlot.from_template(original_template, self.settings.mode, task)
        if self.zero_shot:
            return self._zero_shot(spec, task, slot, done)
        few, _, source = self.split_with_source(task, samples)
        evaluate = self._scorer(spec, task, few, progress)
        optimizer = TaskOptimizer(
            task=task, slot=slot, settings=self.settings, evaluate=evaluate, propose=self._counted(progress),
            similarity=self.similarity, examples=[Example(s.question, s.answer) for s in few],
            description=_describe(spec, task, few), on_progress=progress)
        outcome = optimizer.run()
        prompts = TaskPrompts(
            mode=slot.mode, original=slot.instruction, optimized=outcome.best.prompt,
            template=slot.render(outcome.best.prompt), d_few=[s.id for s in few],
            history=list(outcome.history), d_few_source=source)
        return {"task": task, "already": False, "prompts": prompts.as_dict(), "warnings": outcome.warnings,
                "d_few_size": len(few), "d_few_source": source}

    def _counted(self, progress: Callable[[str, int], None]) -> Callable[..., list[str | Exception]]:
        def propose(conversations: Sequence[Any], temperature: float) -> list[str | Exception]:
            before = self.proposer.made
            replies = self.proposer(conversations, temperature)
            progress("optimizer-made", self.proposer.made - before)
            return replies

        return propose

    def _scorer(self, spec: BenchmarkSpec, task: str, few: list[Sample],
                progress: Callable[[str, int], None]) -> Callable[[str], tuple[float, list[Example]]]:
        """template → (accuracy on D_few, the wrong answers); a model that answers nothing is an error."""

        def evaluate(template: str) -> tuple[float, list[Example]]:
            asked = with_template(spec, task, template)
            records = self._answer([(s, asked) for s in few])
            progress("scorer-made", sum(1 for r in records if not r["cached"] and r["status"] != "error"))
            answered = [r for r in records if r["status"] != "error"]
            if not answered:
                raise OptimizationError(f"task {task!r}: the model under test answered none of the {len(few)} D_few "
                                        f"samples; first error: {records[0]['error']}")
            wrong = [Example(r["question"], str(r["answer"]), r["response"]) for r in answered if not r["correct"]]
            return (len(answered) - len(wrong)) / len(answered), wrong

        return evaluate

    def _zero_shot(self, spec: BenchmarkSpec, task: str, slot: PromptSlot,
                   done: dict[str, TaskPrompts]) -> dict[str, Any]:
        if not done:
            raise OptimizationError(
                f"--mllm-tp-zero-shot needs optimized tasks as examples in {self.path}; optimize some tasks of "
                f"{spec.name!r} first (without --mllm-tp-zero-shot)")
        # TP-Eval §5.4: "previously successfully optimized examples": tasks whose chosen prompt is not the original
        examples = [(name, p.original, p.optimized) for name, p in done.items()
                    if p.mode != "zero-shot" and " ".join(p.optimized.split()) != " ".join(p.original.split())]
        if not examples:
            raise OptimizationError(
                f"--mllm-tp-zero-shot needs successfully optimized tasks (a chosen prompt other than the original) "
                f"as examples in {self.path}; none of its {len(done)} task(s) is one: optimize more tasks of "
                f"{spec.name!r} first (without --mllm-tp-zero-shot)")
        counter = edit_start(slot.instruction)  # one shot: the first round's budget
        chosen, warnings = zero_shot_prompt(task=task, original=slot.instruction, examples=examples, counter=counter,
                                            propose=self.proposer, settings=self.settings)
        prompts = TaskPrompts(mode="zero-shot", original=slot.instruction, optimized=chosen,
                              template=slot.render(chosen), d_few=[], history=[])
        return {"task": task, "already": False, "prompts": prompts.as_dict(), "warnings": warnings,
                "d_few_size": 0, "d_few_source": ""}


def _describe(spec: BenchmarkSpec, task: str, few: Sequence[Sample]) -> str:
    """What the optimizer is told about the task."""
    kind = {"yes_no": "answered yes or no", "choice": "multiple choice, answered with an option letter",
            "open": "open-ended"}.get(few[0].answer_type if few else "open", "open-ended")
    about = f" ({spec.description.strip()})" if spec.description.strip() else ""
    return f"Task {task!r} of the benchmark {spec.name}{about}: questions about an image, {kind}."
