"""`category_mean`: an l2-category's accuracy as the mean of its categories' accuracies, as
MMT-Bench's report (VLMEvalKit's `report_acc_MMT`) gives each of its 32 meta-tasks: every
subtask (category) weighs the same, however many questions it has. A subtask's accuracy is over
all its questions in the benchmark, as there: a subtask name that two meta-tasks share counts
every question of that name in each. Overall and per-category accuracy stay the plain `accuracy`
over questions, as there."""

from __future__ import annotations

from collections import defaultdict

from pytest_mllm.record import Record
from pytest_mllm.scoring.catalogue_templates import MCQ_PROMPT, MCQ_READ, catalogue_template
from pytest_mllm.scoring.metrics import Scope, ScopeView, accuracy, metric


@metric("category_mean", requires=("category",), keys=("category_mean_accuracy",))
def scope_category_mean(scope: ScopeView) -> Scope:
    """`category_mean_accuracy` in each l2-category scope: the mean over its categories' accuracies."""
    if scope.kind != "l2_category":
        return {}
    names = {record.get("category") or "" for record in scope.scored}
    if not names:
        return {}
    by_category: dict[str, list[Record]] = defaultdict(list)
    for record in scope.benchmark or scope.scored:
        if record["status"] != "error" and (record.get("category") or "") in names:
            by_category[record.get("category") or ""].append(record)
    return {"category_mean_accuracy": sum(accuracy(rs) for rs in by_category.values()) / len(by_category)}


catalogue_template(
    "mcq_mmt", label="multiple choice, MMT-Bench report", parser="choice", prompt=MCQ_PROMPT, max_new_tokens=8,
    scored_by=f"{MCQ_READ}; accuracy overall and per subtask (the tasks), each meta-task the mean of its subtasks'",
    metrics=("accuracy", "category", "category_mean"), loader_options={"task_column": "category"})
