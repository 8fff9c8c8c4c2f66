"""MMMU's own scoring (scoring/mmmu.py): the option reading, the open-answer matching, the seeded
random draws and the per-subject / per-discipline / overall accuracies, each against the numbers
MMMU's evaluation code gives on the same responses.

Every expected value below comes from running MMMU's code, outside this project:
repository MMMU-Benchmark/MMMU, commit bb0b95a945998d91dfef37e969e07d49d1139438, files
mmmu/utils/eval_utils.py (parse_multi_choice_response, parse_open_response, eval_open,
calculate_ins_level_acc), mmmu/main_parse_and_eval.py and mmmu/print_results.py, driven by two
scripts kept beside that checkout (Python 3.11, numpy 2.4):

* cases: `python cases.py` in mmmu/ (imports utils.eval_utils): the hand-picked responses below,
  choices A "red apple", B "banana", C "cherry pie", D "date"; run twice, the second time with
  `random.choice` replaced by a marker to tell which responses MMMU draws for;
* fixture: `python run_official.py fixtures/mmmu validation OUT`, which writes each subject's
  output.json (id, question_type, answer, all_choices, index2ans, response) from the fixture's
  parquet files and responses.jsonl, then runs `python main_parse_and_eval.py --path OUT --subject
  ALL` and `python print_results.py --path OUT`, and reads back parsed_output.json / result.json.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from pytest_mllm.record import new_record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring import mmmu
from pytest_mllm.scoring.metrics import benchmark_metrics
from pytest_mllm.scoring.score import normalize_answer

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu"
CHOICES = (("A", "red apple"), ("B", "banana"), ("C", "cherry pie"), ("D", "date"))

# response → MMMU's letter; None where MMMU found no option and drew one (its marker run)
OFFICIAL_CHOICE = {
    "B": "B", "(B)": "B", "(b)": None, "B,.": None, "B.,": "B", "'C'": "C", "The answer is (A) not (D)": "D",
    "(D) then (A)": "A", "A B C": "C", "I think B, but C is close": "C", "B or C": "C",
    "Between A and D I pick D": "D", "it must be the cherry pie for sure": "C",
    "a banana and a date are both fruit here": "D", "Answer: C": "C", "answer:C": None,
    "The correct answer is option C.": "C", "(E)": None, "The fruit on the plate is a banana, clearly": "B",
    "A": "A", " D ": "D", "I would choose A. date": None,
}
# In that (seeded) run the five unreadable answers drew, in order: A, A, C, B, B.
OFFICIAL_DRAWS = ["A", "A", "C", "B", "B"]

# response → MMMU's open predictions, each as str(), sorted
OFFICIAL_OPEN = {
    "42": ["42.0"], "The answer is 42.": ["42.0"], "so x = 3.14159": ["3.14"],
    "Therefore, the total is $1,234,567.": ["$1,234,567", "1234567.0", "567.0"], "is ": ["is"],
    "answer is \nso 5": ["5.0", "is"], "the result is 1.5e3 units": ["1.0", "1.5e3 units", "1500.0", "3.0"],
    "It is -0.5": ["-0.5"], "Final answer: Paris": ["answer: paris"], "x": [" x", "x "],
    "The value could be 7 or 8": ["7 or 8", "7.0", "8.0"], "first line is 4\nsecond line is 9": ["4.0", "9.0"],
    "is : the end": [": the end"], "thus 12,5 items": ["12,5 items", "5.0"], "1,000": ["0.0", "1000.0"],
    "nan": ["nan"], "The mass is 1e400 kg": ["1e400 kg", "400.0", "inf"],
}
# (reference answer, response, MMMU's eval_open verdict); list answers as the parquet release writes them
OFFICIAL_OPEN_VERDICTS = [
    ("42", "The answer is 42.", True), ("3.14", "so x = 3.14159", True),
    ("1234567", "Therefore, the total is $1,234,567.", True), ("paris", "Final answer: Paris", True),
    ("x", "x", True), ("x", "max", False), ("x", "a x b", True), ("8", "The value could be 7 or 8", True),
    ("['24/7', '3.429']", "3.429", True), ("1500", "the result is 1.5e3 units", True), ("-0.5", "It is -0.5", True),
    ("9", "first line is 4\nsecond line is 9", True), ("12.5", "thus 12,5 items", False), ("nan", "nan", False),
]

# The fixture's validation split through main_parse_and_eval.py / print_results.py
OFFICIAL_SUBJECTS = {"Accounting": 1.0, "Art": 0.5, "Clinical_Medicine": 0.3333333333333333,
                     "History": 0.6666666666666666, "Math": 0.5}
OFFICIAL_DISCIPLINES = {"Art and Design": 0.5, "Business": 1.0, "Science": 0.5,
                        "Health and Medicine": 0.3333333333333333, "Humanities and Social Science": 0.6666666666666666}
OFFICIAL_OVERALL = 0.6111111111111112
# per sample: the letter MMMU used (drawn at random for Accounting_4, Art_3, Clinical_Medicine_1 and _3,
# History_3) or its open predictions, and its judgement
OFFICIAL_FIXTURE_SAMPLES = {
    "validation_Accounting_1": ("A", True), "validation_Accounting_2": ("C", True),
    "validation_Accounting_3": (["0.0", "1,000 dollars", "1000.0"], True), "validation_Accounting_4": ("A", True),
    "validation_Art_1": ("C", False), "validation_Art_2": ("B", True), "validation_Art_3": ("A", False),
    "validation_Art_4": ("D", True), "validation_Clinical_Medicine_1": ("C", False),
    "validation_Clinical_Medicine_2": ("B", True), "validation_Clinical_Medicine_3": ("A", False),
    "validation_History_1": ("C", True), "validation_History_2": (["the capital was rome"], True),
    "validation_History_3": ("B", False), "validation_Math_1": (["3.429 ft/s", "3.43"], True),
    "validation_Math_2": (["12.0"], True), "validation_Math_3": ("D", False),
    "validation_Math_4": (["i cannot tell from the picture"], False),
}


def sample(answer: str = "A", choices: tuple[tuple[str, str], ...] = CHOICES, task: str = "Math") -> Sample:
    return Sample(id=f"{task}::x", benchmark="mmmu", task=task, question="q", answer=answer,
                  answer_type="choice" if choices else "open", choices=choices)


@pytest.mark.parametrize(("response", "expected"), list(OFFICIAL_CHOICE.items()))
def test_choice_reading_matches_mmmu(response: str, expected: str | None) -> None:
    assert mmmu.read_choice(response, CHOICES) == expected
    parsed, _ = mmmu.verdict(response, sample())
    assert parsed == (expected or "random:ABCD")


def test_unreadable_answers_draw_as_mmmus_seeded_generator() -> None:
    records = []
    for number, response in enumerate(r for r, letter in OFFICIAL_CHOICE.items() if letter is None):
        record = new_record(id=f"Math::{number}", benchmark="mmmu", task="Math", answer="A", parser="mmmu")
        record.update(parsed=mmmu.parse(response, sample()), status="incorrect", correct=False)
        records.append(record)
    draws = mmmu.random_fill(records)
    assert [draws[r["id"]] for r in records] == OFFICIAL_DRAWS


def test_draws_follow_mmmus_subject_order_not_the_runs() -> None:
    def pending(task: str, letters: str) -> dict:
        record = new_record(id=f"{task}::1", benchmark="mmmu", task=task, answer="A", parser="mmmu")
        record.update(parsed=mmmu.RANDOM + letters, status="incorrect", correct=False)
        return record

    generator = random.Random(mmmu.SEED)
    first, second = generator.choice("ABCDE"), generator.choice("ABC")
    draws = mmmu.random_fill([pending("Math", "ABC"), pending("Accounting", "ABCDE")])
    assert draws == {"Accounting::1": first, "Math::1": second}  # Accounting comes first in MMMU's order


@pytest.mark.parametrize(("response", "expected"), list(OFFICIAL_OPEN.items()))
def test_open_reading_matches_mmmu(response: str, expected: list[str]) -> None:
    assert sorted(map(str, mmmu.read_open(response))) == expected


@pytest.mark.parametrize(("answer", "response", "expected"), OFFICIAL_OPEN_VERDICTS)
def test_open_verdict_matches_mmmu(answer: str, response: str, expected: bool) -> None:
    assert mmmu.verdict(response, sample(answer, choices=()))[1] is expected


def test_list_answers_are_read_as_lists_and_a_malformed_one_stays_text() -> None:
    assert mmmu.references("['$MgS$', 'MgS']") == ["$MgS$", "MgS"]
    assert mmmu.references("['24/7', '3.429', '3.43]") == ["['24/7', '3.429', '3.43]"]
    assert mmmu.references("[0, 5)") == ["[0, 5)"]


def _fixture_records() -> list:
    """The fixture's validation rows as records, scored by our code on the replay responses."""
    from pytest_mllm.engine.spec import find_spec, load_spec
    from pytest_mllm.loaders import load_samples

    pytest.importorskip("pyarrow")
    spec = load_spec(find_spec("mmmu"))
    responses = {}
    for line in (FIXTURE / "responses.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        responses[entry["id"]] = entry["response"]
    records = []
    for order, item in enumerate(load_samples(spec, FIXTURE / "data")):
        assert isinstance(item, Sample), item
        parsed, correct = mmmu.verdict(responses[item.id], item)
        record = new_record(id=item.id, benchmark="mmmu", task=item.task, answer=normalize_answer(item.answer, "mmmu"),
                            parser="mmmu", group=spec.group_of(item.task))
        record.update(parsed=parsed, correct=correct, status="correct" if correct else "incorrect", order=order)
        records.append(record)
    return records


def test_fixture_samples_read_and_judged_as_mmmu_does() -> None:
    records = _fixture_records()
    draws = mmmu.random_fill(records)
    assert len(records) == len(OFFICIAL_FIXTURE_SAMPLES)
    for record in records:
        official, judged = OFFICIAL_FIXTURE_SAMPLES[record["id"].split("::", 1)[1]]
        if isinstance(official, list):
            assert sorted(str(p) for p in json.loads(record["parsed"])) == official, record["id"]
        else:
            assert draws.get(record["id"], record["parsed"]) == official, record["id"]
        assert mmmu.mmmu_correct(record, draws) is judged, record["id"]


def test_fixture_accuracies_equal_mmmus_per_subject_discipline_and_overall() -> None:
    records = _fixture_records()
    groups = {name.replace(" ", "_"): subjects for name, subjects in mmmu.DISCIPLINES.items()}
    scopes = benchmark_metrics(records, ["accuracy", "mmmu"], groups)
    assert {t: s["mmmu_accuracy"] for t, s in scopes["tasks"].items()} == OFFICIAL_SUBJECTS
    assert {g: s["mmmu_accuracy"] for g, s in scopes["groups"].items()} == {
        name.replace(" ", "_"): value for name, value in OFFICIAL_DISCIPLINES.items()}
    assert scopes["overall"]["mmmu_accuracy"] == OFFICIAL_OVERALL
    assert scopes["overall"]["accuracy"] == 10 / 18  # the tests' own verdicts: every random draw counted wrong


def test_errored_records_neither_draw_nor_count() -> None:
    records = _fixture_records()
    broken = dict(records[0], status="error", correct=None, parsed=None)
    scopes = benchmark_metrics([broken, *records[1:]], ["mmmu"], {})
    assert scopes["tasks"]["Accounting"]["mmmu_accuracy"] == 1.0 and scopes["tasks"]["Accounting"]["count"] == 3
