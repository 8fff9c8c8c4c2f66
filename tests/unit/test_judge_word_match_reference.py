"""Word matching against the authors' own code, case by case.

The expected results in fixtures/judge/word_match_cases.json (132 tricky response/reference
pairs: punctuation, digits with commas, contractions, number words, articles, case, unicode,
regex edges, empty strings, reference lists) were produced by RUNNING Tiny LVLM-eHub's
``VQAEval().evaluate(response, references)`` outside this project:

    repository  OpenGVLab/Multi-Modality-Arena
    file        tiny_lvlm_evaluation/utils/tools.py  (class VQAEval; last changed in dd3839d8)
    commit      bd2999a3be2bf4539a7e071cf2cfab5822f66417
    command     git show bd2999a3be2bf4539a7e071cf2cfab5822f66417:tiny_lvlm_evaluation/utils/tools.py \\
                    > /tmp/vqa_ref/tools.py
                python /tmp/vqa_ref/gen.py fixtures/judge/word_match_cases.json \\
                    bd2999a3be2bf4539a7e071cf2cfab5822f66417      (Python 3.11.7)

gen.py (a scratch script, not part of this project) holds the case inputs, imports ``VQAEval``
from that tools.py, calls ``VQAEval().evaluate(response, copy.deepcopy(references))`` once per
case (a fresh instance; a shared one gave the same results) and writes each result as
``vqa_eval``. Our code is compared with those recorded numbers; it never produced them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.scoring.word_match import vqa_eval_match, vqa_normalize, word_match

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "word_match_cases.json"
DATA: dict[str, Any] = json.loads(FIXTURE.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _refs(case: dict[str, Any]) -> list[str]:
    refs = case["references"]
    return [refs] if isinstance(refs, str) else list(refs)


def test_the_fixture_names_its_source_and_is_large_enough() -> None:
    assert DATA["reference"]["repository"] == "OpenGVLab/Multi-Modality-Arena"
    assert DATA["reference"]["commit"] == "bd2999a3be2bf4539a7e071cf2cfab5822f66417"
    assert len(CASES) >= 60
    assert {c["group"] for c in CASES} >= {"punctuation", "digits-with-commas", "contractions", "number-words",
                                          "articles", "case-and-unicode", "regex-edges", "empty-and-whitespace"}
    assert {c["vqa_eval"] for c in CASES} == {0, 1}


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['group']}" for i, c in enumerate(CASES)])
def test_ours_equals_the_authors_vqaeval(case: dict[str, Any]) -> None:
    expected = bool(case["vqa_eval"])
    assert vqa_eval_match(case["response"], case["references"]) is expected, case["note"]
    assert word_match(case["response"], case["references"]) is expected, case["note"]  # never an error


def test_references_left_empty_are_scored_as_the_authors_score_them() -> None:
    empty = [c for c in CASES if not any(vqa_normalize(r) for r in _refs(c))]
    assert empty and {c["vqa_eval"] for c in empty} == {0, 1}
    assert all(word_match(c["response"], c["references"]) is bool(c["vqa_eval"]) for c in empty)


@pytest.mark.parametrize(("response", "reference", "authors", "lenient"), [
    ("costs 3.5 dollars", "5", True, False),
    ("STRASSE", "stra\u00dfe", False, True),
    ("It costs $3.50.", "$3.50", False, True),
    ("red,blue and 1,000", "red blue", False, True),
    ("U.S.A.", "u s a", False, True),
    ("it's", "it s", False, True),
    ("twas", "twas", False, True),
    ("email@example.com", "example", False, True),
])
def test_the_lenient_option_differs_where_the_authors_have_quirks(response: str, reference: str, authors: bool,
                                                                   lenient: bool) -> None:
    assert word_match(response, reference) is authors
    assert word_match(response, reference, lenient=True) is lenient


def test_parsers_name_both_readings() -> None:
    from pytest_mllm.sample import Response, Sample
    from pytest_mllm.scoring.score import get_parser, normalize_answer, score_record

    assert get_parser("word_match").read("Hello, U.S.A.!", None) == "hello usa"  # type: ignore[arg-type]
    assert get_parser("word_match_lenient").read("Hello, U.S.A.!", None) == "hello u s"  # type: ignore[arg-type]
    # (the lone "a" is an article)
    assert normalize_answer(" $3.50 ", "word_match") == "$3.50"
    sample = Sample(id="q1", benchmark="b", task="t", question="Cost?", answer="$3.50", answer_type="open")
    for parser, correct in (("word_match", False), ("word_match_lenient", True)):
        record: Any = {"parser": parser, "answer": "$3.50", "word_match": None}
        scored = score_record(record, sample, Response(text="It costs $3.50.", latency_s=0.0))
        assert scored["correct"] is correct and scored["word_match"] is correct, parser


def test_the_bundled_tiny_lvlm_ehub_spec_uses_the_authors_reading() -> None:
    import yaml

    spec = yaml.safe_load((Path(__file__).resolve().parents[2] / "benchmarks" / "tiny_lvlm_ehub.yaml").read_text())
    assert spec["parser"] == "word_match"
