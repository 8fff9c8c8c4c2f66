"""Spec files: validation errors name the file and the field; data roots name the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.engine.spec import SpecError, bundled_specs, declared_aliases, find_spec, load_spec
from pytest_mllm.safe_yaml import load_yaml


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize("body, field", [
    ("loader: jsonl\n", "name"),
    ("name: x\n", "loader"),
    ("name: x\nloader: csv\n", "loader"),
    ("name: x\nloader: jsonl\nparser: fuzzy\n", "parser"),
    ("name: x\nloader: jsonl\nmetrics: [accuracy, bleu]\n", "metrics"),
    ("name: x\nloader: jsonl\ngroups: {g: t}\n", "groups.g"),
    ("name: x\nloader: jsonl\ntasks: {t: {parser: nope}}\n", "tasks.t.parser"),
    ("name: x\nloader: jsonl\nmax_new_tokens: 0\n", "max_new_tokens"),
    ("name: x\nloader: jsonl\nprompts: {}\n", "prompts"),
    ("name: 'a b'\nloader: jsonl\n", "name"),
])
def test_malformed_spec_names_file_and_field(tmp_path: Path, body: str, field: str) -> None:
    path = write(tmp_path, body)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and f"field {field!r}" in str(info.value)


def test_invalid_yaml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(path)


def test_yaml_is_loaded_safely(tmp_path: Path) -> None:
    path = write(tmp_path, "name: !!python/object/apply:os.system ['echo hacked']\nloader: jsonl\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_spec(path)


def test_missing_data_root_says_which_option_and_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLLM_DATA_MME", raising=False)
    spec = load_spec(find_spec("mme"))
    with pytest.raises(SpecError, match="--mllm-data=mme=/path/to/data or set MLLM_DATA_MME"):
        spec.resolve_data_root(None)
    monkeypatch.setenv("MLLM_DATA_MME", str(tmp_path / "absent"))
    with pytest.raises(SpecError, match=r"does not exist: .*absent \(from MLLM_DATA_MME\)"):
        spec.resolve_data_root(None)
    monkeypatch.setenv("MLLM_DATA_MME", str(tmp_path))
    assert spec.resolve_data_root(None) == tmp_path.resolve()


def test_bundled_specs_all_validate() -> None:
    names = bundled_specs()
    assert {"shapes", "mme", "mme_results", "pope", "mmbench", "vrp_shapes", "tiny_lvlm_ehub"} <= set(names)
    for path in names.values():
        assert load_spec(path).path == path


def test_the_aliases_entry_read_alone_is_what_the_whole_file_declares() -> None:
    declaring = 0
    for path in bundled_specs().values():
        text = path.read_text(encoding="utf-8")
        whole = [str(alias) for alias in load_yaml(text).get("aliases") or ()]
        assert declared_aliases(text) == whole, path.name
        declaring += bool(whole)
    assert declaring >= 20
    block = "name: x\naliases:\n  - A  # a comment\n\n  # another\n  - 'B C'\nloader: jsonl\nnotaliases: [D]\n"
    assert declared_aliases(block) == ["A", "B C"]
    assert declared_aliases("name: x\naliases: [E, 2]\n") == ["E", "2"]
    assert declared_aliases("name: x\nloader: jsonl\n") == []


def test_unknown_benchmark_lists_the_bundled_ones() -> None:
    with pytest.raises(SpecError, match=r"unknown benchmark 'no_such_bench'") as info:
        find_spec("no_such_bench")
    listed = str(info.value).split("(")[1].split(")")[0].split(", ")
    assert listed == sorted(bundled_specs()) and "shapes" in listed


def test_subset_field_is_a_file_inside_the_spec_folder(tmp_path: Path) -> None:
    (tmp_path / "ids.txt").write_text("a\n", encoding="utf-8")
    spec = load_spec(write(tmp_path, "name: x\nloader: jsonl\nsubset: ids.txt\n"))
    assert spec.subset == "ids.txt" and spec.subset_path == tmp_path / "ids.txt"
    (tmp_path / "plain").mkdir()
    assert load_spec(write(tmp_path / "plain", "name: y\nloader: jsonl\n")).subset is None


@pytest.mark.parametrize("value, problem", [
    ("../ids.txt", "no absolute path, no '..'"),
    ("/etc/passwd", "no absolute path, no '..'"),
    ("sub/../../ids.txt", "no absolute path, no '..'"),
    ("missing.txt", "does not exist"),
    ("''", "must be a non-empty string"),
    ("[a, b]", "must be a non-empty string"),
])
def test_bad_subset_names_file_and_field(tmp_path: Path, value: str, problem: str) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    (tmp_path / "ids.txt").write_text("a\n", encoding="utf-8")
    path = write(folder, f"name: x\nloader: jsonl\nsubset: {value}\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and "field 'subset'" in str(info.value) and problem in str(info.value)


def test_subset_through_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "spec"
    folder.mkdir()
    (tmp_path / "ids.txt").write_text("a\n", encoding="utf-8")
    (folder / "ids.txt").symlink_to(tmp_path / "ids.txt")
    with pytest.raises(SpecError, match="field 'subset'.*outside the spec's folder"):
        load_spec(write(folder, "name: x\nloader: jsonl\nsubset: ids.txt\n"))
