"""TP-Eval's optimization summary shows each task's D_few size and source (tpeval/report.py)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from pytest_mllm.tpeval.report import optimization_table
from pytest_mllm.tpeval.run import task_prompts


def outcome(task: str, size: int, source: str, mode: str = "prompt") -> dict:
    ids = [f"{task}-{i}" for i in range(size)]
    prompts = {"mode": mode, "original": "Answer.", "optimized": "Answer briefly.", "template": "{question} x",
               "d_few_size": size, "d_few_source": source, "d_few": ids,
               "history": [{"round": 0, "prompt": "Answer.", "accuracy": 0.5, "similarity": 1.0, "score": 0.6}]}
    return {"task": task, "already": False, "prompts": prompts, "warnings": [], "benchmark": "b",
            "d_few_size": size, "d_few_source": source, "calls_made": {"optimizer": 3, "scorer": 40}}


def render(outcomes: list[dict], width: int = 200) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(optimization_table(outcomes))
    return out.getvalue()


def test_the_summary_names_d_few_size_and_source() -> None:
    text = render([outcome("count", 20, "validation"), outcome("color", 15, "half of dev+val"),
                   outcome("shape", 0, "", mode="zero-shot")])
    assert "D_few" in text
    assert "count: (D_few: 20 validation)" in text and "color: (D_few: 15 half of dev+val)" in text
    assert "shape: Answer briefly." in text  # zero-shot: no D_few
    narrow = render([outcome("existence", 4, "seeded")], width=80)
    assert "existence: (D_few: 4 seeded)" in narrow


def test_task_prompts_accepts_the_outcome_json() -> None:
    back = task_prompts(outcome("count", 3, "seeded")["prompts"])
    assert back.d_few_size == 3 and back.d_few_source == "seeded"


def paired(task: str, original: bool, optimized: bool) -> dict:
    return {"task": task, "status": "correct" if optimized else "incorrect", "correct": optimized,
            "original": {"status": "correct" if original else "incorrect", "correct": original}}


def test_table_2_ratio_is_the_gain_on_improved_tasks() -> None:
    from pytest_mllm.tpeval.report import tp_metrics

    records = ([paired("a", False, True)] + [paired("a", True, True)] * 3     # a: 3/4 → 4/4, improved
               + [paired("b", True, False)] + [paired("b", True, True)] * 3  # b: 4/4 → 3/4, worse
               + [paired("c", False, False)] * 4)                             # c: 0 → 0
    m = tp_metrics(records)
    assert m["improved_tasks"] == 1 and m["worse_tasks"] == 1
    assert m["improved_tasks_ratio"] == pytest.approx(1 / 3)  # on the improved task only: 3 right → 4 right
    assert m["improvement_ratio"] == 0.0  # overall 7/12 → 7/12
    assert m["tasks"]["a"]["ratio"] == pytest.approx(4 / 3) and m["tasks"]["c"]["ratio"] is None  # Fig. 3: optimized / original
    assert tp_metrics([paired("c", False, False)])["improved_tasks_ratio"] is None
