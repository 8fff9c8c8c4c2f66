"""A method's options are data in the package that owns it (`options.json`, `<module>.options.json`), which the
plugin reads without importing that package: each file is well formed, a malformed one is refused naming the file,
and pytest's parser holds the same options as before they moved, with their defaults and types."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.plugin import OptionsFileError, declared_options

# Every option pytest-mllm declares (their destinations): moving a declaration changes none of them.
OPTIONS = set("""
mllm mllm_api_key_env mllm_base_url mllm_baseline mllm_batch_size mllm_bench mllm_cache mllm_cache_dir mllm_concurrency
mllm_data mllm_data_cache mllm_device mllm_dtype mllm_estimate mllm_estimate_method mllm_estimate_panel
mllm_estimate_seed mllm_gate mllm_gate_skip_missing mllm_gpus mllm_gpus_per_worker mllm_html mllm_json mllm_judge
mllm_judge_api_key_env mllm_judge_base_url mllm_judge_grading_prompts mllm_judge_max_tokens mllm_judge_mode
mllm_judge_prompts mllm_judge_revision mllm_judge_runs mllm_judge_temperature mllm_limit mllm_list mllm_markdown
mllm_max_drop mllm_max_image_pixels mllm_max_new_tokens mllm_max_retries mllm_mme_results mllm_model_args
mllm_model_revision mllm_no_image mllm_offline mllm_optimize mllm_optimizer mllm_optimizer_api_key_env
mllm_optimizer_base_url mllm_optimizer_max_tokens mllm_prompts mllm_prompts_transfer mllm_replay_min_match mllm_shard
mllm_show_incorrect mllm_strict mllm_timeout mllm_tp_alpha mllm_tp_alpha_final mllm_tp_few mllm_tp_mode
mllm_tp_per_round mllm_tp_rounds mllm_tp_seed mllm_tp_split mllm_tp_temperature mllm_tp_top_k mllm_tp_zero_shot
mllm_trust_remote_code mllm_vrp mllm_vrp_examples mllm_vrp_radar
""".split())

# The declared options' defaults (None left out), as they were when plugin.py declared them.
DEFAULTS = {
    "mllm_judge_mode": "strict", "mllm_judge_temperature": 0.0, "mllm_judge_runs": 1, "mllm_optimizer_max_tokens": 256,
    "mllm_prompts_transfer": False, "mllm_tp_rounds": 16, "mllm_tp_per_round": 3, "mllm_tp_top_k": 8,
    "mllm_tp_temperature": 1.0, "mllm_tp_alpha": 0.8, "mllm_tp_alpha_final": 0.6, "mllm_tp_few": 0, "mllm_tp_seed": 0,
    "mllm_tp_mode": "auto", "mllm_tp_split": "auto", "mllm_tp_zero_shot": False, "mllm_vrp_examples": 8,
}


def _dest(name: str) -> str:
    return name.removeprefix("--").replace("-", "_")


def test_every_options_file_is_well_formed_and_read_in_path_order() -> None:
    groups = declared_options()
    assert [group.name for group in groups] == sorted(group.name for group in groups)
    assert {group.name for group in groups} >= {"mllm judge/options.json", "mllm tpeval/options.json",
                                                "mllm vrp/options.json", "mllm loaders/mme_results.options.json"}
    names = [name for group in groups for name, _ in group.options]
    assert len(names) == len(set(names)) and all(group.title.endswith("(pytest-mllm)") for group in groups)
    for group in groups:
        for name, attrs in group.options:
            assert attrs["help"] and attrs.get("type", str) in (int, float, str), name


def test_the_parser_holds_the_same_options_with_the_declared_defaults_and_types(pytester: pytest.Pytester) -> None:
    defaults = vars(pytester.parseconfig().option)
    assert {dest for dest in defaults if dest.startswith("mllm")} == OPTIONS
    declared = [_dest(name) for group in declared_options() for name, _ in group.options]
    assert {dest: defaults[dest] for dest in declared if defaults[dest] is not None} == DEFAULTS
    given = pytester.parseconfig("--mllm-tp-rounds=3", "--mllm-judge-temperature=0.5", "--mllm-vrp=full")
    assert (given.getoption("mllm_tp_rounds"), given.getoption("mllm_judge_temperature")) == (3, 0.5)
    with pytest.raises(pytest.UsageError, match="invalid choice: 'squares'"):
        pytester.parseconfig("--mllm-vrp=squares")


def _write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "method" / "options.json"
    path.parent.mkdir()
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


@pytest.mark.parametrize(("option", "problem"), [
    ({"name": "--mllm-x", "help": "h", "dafault": 1}, r"option --mllm-x: unknown keys \['dafault'\]"),
    ({"name": "--mllm-x", "help": "h", "type": "integer"}, "option --mllm-x: unknown type 'integer'"),
    ({"name": "--mllm-x", "help": "h", "action": "count"}, "option --mllm-x: unknown action 'count'"),
    ({"name": "--mllm-x", "help": "h", "type": "int", "default": "8"}, "default '8' is not of type int"),
    ({"name": "--mllm-x", "help": "h", "choices": ["a", "b"], "default": "c"}, "default 'c' is not a choice"),
    ({"name": "--mllm-x", "help": "h", "action": "store_true", "metavar": "N"}, "store_true option takes no"),
    ({"name": "--mllm-x"}, "option --mllm-x: 'help' is a text and required"),
    ({"name": "mllm-x", "help": "h"}, "'name' is --mllm-<words>"),
])
def test_a_malformed_option_is_refused_naming_the_file(tmp_path: Path, option: dict[str, Any], problem: str) -> None:
    path = _write(tmp_path, {"title": "t (pytest-mllm)", "options": [option]})
    with pytest.raises(OptionsFileError, match=problem) as refused:
        declared_options(tmp_path)
    assert str(refused.value).startswith(f"{path}: ")


@pytest.mark.parametrize("content", ['{"title": "t", "options": [', {"title": "t", "options": [], "group": "g"},
                                     {"options": []}])
def test_a_malformed_file_is_refused_naming_it(tmp_path: Path, content: Any) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(OptionsFileError, match="not JSON|expected an object") as refused:
        declared_options(tmp_path)
    assert str(refused.value).startswith(f"{path}: ")


def test_a_module_s_options_file_is_found_beside_it(tmp_path: Path) -> None:
    (tmp_path / "loaders").mkdir()
    (tmp_path / "loaders" / "format.options.json").write_text(json.dumps(
        {"title": "t", "options": [{"name": "--mllm-format-out", "metavar": "DIR", "help": "h"}]}), encoding="utf-8")
    (tmp_path / "loaders" / "inline_options.json").write_text("not read", encoding="utf-8")
    assert declared_options(tmp_path)[0].options == [("--mllm-format-out", {"metavar": "DIR", "help": "h"})]
