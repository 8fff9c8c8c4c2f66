"""Per task, the few examples prompts are optimized on (D_few) and the rest they are tested on (D_test).

TP-Eval (§5.1) takes D_few from the benchmark itself: on MMT-S "the officially designated
validation set", about 20 samples per task, tested on the rest; on MMMU, which has no test
answers, "the development and validation sets" combined, half of them as D_few. Sources:

* "validation" — the task's validation samples (split validation, val or dev):
  - with test samples (split test) in the task: D_few is the validation samples (all of them,
    or the first `few` when `few` > 0), D_test the test samples ("validation");
  - without test samples (MMMU's dev+val): half of the validation samples (or `few` when
    `few` > 0), drawn seeded as below, are D_few and the other half D_test ("half of dev+val").
* "seeded" — drawn from all of the task's samples with ``random.Random(f"{seed}:{task}")``
  (a string seed, so the draw is the same in every process whatever PYTHONHASHSEED is):
  `few` samples, or with `few` = 0 the paper's MMT-S size `PAPER_FEW` (20) but at most half
  the task; D_test is the rest, in their original order. Samples sharing a `pair_group`
  (MME's two questions per image) are drawn together, whole groups until D_few holds at least
  the size asked, so a pair is never split.
* "auto" — "validation" when the task has validation samples, else "seeded".

`few` = 0 (the default of `TpSettings`) means "the paper's size" in every source.
`split_task_with_source` also says which source was used (`SOURCE_LABELS`), for the reports.
A task that leaves nothing to test raises `FewShotError` for that task alone: use
`split_task` per task, or pass an `errors` dict to `few_split`.
"""

from __future__ import annotations

import random
from typing import Sequence

from pytest_mllm.sample import Sample

SOURCES = ("auto", "validation", "seeded")
VALIDATION_SPLITS = ("validation", "val", "dev")
PAPER_FEW = 20  # TP-Eval §5.1: MMT-S's validation split holds "roughly 20 samples per task"
# what `split_task_with_source` reports as the D_few source actually used
FROM_VALIDATION, FROM_DEV_VAL_HALF, FROM_SEEDED = "validation", "half of dev+val", "seeded"
SOURCE_LABELS = (FROM_VALIDATION, FROM_DEV_VAL_HALF, FROM_SEEDED)


class FewShotError(Exception):
    """A task has too few samples to give both D_few and D_test; the message says how to fix it."""

    def __init__(self, task: str, needed: int, available: int, detail: str = "", fix: str = "") -> None:
        self.task, self.needed, self.available = task, needed, available
        self._args = (task, needed, available, detail, fix)
        why = detail or (f"it has {available} sample{'s' * (available != 1)}, and D_few plus at least one "
                         f"test sample needs {needed}")
        if not fix:
            smaller = (f"pass a smaller --mllm-tp-few=N (at most {available - 1})" if available >= 2
                       else "give the task at least 2 samples")
            fix = f"{smaller}, or add validation samples to the task (split: validation) to draw D_few from"
        super().__init__(f"task {task!r} cannot be split into D_few and D_test: {why}; fix: {fix}")

    def __reduce__(self) -> tuple[type, tuple[object, ...]]:  # picklable, e.g. across xdist workers
        return (type(self), self._args)


def _is_validation(sample: Sample) -> bool:
    return sample.split.lower() in VALIDATION_SPLITS


def _seeded(task: str, samples: Sequence[Sample], few: int, seed: int) -> tuple[list[Sample], list[Sample]]:
    if len(samples) < few + 1:
        raise FewShotError(task, few + 1, len(samples))
    groups: dict[str, list[int]] = {}
    for i, sample in enumerate(samples):
        groups.setdefault(sample.pair_group if sample.pair_group is not None else f"\0{i}", []).append(i)
    order = list(groups.values())
    random.Random(f"{seed}:{task}").shuffle(order)
    chosen: set[int] = set()
    for members in order:
        if len(chosen) >= few:
            break
        chosen.update(members)
    if len(chosen) == len(samples):
        raise FewShotError(task, few + 1, len(samples),
                           f"drawing whole pair groups for {few} examples takes all {len(samples)} samples")
    return ([s for i, s in enumerate(samples) if i in chosen], [s for i, s in enumerate(samples) if i not in chosen])


def split_task_with_source(task: str, samples: Sequence[Sample], *, few: int, seed: int,
                           source: str = "auto") -> tuple[list[Sample], list[Sample], str]:
    """(D_few, D_test, the source used: one of SOURCE_LABELS); FewShotError when nothing would be left to test."""
    if source not in SOURCES:
        raise ValueError(f"D_few source must be one of {', '.join(SOURCES)}; got {source!r}")
    if not isinstance(few, int) or isinstance(few, bool) or few < 0:
        raise ValueError(f"--mllm-tp-few must be 0 (the paper's D_few size) or more; got {few!r}")
    validation = [s for s in samples if _is_validation(s)]
    if source == "validation" or (source == "auto" and validation):
        if not validation:
            raise FewShotError(task, 1, 0, "it has no validation samples (split: validation, val or dev)",
                               "add validation samples, or draw D_few from the test samples (source auto/seeded)")
        test = [s for s in samples if s.split.lower() == "test"]
        if test:
            return (validation[:few] if few else validation), test, FROM_VALIDATION
        # MMMU's recipe: no test answers, so half of dev+val is D_few and the other half D_test
        if len(validation) < 2:
            raise FewShotError(task, 2, len(validation),
                               f"it has {len(validation)} validation sample and no test samples; half of dev+val "
                               "as D_few needs at least 2",
                               "add test samples (split: test) or more validation samples to the task")
        size = few or max(1, len(validation) // 2)
        d_few, d_test = _seeded(task, validation, size, seed)
        return d_few, d_test, FROM_DEV_VAL_HALF
    size = few or max(1, min(PAPER_FEW, len(samples) // 2))
    d_few, d_test = _seeded(task, samples, size, seed)
    return d_few, d_test, FROM_SEEDED


def split_task(task: str, samples: Sequence[Sample], *, few: int, seed: int,
               source: str = "auto") -> tuple[list[Sample], list[Sample]]:
    """(D_few, D_test) for one task's samples; FewShotError when nothing would be left to test."""
    d_few, d_test, _ = split_task_with_source(task, samples, few=few, seed=seed, source=source)
    return d_few, d_test


def few_split(samples: Sequence[Sample], *, few: int, seed: int, source: str = "auto",
              errors: dict[str, FewShotError] | None = None,
              ) -> tuple[dict[str, list[Sample]], dict[str, list[Sample]]]:
    """D_few and D_test per task (tasks in order of first appearance).

    Without `errors` the first FewShotError is raised; with it, each failing task is
    recorded there and left out of both dicts, and the other tasks are split as usual.
    """
    by_task: dict[str, list[Sample]] = {}
    for sample in samples:
        by_task.setdefault(sample.task, []).append(sample)
    d_few: dict[str, list[Sample]] = {}
    d_test: dict[str, list[Sample]] = {}
    for task, members in by_task.items():
        try:
            d_few[task], d_test[task] = split_task(task, members, few=few, seed=seed, source=source)
        except FewShotError as exc:
            if errors is None:
                raise
            errors[task] = exc
    return d_few, d_test
