"""The judge prompts file (--mllm-judge-prompts): loading, checking, rendering, and cache keys that
follow the wording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_mllm.judge import PROMPTS, Judge, JudgeItem, PromptsFileError, cache_key, load_prompts, render_messages
from pytest_mllm.judge.prompts import parse_prompts

EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "prompts.yaml"
ITEM = JudgeItem(" What shape is the plate? ", ["round", " circular ", "round"], " circle ")


def _data() -> dict[str, Any]:
    return yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "judge_prompts.yaml"
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_the_example_file_holds_the_built_in_prompts_with_the_item_spelled_out() -> None:
    prompts = load_prompts(EXAMPLE)
    assert [(p.id, p.rule, p.key, p.system) for p in prompts] == [(p.id, p.rule, p.key, p.system) for p in PROMPTS]
    for mine, builtin in zip(prompts, PROMPTS):
        assert mine.user.startswith(builtin.instructions + "\n\n")
        assert mine.instructions == builtin.instructions + "\n\nQuestion:"


def test_placeholders_are_filled_once_each() -> None:
    prompt = load_prompts(EXAMPLE)[0]
    system, user = render_messages(prompt, ITEM)
    assert system["content"] == prompt.system
    assert user["content"].endswith("\n\nQuestion: What shape is the plate?\nReference answer: round | circular\n"
                                    "Answer to grade: circle")
    sneaky = JudgeItem("{answer}?", ["{item}"], "{question}")  # inserted text is never filled again
    assert render_messages(prompt, sneaky)[1]["content"].endswith(
        "Question: {answer}?\nReference answer: {item}\nAnswer to grade: {question}")


def test_an_item_placeholder_renders_the_built_in_block(tmp_path: Path) -> None:
    data = _data()
    data["prompts"][0]["user"] = "Grade it; end with 'Most Likely Score: N'.\n{item}"
    prompt = load_prompts(_write(tmp_path, data))[0]
    assert render_messages(prompt, ITEM)[1]["content"] == (
        "Grade it; end with 'Most Likely Score: N'.\nQuestion: What shape is the plate?\n"
        "Reference answers (matching any one of them is enough): round | circular\nAnswer to grade: circle")


def test_a_bare_list_is_accepted() -> None:
    assert parse_prompts(_data()["prompts"]) == load_prompts(EXAMPLE)


def _mutate(data: dict[str, Any], index: int, field: str, value: Any) -> dict[str, Any]:
    if value is _DELETE:
        del data["prompts"][index][field]
    else:
        data["prompts"][index][field] = value
    return data


_DELETE = object()


@pytest.mark.parametrize(("change", "where", "problem"), [
    (lambda d: _mutate(d, 2, "rule", 3), "prompts[2].rule", "must be 1 or 2"),
    (lambda d: _mutate(d, 2, "rule", True), "prompts[2].rule", "must be 1 or 2"),
    (lambda d: _mutate(d, 0, "key", ""), "prompts[0].key", "non-empty string"),
    (lambda d: _mutate(d, 0, "key", " Final Score"), "prompts[0].key", "one line"),
    (lambda d: _mutate(d, 1, "system", None), "prompts[1].system", "non-empty string"),
    (lambda d: _mutate(d, 1, "user", _DELETE), "prompts[1].user", "missing"),
    (lambda d: _mutate(d, 4, "temperature", 0.5), "prompts[4].temperature", "unknown field"),
    (lambda d: _mutate(d, 3, "user", "Grade. 'Final Score: N'\n{question} {reference} {answer}"), "prompts[3].user",
     "unknown placeholder {reference}"),
    (lambda d: _mutate(d, 3, "user", "Grade {question}. 'Final Score: N'"), "prompts[3].user",
     "must show the judge the item"),
    (lambda d: _mutate(d, 3, "user", "Grade it; say 'Score: N'.\n{item}"), "prompts[3].user",
     "never mentions the key phrase 'Final Score'"),
    (lambda d: _mutate(d, 4, "id", "p1"), "prompts[4].id", "'p1' is used twice"),
    (lambda d: _mutate(d, 3, "rule", 1), "prompts[*].rule", "three prompts must follow rule 1 and two rule 2"),
    (lambda d: {"prompts": d["prompts"][:4]}, "prompts", "exactly 5 prompts"),
    (lambda d: {"prompts": d["prompts"], "judge": "x"}, "judge", "unknown top-level field"),
    (lambda d: {"prompt": d["prompts"]}, "prompt", "unknown top-level field"),
    (lambda d: {}, "prompts", "missing"),
    (lambda d: "just text", "prompts", "must be a list of five prompts, not str"),
    (lambda d: {"prompts": ["p1", *d["prompts"][1:]]}, "prompts[0]", "must be a mapping"),
])
def test_a_bad_file_names_the_file_and_the_field(tmp_path: Path, change: Any, where: str, problem: str) -> None:
    path = _write(tmp_path, change(_data()))
    with pytest.raises(PromptsFileError) as caught:
        load_prompts(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: {where}: "), message
    assert problem in message


def test_unreadable_and_invalid_yaml_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(PromptsFileError, match=f"^{missing}: cannot read"):
        load_prompts(missing)
    bad = _write(tmp_path, "prompts: [\n  - id: p1\n    rule: : :\n")
    with pytest.raises(PromptsFileError, match=f"^{bad}: not valid YAML"):
        load_prompts(bad)


def test_the_file_is_read_safely(tmp_path: Path) -> None:
    path = _write(tmp_path, "prompts: !!python/object/apply:os.system ['echo owned']\n")
    with pytest.raises(PromptsFileError, match="not valid YAML"):
        load_prompts(path)


def test_cache_keys_follow_the_wording() -> None:
    mine = load_prompts(EXAMPLE)
    settings = {"temperature": 0.0, "max_tokens": 512}
    assert cache_key("j", PROMPTS[0], ITEM, settings) == cache_key("j", "p1", ITEM, settings)
    assert cache_key("j", mine[0], ITEM, settings) != cache_key("j", PROMPTS[0], ITEM, settings)
    reworded = type(mine[0])(**{**mine[0].__dict__, "system": mine[0].system + " Be brief."})
    assert cache_key("j", reworded, ITEM, settings) != cache_key("j", mine[0], ITEM, settings)


class _Client:
    def __init__(self) -> None:
        self.conversations: list[Any] = []

    def chat_many(self, model: str, conversations: Any, **kwargs: Any) -> list[Any]:
        self.conversations.extend(conversations)

        class Result:
            def __init__(self, text: str) -> None:
                self.text = text

        out = []
        for conversation in conversations:
            key = next(k for k in ("Final Assessment Score", "Most Likely Score", "Final Score")
                       if k in conversation[-1]["content"])
            out.append(Result(f"Analysis: fine.\n{key}: 1"))
        return out


class _Cache:
    def __init__(self) -> None:
        self.data: dict[str, str] = {}

    def get_many(self, keys: Any) -> dict[str, str]:
        return {k: self.data[k] for k in keys if k in self.data}

    def put_many(self, entries: Any, model: str) -> None:
        self.data.update(entries)


def test_the_judge_asks_with_the_files_prompts_and_caches_per_wording() -> None:
    client, cache = _Client(), _Cache()
    mine = load_prompts(EXAMPLE)
    outcome = Judge(client, "j", prompts=mine, cache=cache).judge_many([ITEM])[0]
    assert outcome.status == "judged" and outcome.correct is True and outcome.split == "5-0"
    assert [c[0]["content"] for c in client.conversations] == [p.system for p in mine]
    assert all(c[1]["content"].endswith("Answer to grade: circle") for c in client.conversations)
    Judge(client, "j", prompts=mine, cache=cache).judge_many([ITEM])
    assert len(client.conversations) == 5  # replayed from the cache
    Judge(client, "j", cache=cache).judge_many([ITEM])
    assert len(client.conversations) == 10  # other wording: asked afresh


def test_the_judge_refuses_a_wrong_number_of_prompts() -> None:
    with pytest.raises(ValueError, match="5 prompts with distinct ids"):
        Judge(_Client(), "j", prompts=PROMPTS[:4])
    with pytest.raises(ValueError, match="5 prompts with distinct ids"):
        Judge(_Client(), "j", prompts=(PROMPTS[0],) * 5)
