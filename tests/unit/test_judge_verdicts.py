"""Reading verdicts: strict (default) and compat (the authors' parsing) on every recorded reply and on edge cases."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.judge import PROMPTS_BY_ID, parse_verdict, read_verdict

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "judge"
CASES: list[dict[str, Any]] = json.loads((FIXTURES / "replies.json").read_text(encoding="utf-8"))["cases"]
REPLIES = [(case["name"], reply) for case in CASES for reply in case["replies"]]


@pytest.mark.parametrize("mode", ["strict", "compat"])
@pytest.mark.parametrize(("case", "reply"), REPLIES, ids=[f"{c}-{r['prompt_id']}" for c, r in REPLIES])
def test_every_recorded_reply_reads_as_recorded(case: str, reply: dict[str, Any], mode: str) -> None:
    key = PROMPTS_BY_ID[reply["prompt_id"]].key
    assert parse_verdict(reply["text"], key, mode) == reply[mode]  # type: ignore[arg-type]


def test_the_recorded_replies_cover_the_required_kinds() -> None:
    texts = [r["text"] for _, r in REPLIES]
    assert "" in texts
    assert any("Most Likely Score: 10" in t for t in texts)
    assert any("1(or 0)" in t for t in texts)
    assert any("Endpunktzahl" in t for t in texts) and any("最终评估分数" in t for t in texts)
    assert any(r["strict"] != r["compat"] for _, r in REPLIES)


@pytest.mark.parametrize(("text", "expected"), [
    ("Final Score: 1", 1),
    ("Final Score:0", 0),
    ("Analysis: fine.\nFinal Score: 1.", 1),
    ("The Final Score is 0", 0),
    ("Final Score is: 1", 1),
    ("Final Score = 1", 1),
    ("**Final Score:** **1**", 1),
    ("**Final Score**: 0", 0),
    ("Final Score: `1`", 1),
    ("Final Score: [0]", 0),
    ("Final Score: '1'", 1),
    ("final  score :  1", 1),
    ("FINAL SCORE: 1", 1),
    ("Final\nScore:\n\n1", 1),
    ("Final Score: 1 (the core answer is right)", 1),
    ("Before the Final Score, note the count 10.\nFinal Score: 0", 0),
    ("Final Score: 1\n...\nFinal Score: 1", 1),
    ("Final Score: 10", None),
    ("Final Score: 1(or 0)", None),
    ("Final Score: 1 (or 0)", None),
    ("Final Score: 1 or 0", None),
    ("Final Score: 1/0", None),
    ("Final Score: 1/1", None),
    ("Final Score: 1.0", None),
    ("Final Score: -1", None),
    ("Final Score: 2", None),
    ("Final Score: 0\nOn reflection, Final Score: 1", None),
    ("Final Score: 10\nFinal Score: 1", None),
    ("Final Score: one", None),
    ("Final Score: N", None),
    ("Final Scores: 1", None),
    ("Final Assessment Score: 1", None),
    ("Score: 1", None),
    ("1", None),
    ("   \n", None),
])
def test_strict_reads_only_a_lone_0_or_1_after_the_key(text: str, expected: int | None) -> None:
    assert parse_verdict(text, "Final Score") == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Final Score: 1", 1),
    ("Final Score: 10", 0),  # the paper's reader: any '0' after the key wins
    ("Final Score: 1(or 0)", 0),
    ("Final Score: 1 (on a 0-1 scale)", 0),
    ("final score: 1", 1),  # the all-lower-case key is accepted ...
    ("FINAL SCORE: 1", None),  # ... other spellings are not
    ("Final Score: 1\nlater: Final Score: 0", 1),  # only the text up to the key's second occurrence
    ("Final Score: one", None),
    ("Final Score: 2", None),
    ("The Final Score is 1", 1),
    ("Score: 1", None),
    ("", None),
])
def test_compat_reproduces_the_authors_reader(text: str, expected: int | None) -> None:
    assert parse_verdict(text, "Final Score", "compat") == expected


def test_read_verdict_says_why_there_is_no_vote() -> None:
    assert read_verdict("Final Score: 1", "Final Score") == (1, None)
    assert read_verdict("", "Final Score") == (None, "empty reply")
    assert "no 'Final Score'" in str(read_verdict("Score: 1", "Final Score")[1])
    assert "not followed by a 0 or 1" in str(read_verdict("Final Score: N", "Final Score")[1])
    assert "'10'" in str(read_verdict("Final Score: 10", "Final Score")[1])
    assert "both 0 and 1" in str(read_verdict("Final Score: 0. Final Score: 1", "Final Score")[1])
    assert "no 0 or 1" in str(read_verdict("Final Score: yes", "Final Score", "compat")[1])


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="strict, compat"):
        parse_verdict("Final Score: 1", "Final Score", "lenient")  # type: ignore[arg-type]
