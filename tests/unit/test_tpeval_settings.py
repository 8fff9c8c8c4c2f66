"""TpSettings: paper defaults, validation naming the command-line option, the word limit."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_mllm.tpeval.settings import TpSettings


def test_defaults_are_the_papers() -> None:
    s = TpSettings()
    assert (s.rounds, s.per_round, s.top_k, s.temperature, s.alpha, s.alpha_final) == (16, 3, 8, 1.0, 0.8, 0.6)
    assert s.few == 0  # the paper's D_few: the validation split (or half of dev+val), see tpeval.split
    assert s.validate() is s
    assert s.as_dict()["mode"] == "auto"


def test_settings_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        TpSettings().rounds = 3  # type: ignore[misc]


@pytest.mark.parametrize("change, option", [
    ({"rounds": 0}, "--mllm-tp-rounds"),
    ({"per_round": 0}, "--mllm-tp-per-round"),
    ({"top_k": 0}, "--mllm-tp-top-k"),
    ({"temperature": -0.1}, "--mllm-tp-temperature"),
    ({"temperature": 2.5}, "--mllm-tp-temperature"),
    ({"temperature": float("nan")}, "--mllm-tp-temperature"),
    ({"alpha": 1.2}, "--mllm-tp-alpha"),
    ({"alpha": -0.01}, "--mllm-tp-alpha"),
    ({"alpha_final": 1.5}, "--mllm-tp-alpha-final"),
    ({"few": -1}, "--mllm-tp-few"),
    ({"seed": 1.5}, "--mllm-tp-seed"),
    ({"mode": "suffix"}, "--mllm-tp-mode"),
    ({"rounds": True}, "--mllm-tp-rounds"),
    ({"max_words": -1}, "max_words"),
])
def test_bad_values_name_their_option(change: dict, option: str) -> None:
    with pytest.raises(ValueError, match=option + r"\b") as info:
        TpSettings(**change).validate()
    assert repr(next(iter(change.values())))[:3] in str(info.value)


def test_alpha_bounds_are_inclusive() -> None:
    TpSettings(alpha=0.0, alpha_final=1.0, temperature=0, rounds=1).validate()


def test_word_limit() -> None:
    assert TpSettings().word_limit("Please answer yes or no.") == 4 * 5 + 20
    assert TpSettings(max_words=12).word_limit("Please answer yes or no.") == 12
