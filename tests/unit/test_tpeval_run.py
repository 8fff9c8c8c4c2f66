"""OptimizationRun without a model: the D_few source and size it records, zero-shot's choice of examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.engine.endpoint import Endpoint
from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.sample import Sample
from pytest_mllm.tpeval.prompts_file import PromptsFile, TaskPrompts, write_prompts
from pytest_mllm.tpeval.run import OptimizationError, OptimizationRun, OptimizationSettings
from pytest_mllm.tpeval.settings import TpSettings


def make_run(path: Path, *, zero_shot: bool = False, few: int = 0) -> OptimizationRun:
    settings = OptimizationSettings(path=path, optimizer="openai:none", endpoint=Endpoint(base_url="http://127.0.0.1:9"),
                                    search=TpSettings(rounds=1, per_round=1, few=few), zero_shot=zero_shot)
    return OptimizationRun(settings, model="m", answer=lambda pairs: [], cache=None)


def sample(i: int, split: str) -> Sample:
    return Sample(id=f"t-{split}-{i}", benchmark="shapes", task="t", question=f"q{i}", answer="yes", split=split)


def test_split_reports_the_papers_source(tmp_path: Path) -> None:
    run = make_run(tmp_path / "p.yaml")
    mmt = [sample(i, "val") for i in range(20)] + [sample(i, "test") for i in range(50)]
    few, test, source = run.split_with_source("t", mmt)
    assert (len(few), len(test), source) == (20, 50, "validation")
    mmmu = [sample(i, "dev") for i in range(5)] + [sample(i, "validation") for i in range(5, 30)]
    few, test, source = run.split_with_source("t", mmmu)
    assert (len(few), len(test), source) == (15, 15, "half of dev+val")
    with pytest.raises(OptimizationError, match="'t'"):
        run.split("t", [sample(0, "test")])


def test_plan_names_the_papers_d_few(tmp_path: Path) -> None:
    spec = load_spec(find_spec("shapes"))
    lines = make_run(tmp_path / "p.yaml").plan_lines([(spec, "existence")])
    assert "D_few=the paper's" in lines[0] and "× |D_few| model answers per task" in lines[0]
    assert "D_few=4:" in make_run(tmp_path / "p.yaml", few=4).plan_lines([(spec, "existence")])[0]


def test_zero_shot_needs_a_successfully_optimized_task(tmp_path: Path) -> None:
    spec = load_spec(find_spec("shapes"))
    path = tmp_path / "p.yaml"
    unchanged = TaskPrompts(mode="prefix", original="Answer the questions about existence",
                            optimized="Answer the questions about existence",
                            template="Answer the questions about existence\n{question}", d_few=["a"])
    write_prompts(path, PromptsFile(model="m", benchmark=spec.name, benchmark_version=spec.version,
                                    settings={**TpSettings(rounds=1, per_round=1).as_dict(), "split": "auto"},
                                    tasks={"existence": unchanged}))
    run = make_run(path, zero_shot=True)
    with pytest.raises(OptimizationError, match="successfully optimized"):
        run.optimize(spec, "color", [], lambda event, n: None)
