"""MMBench CircularEval and VLMEvalKit's option reading, checked against VLMEvalKit itself.

`fixtures/mmbench_circular/vlmevalkit_scores.json` holds what VLMEvalKit computed on the same
TSV and responses: repository open-compass/VLMEvalKit, commit
e8e78f05f3080fe28154f2130321f17951c3be94, `vlmeval/utils/matching_util.py` (`can_infer`) and
`vlmeval/dataset/utils/multiple_choice.py` (`mcq_circular_eval`, `mcq_vanilla_eval`,
`report_acc`), rule-based (judge `exact_matching`, model None). The command that produced it is
in `fixtures/mmbench_circular/README.md`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.record import Record, new_record
from pytest_mllm.sample import BadSample, Sample
from pytest_mllm.scoring.circular import scope_circular
from pytest_mllm.scoring.metrics import ScopeView, benchmark_metrics
from pytest_mllm.scoring.parsers import UNREADABLE, multiple_choice

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmbench_circular"
GOLDEN = json.loads((FIXTURE / "vlmevalkit_scores.json").read_text())
RESPONSES = {json.loads(line)["id"]: json.loads(line)["response"]
             for line in (FIXTURE / "responses.jsonl").read_text().splitlines()}
# VLMEvalKit's report_acc names MMBench's l2-categories by these abbreviations (MMB_abbrs).
ABBREVIATIONS = {"CP": "coarse_perception", "FP-S": "finegrained_perception (instance-level)",
                 "RR": "relation_reasoning"}


def _samples() -> list[Sample]:
    samples = load_samples(load_spec(find_spec("mmbench")), FIXTURE)
    assert not [s for s in samples if isinstance(s, BadSample)]
    return [s for s in samples if isinstance(s, Sample)]


def _records() -> list[Record]:
    records = []
    for sample in _samples():
        parsed = multiple_choice(RESPONSES[sample.metadata["source_id"]], sample)
        correct = parsed == sample.answer
        records.append(new_record(
            id=sample.id, benchmark="mmbench", task=sample.task, answer=sample.answer, answer_type="choice",
            parser="choice", pair_group=sample.pair_group, category=sample.category, l2_category=sample.l2_category,
            parsed=parsed, correct=correct, status="correct" if correct else "incorrect"))
    return records


def test_every_pass_is_read_as_vlmevalkit_reads_it() -> None:
    samples = _samples()
    assert len(samples) == len(GOLDEN["can_infer"]) == 67
    for sample in samples:
        theirs = GOLDEN["can_infer"][sample.metadata["source_id"]]
        assert multiple_choice(RESPONSES[sample.metadata["source_id"]], sample) == (theirs or UNREADABLE), sample.id


def test_circular_and_vanilla_accuracy_equal_vlmevalkit_per_category() -> None:
    result = benchmark_metrics(_records(), ["accuracy", "circular", "category"], {})
    tables = GOLDEN["report_acc"]
    scopes = {"Overall": result["overall"], **result["categories"],
              **{abbr: result["l2_categories"][name] for abbr, name in ABBREVIATIONS.items()}}
    assert set(tables["circular"]) - {"split"} == set(scopes)
    for name, scope in scopes.items():
        assert scope["circular_accuracy"] == tables["circular"][name][0], name
        assert scope["vanilla_accuracy"] == tables["vanilla_0"][name][0], name
        assert scope["accuracy"] == tables["vanilla_all"][name][0], name
    assert result["overall"]["circular_count"] == len(GOLDEN["circular_hit"]) == 18


def test_each_question_is_right_only_when_vlmevalkit_counts_it_right() -> None:
    passes: dict[str, list[bool]] = {}
    for record in _records():
        passes.setdefault(record["pair_group"].split("::")[1], []).append(bool(record["correct"]))
    assert {q: int(all(hits)) for q, hits in passes.items()} == GOLDEN["circular_hit"]


def _record(index: int, correct: bool, status: str | None = None) -> Record:
    return new_record(id=f"dev::{index}", benchmark="mmbench", task="dev", answer="A", answer_type="choice",
                      pair_group=f"dev::{index % 1_000_000}", correct=correct,
                      status=status or ("correct" if correct else "incorrect"))


def _circular(records: list[Record]) -> dict:
    return scope_circular(ScopeView("overall", records, {}))


def test_an_errored_pass_leaves_its_question_out_of_the_score() -> None:
    records = [_record(1, True), _record(1_000_001, True, "error"), _record(2, True), _record(1_000_002, True),
               _record(3, True), _record(1_000_003, False)]
    assert _circular(records) == {"circular_count": 2, "circular_errors": 1, "circular_accuracy": 0.5,
                                  "vanilla_accuracy": 1.0}


def test_passes_without_their_first_pass_are_not_scored() -> None:
    records = [_record(1_000_001, True), _record(2_000_001, True), _record(2, False), _record(1_000_002, True)]
    assert _circular(records) == {"circular_count": 1, "circular_errors": 0, "circular_accuracy": 0.0,
                                  "vanilla_accuracy": 0.0}


def test_no_multiple_choice_records_adds_nothing() -> None:
    assert _circular([new_record(id="t::1", benchmark="b", task="t", status="correct", correct=True)]) == {}


CHOICES = Sample(id="t::1", benchmark="b", task="t", question="?", answer="B", answer_type="choice",
                 choices=(("A", "cat"), ("B", "dog"), ("C", "bird"), ("D", "fish")))


@pytest.mark.parametrize("response, expected", [
    ("A and B", UNREADABLE), ("B or C", UNREADABLE), ("B", "B"), ("(B) dog", "B"), ("**C**", "C"),
    ("The answer is D", "D"), ("Z", "Z"), ("Cannot determine the answer", "Z"), ("dog", "B"),
    ("cat and dog", UNREADABLE), ("b", UNREADABLE), ("", UNREADABLE),
    ("B is right, since the animal in the picture barks loudly at the postman", UNREADABLE),
    ("Between A and C, the answer is C", "C"),
])
def test_option_reading_follows_vlmevalkit_rules(response: str, expected: str) -> None:
    assert multiple_choice(response, CHOICES) == expected


def test_none_null_and_na_option_cells_are_missing_as_pandas_reads_them(tmp_path: Path) -> None:
    """VLMEvalKit reads MMBench's TSV with pandas: "None", "null", "NA" are missing options, "none" is text;
    the `keep_na_words` deviation keeps them."""
    (tmp_path / "MMBench_DEV_EN.tsv").write_text(
        "index\tquestion\thint\tA\tB\tC\tD\tanswer\tcategory\timage\tl2-category\tsplit\n"
        "7\tWhich?\t\tNone\tnull\tNA\tnone\tA\tc\t" + "iVBORw0KGgo" * 8 + "\tl2\tdev\n"
        "1000007\tWhich?\t\tnull\tNA\tnone\tNone\tD\tc\t7\tl2\tdev\n")
    samples = load_samples(load_spec(find_spec("mmbench")), tmp_path)
    first, second = samples
    assert isinstance(first, Sample) and isinstance(second, Sample)
    assert (first.choices, second.choices) == ((("D", "none"),), (("C", "none"),))
    assert (first.answer, second.answer) == ("A", "D")  # answers no response can match: incorrect, not errors
    assert first.pair_group == second.pair_group == "dev::7"
    text = find_spec("mmbench").read_text(encoding="utf-8") + "deviations: [keep_na_words]\n"
    (tmp_path / "kept.yaml").write_text(text.replace("name: mmbench", "name: kept"), encoding="utf-8")
    first, _ = load_samples(load_spec(tmp_path / "kept.yaml"), tmp_path)
    assert isinstance(first, Sample) and first.choices == (("A", "None"), ("B", "null"), ("C", "NA"), ("D", "none"))


def test_the_fixture_is_what_its_script_writes() -> None:
    done = subprocess.run([sys.executable, str(FIXTURE / "make_fixture.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
