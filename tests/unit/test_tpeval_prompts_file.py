"""The prompts file: round trip, atomic writes, every read error, the run checks, merging task by task."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pytest_mllm.tpeval.prompts_file import (
    FORMAT,
    PromptsFile,
    PromptsFileError,
    TaskPrompts,
    check_prompts,
    merge,
    read_prompts,
    update_prompts,
    write_prompts,
)
from pytest_mllm.tpeval.score import Candidate
from pytest_mllm.tpeval.settings import TpSettings


def task_prompts(optimized: str = "Answer yes or no only.") -> TaskPrompts:
    return TaskPrompts(
        mode="prompt", original="Please answer yes or no.", optimized=optimized,
        template="{question} " + optimized, d_few=["id1", "id2"],
        history=[Candidate(0, "Please answer yes or no.", 0.5, 1.0, 0.6, "says yes too often", 4),
                 Candidate(1, optimized, 0.75, 0.9, 0.78)])


def prompts(**tasks: TaskPrompts) -> PromptsFile:
    return PromptsFile(model="tiny-llava", benchmark="shapes", benchmark_version="1", optimizer="openai:SmolLM2",
                       settings=TpSettings().as_dict(), tasks=dict(tasks) or {"existence": task_prompts()})


def test_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "prompts.yaml"
    original = prompts(existence=task_prompts(), count=task_prompts('Count {{braces}} "quoted"\nlines.'))
    write_prompts(path, original)
    assert read_prompts(path) == original
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert raw["format"] == FORMAT and list(raw)[:2] == ["format", "model"]
    assert raw["tasks"]["existence"]["history"][0]["introspection"] == "says yes too often"
    assert [p.name for p in path.parent.iterdir()] == ["prompts.yaml"]  # no temporary file left behind


def test_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prompts.yaml"
    write_prompts(path, prompts())
    before = path.read_text(encoding="utf-8")

    def broken(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        write_prompts(path, prompts(other=task_prompts()))
    assert path.read_text(encoding="utf-8") == before
    assert [p.name for p in tmp_path.iterdir()] == ["prompts.yaml"]


def test_minimal_hand_written_file(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(f"format: {FORMAT}\nmodel: m\nbenchmark: b\nbenchmark_version: 2\n"
                    "tasks:\n  t:\n    template: '{question} Answer briefly.'\n", encoding="utf-8")
    pf = read_prompts(path)
    assert pf.benchmark_version == "2" and pf.optimizer == "" and pf.settings == {}
    assert pf.tasks["t"] == TaskPrompts("prompt", "", "", "{question} Answer briefly.")


GOOD = {"format": FORMAT, "model": "m", "benchmark": "b", "benchmark_version": "1",
        "tasks": {"t": {"template": "{question} x"}}}


def with_(**changes: object) -> dict:
    raw = {**GOOD, **changes}
    return {k: v for k, v in raw.items() if v is not ...}


@pytest.mark.parametrize("raw, field, words", [
    ([1, 2], None, "YAML mapping"),
    (with_(format=...), "format", "missing"),
    (with_(format="pytest-mllm-prompts/9"), "format", "pytest-mllm-prompts/9"),
    (with_(model=...), "model", "missing"),
    (with_(model=3), "model", "must be a string"),
    (with_(benchmark=...), "benchmark", "missing"),
    (with_(benchmark_version=...), "benchmark_version", "missing"),
    (with_(benchmark_version=["1"]), "benchmark_version", "quote"),
    (with_(optimizer=5), "optimizer", "must be a string"),
    (with_(settings=[1]), "settings", "mapping"),
    (with_(tasks=...), "tasks", "missing"),
    (with_(tasks=["t"]), "tasks", "must map task names"),
    (with_(tasks={"t": "{question}"}), "tasks.t", "template:"),
    (with_(tasks={"t": {"mode": "prompt"}}), "tasks.t.template", "missing"),
    (with_(tasks={"t": {"template": 7}}), "tasks.t.template", "must be a string"),
    (with_(tasks={"t": {"template": "{questoin} x"}}), "tasks.t.template", "placeholders"),
    (with_(tasks={"t": {"template": "{question} {"}}), "tasks.t.template", "{{"),
    (with_(tasks={"t": {"template": "x", "mode": "suffix"}}), "tasks.t.mode", "zero-shot"),
    (with_(tasks={"t": {"template": "x", "d_few": "id1"}}), "tasks.t.d_few", "list of sample ids"),
    (with_(tasks={"t": {"template": "x", "history": {"a": 1}}}), "tasks.t.history", "must be a list"),
    (with_(tasks={"t": {"template": "x", "history": [{"round": 0}]}}), "tasks.t.history[0]", "'prompt'"),
    (with_(tasks={"t": {"template": "x", "original": 1}}), "tasks.t.original", "must be a string"),
])
def test_read_errors_name_file_and_field(tmp_path: Path, raw: object, field: str | None, words: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(PromptsFileError) as info:
        read_prompts(path)
    message = str(info.value)
    assert str(path) in message and words in message
    if field:
        assert f"field {field!r}" in message


def test_not_yaml_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("format: [unclosed\n  - : :", encoding="utf-8")
    with pytest.raises(PromptsFileError, match="not valid YAML"):
        read_prompts(path)
    with pytest.raises(PromptsFileError, match="cannot read prompts file .*missing.yaml"):
        read_prompts(tmp_path / "missing.yaml")


def check(pf: PromptsFile, **changes: object) -> None:
    args: dict = {"path": "p.yaml", "model": "tiny-llava", "benchmark": "shapes", "version": "1",
                  "tasks": ["existence", "count"], "transfer": False, **changes}
    check_prompts(pf, **args)


def test_check_accepts_a_matching_file() -> None:
    check(prompts())


def test_check_other_model_names_both_and_the_transfer_option() -> None:
    with pytest.raises(PromptsFileError) as info:
        check(prompts(), model="qwen2-vl")
    message = str(info.value)
    assert "'tiny-llava'" in message and "'qwen2-vl'" in message and "--mllm-prompts-transfer" in message
    check(prompts(), model="qwen2-vl", transfer=True)


def test_check_other_benchmark_version_and_tasks() -> None:
    with pytest.raises(PromptsFileError, match="benchmark 'shapes'.*'mme'"):
        check(prompts(), benchmark="mme")
    with pytest.raises(PromptsFileError, match="version '1'.*version '2'"):
        check(prompts(), version="2")
    with pytest.raises(PromptsFileError, match="does not have: existence, ghost"):
        check(prompts(existence=task_prompts(), ghost=task_prompts(), count=task_prompts()), tasks=["count"])


def test_merge_replaces_in_place_and_appends() -> None:
    base = prompts(a=task_prompts("A1 text here."), b=task_prompts("B1 text here."))
    update = prompts(b=task_prompts("B2 text here."), c=task_prompts("C2 text here."))
    merged = merge(base, update)
    assert list(merged.tasks) == ["a", "b", "c"]
    assert merged.tasks["b"].optimized == "B2 text here." and merged.tasks["a"].optimized == "A1 text here."
    assert merge(None, update).tasks == update.tasks
    other = PromptsFile("other-model", "shapes", "1", tasks={})
    with pytest.raises(PromptsFileError, match="model 'other-model'"):
        merge(base, other)


def test_update_prompts_task_by_task(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    update_prompts(path, prompts(a=task_prompts("A text here.")))
    update_prompts(path, prompts(b=task_prompts("B text here.")))
    result = update_prompts(path, prompts(a=task_prompts("A again here.")))
    on_disk = read_prompts(path)
    assert on_disk == result
    assert list(on_disk.tasks) == ["a", "b"] and on_disk.tasks["a"].optimized == "A again here."
    with pytest.raises(PromptsFileError, match=str(path)):
        update_prompts(path, PromptsFile("other-model", "shapes", "1", tasks={}))


def test_d_few_size_and_source_are_written_and_read(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    task = task_prompts()
    task.d_few_source = "validation"
    write_prompts(path, prompts(existence=task))
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))["tasks"]["existence"]
    assert raw["d_few_size"] == 2 and raw["d_few_source"] == "validation"
    back = read_prompts(path).tasks["existence"]
    assert back.d_few_size == 2 and back.d_few_source == "validation"
    raw["d_few_size"] = 3  # a size that contradicts the ids
    bad = {**yaml.safe_load(path.read_text(encoding="utf-8")), "tasks": {"existence": raw}}
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    with pytest.raises(PromptsFileError, match="tasks.existence.d_few_size"):
        read_prompts(path)


def test_files_without_d_few_size_or_source_still_read(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    write_prompts(path, prompts())
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    for entry in raw["tasks"].values():
        del entry["d_few_size"], entry["d_few_source"]
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    back = read_prompts(path).tasks["existence"]
    assert back.d_few_size == 2 and back.d_few_source == ""
