"""--mllm-model-args: key=value pairs read as lmms-eval's --model_args are, split into the model's
loading arguments and its processor's settings, and checked."""

from __future__ import annotations

import pytest

from pytest_mllm.models.model_args import (
    ModelArgsError,
    check_processor_keys,
    max_memory_map,
    parse_model_args,
    split_pairs,
)


def test_commas_inside_json_values_do_not_split() -> None:
    assert split_pairs('revision=main, max_memory={"0": "20GiB", "cpu": "60GiB"},device_map=auto,') == [
        "revision=main", 'max_memory={"0": "20GiB", "cpu": "60GiB"}', "device_map=auto"]


def test_loading_arguments_and_processor_settings_are_kept_apart() -> None:
    args = parse_model_args(['revision=v1.1,attn_implementation=sdpa,max_pixels=802816',
                             'device_map=auto,max_memory={"0":"20GiB","cpu":"60GiB"},do_image_splitting=false'])
    assert dict(args.loading) == {"revision": "v1.1", "attn_implementation": "sdpa", "device_map": "auto",
                                  "max_memory": {"0": "20GiB", "cpu": "60GiB"}}
    assert dict(args.processor) == {"max_pixels": 802816, "do_image_splitting": False}
    # placement does not change answers, so it stays out of what keys the cache
    assert args.answer_settings == {"revision": "v1.1", "attn_implementation": "sdpa", "max_pixels": 802816,
                                    "do_image_splitting": False}


def test_a_later_value_wins_and_nothing_given_is_empty() -> None:
    assert dict(parse_model_args(["revision=a", "revision=b"]).loading) == {"revision": "b"}
    assert not parse_model_args([])


@pytest.mark.parametrize(("text", "message"), [
    ("revision", "'revision' is not key=value"),
    ("=main", "'=main' is not key=value"),
    ("max-pixels=3", "'max-pixels=3' is not key=value"),
    ("device_map=everywhere", "device_map=\"everywhere\" is not auto, balanced"),
    ("max_memory=20GiB", "max_memory=\"20GiB\" is not a {device: size} mapping"),
    ("load_in_4bit=yes", "load_in_4bit=\"yes\" is not true or false"),
    ("revision=3", "revision=3 is not text"),
    ("trust_remote_code=true", "'trust_remote_code' is set by --mllm-trust-remote-code"),
    ("device=cuda", "'device' is set by --mllm-device"),
])
def test_bad_values_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ModelArgsError, match="^--mllm-model-args: ") as caught:
        parse_model_args([text])
    assert message in str(caught.value)


def test_max_memory_takes_gpu_indices_as_numbers() -> None:
    assert max_memory_map({"0": "20GiB", "1": "20GiB", "cpu": "60GiB"}) == {0: "20GiB", 1: "20GiB", "cpu": "60GiB"}


def test_a_setting_the_processor_does_not_take_is_refused_with_the_closest_name() -> None:
    check_processor_keys(["max_pixels"], {"max_pixels", "min_pixels"}, "Qwen2VLProcessor")
    with pytest.raises(ModelArgsError, match="'max_pixel' is neither a loading argument nor a setting of "
                                             "Qwen2VLProcessor; did you mean 'max_pixels'"):
        check_processor_keys(["max_pixel"], {"max_pixels", "min_pixels"}, "Qwen2VLProcessor")
    with pytest.raises(ModelArgsError, match="did you mean 'revision'"):
        check_processor_keys(["revison"], {"max_pixels"}, "Qwen2VLProcessor")
