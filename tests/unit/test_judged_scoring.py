"""The judge-graded benchmarks' pure logic against VLMEvalKit's own per-row results, and the grading procedure
with a scripted judge client.

Per-row expectations come from VLMEvalKit run outside the project on fixtures/official/judged/ (repository
open-compass/VLMEvalKit, commit e8e78f05f3080fe28154f2130321f17951c3be94, fixtures/official/run_reference_judged.py;
the command is in fixtures/official/README.md, "The judge-graded benchmarks"): what its judged files hold for
each row (MathVista's res, log and post_check hit; MM-Vet's score and log; LLaVA-Bench's two ratings).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import pytest

from pytest_mllm.engine.spec import find_spec, load_spec
import pytest_mllm.judge.llavabench as llavabench
import pytest_mllm.judge.mathvista as mathvista
import pytest_mllm.judge.mmvet as mmvet
from pytest_mllm.judge.graders import GRADERS, GradeItem, GradingPrompt, GradingPromptsError, load_grading_prompts, render
from pytest_mllm.judge.grading import LiveJudge, ReplayJudge, graded_part
from pytest_mllm.judge.llavabench import LLaVABenchGrader
from pytest_mllm.judge.mathvista import MathVistaGrader
from pytest_mllm.judge.mmvet import MMVetGrader
from pytest_mllm.loaders import load_samples

OFFICIAL = Path(__file__).resolve().parents[2] / "fixtures" / "official"
JUDGED = OFFICIAL / "judged"
REFERENCE = json.loads((OFFICIAL / "reference_scores_judged.json").read_text(encoding="utf-8"))
FAILED = "Failed to obtain answer via API."


def _replies(folder: str) -> dict[str, list[str]]:
    lines = (JUDGED / folder / "judge_replies.jsonl").read_text(encoding="utf-8").splitlines()
    return {json.loads(line)["id"]: json.loads(line)["replies"] for line in lines}


def _samples(spec: str, folder: str) -> dict[str, Any]:
    loaded = load_spec(find_spec(spec))
    return {s.metadata["source_id"]: s for s in load_samples(loaded, JUDGED / folder)}


# --- MathVista ---------------------------------------------------------------------------------------------------

def test_mathvistas_rules_and_comparison_are_vlmevalkits_on_every_row() -> None:
    reference = REFERENCE["MathVista_MINI"]
    samples = _samples("mathvista", "MathVista_MINI")
    for index, theirs in sorted(reference["rows"].items(), key=lambda kv: int(kv[0])):
        question = mathvista.question(samples[index].metadata["columns"], samples[index].answer)
        read = reference["prediction_read"][int(index)]
        prediction = "nan" if read is None else str(read)  # VLMEvalKit's str() of the cell it read
        found = mathvista.pre_extract(prediction, question)
        assert (found is not None) == (theirs["log"] == "Prefetch succeed"), index
        if found is not None:
            assert found == theirs["res"] and type(found) is type(theirs["res"]), index
        extracted = "nan" if theirs["res"] is None else str(theirs["res"])
        assert mathvista.is_hit(found if found is not None else extracted, question) is theirs["hit"], index


def test_mathvista_quirks() -> None:
    integer = mathvista.Question("free_form", "integer", "0", "nan", (), ())
    assert mathvista.pre_extract("0", integer) is None  # a right 0 is falsy: the judge is asked
    assert mathvista.is_hit("0", integer) and not mathvista.is_hit("0.0", integer)
    floating = mathvista.Question("free_form", "float", "1.5", "nan", (), ())
    assert mathvista.pre_extract(" 1.50\n", floating) == 1.5 and not mathvista.is_hit("1.499", floating)
    listed = mathvista.Question("free_form", "list", "[1, 2]", "nan", (), ())
    assert not mathvista.is_hit("[1, 2]", listed) and mathvista.pre_extract("[1, 2]", listed) is None
    choice = mathvista.question({"question_type": "multi_choice", "answer_type": "text", "choices": "['yes', 'no']",
                                 "answer_option": "B", "skills": "['logical reasoning']"}, "no")
    assert mathvista.pre_extract("Cannot determine the answer", choice) == "Z"  # a refusal decides, wrongly
    assert mathvista.is_hit("The answer is (B).", choice) and not mathvista.is_hit("nan", choice)


@pytest.mark.parametrize(("cell", "skills"), [("['a b', 'c']", ("a b", "c")), ("statistical reasoning", ("statistical reasoning",)),
                                              ("'ab'", ("a", "b"))])
def test_skills_are_read_as_vlmevalkits_eval_reads_them(cell: str | None, skills: tuple[str, ...]) -> None:
    assert mathvista.skills_of(cell) == skills


@pytest.mark.parametrize("cell", ["statistics", "[1, x]", None])
def test_a_skills_cell_vlmevalkits_eval_stops_at_is_the_rows_error(cell: str | None) -> None:
    with pytest.raises(ValueError, match="field 'skills'"):
        mathvista.skills_of(cell)


def test_a_choices_cell_that_is_no_list_is_the_rows_error() -> None:
    with pytest.raises(ValueError, match="field 'choices'"):
        mathvista.question({"question_type": "multi_choice", "choices": "A or B"}, "A")


# --- MM-Vet ------------------------------------------------------------------------------------------------------

def test_mmvets_reading_of_every_recorded_reply_is_vlmevalkits() -> None:
    rows = REFERENCE["MMVet"]["rows"]
    for index, replies in _replies("MMVet").items():
        grades = [mmvet.read_grade(reply.strip()) for reply in replies]
        unreadable = next((n for n, g in enumerate(grades) if g is not None), len(grades))
        assert rows[index]["log"].count("Try ") == unreadable, index
        if unreadable < len(grades):
            assert grades[unreadable] == rows[index]["score"], index
        else:
            assert "All 5 retries failed" in rows[index]["log"] and rows[index]["score"] == 0.0


@pytest.mark.parametrize(("reply", "grade"), [("0.5", 0.5), ("1", 1.0), ("0", 0.0), ("1.2", None), ("-0.1", None),
                                              ("nan", None), ("inf", None), ("0.5 because", None), ("", None)])
def test_an_mmvet_grade_is_the_whole_reply_as_a_number_from_0_to_1(reply: str, grade: float | None) -> None:
    assert mmvet.read_grade(reply) == grade


def test_mmvet_capabilities_and_combinations_share_one_table_of_sums() -> None:
    assert mmvet.breakdowns("rec,know,gen") == {"capability": ("rec", "know", "gen"), "combination": ("rec_know_gen",)}
    assert mmvet.breakdowns("rec") == {"capability": ("rec", "rec"), "combination": ("rec",)}  # counted twice there


# --- LLaVA-Bench -------------------------------------------------------------------------------------------------

def test_llavabenchs_reading_of_every_recorded_reply_is_vlmevalkits() -> None:
    rows = REFERENCE["LLaVABench"]["rows"]
    for index, [reply] in _replies("LLaVABench").items():
        scores = llavabench.read_scores(reply.strip())
        theirs = (rows[index]["gpt4_score"], rows[index]["score"])
        assert (scores or llavabench.FAILED) == theirs, index


@pytest.mark.parametrize(("reply", "scores"), [("8 7\nwhy", (8.0, 7.0)), ("9,4", (9.0, 4.0)), ("8 8.5", (8.0, 8.5)),
                                               ("8  7", None), ("8 7 \nwhy", None), ("Scores: 8 7", None),
                                               ("8", None), ("nan 7", None)])
def test_llavabench_ratings_are_the_first_lines_two_fields(reply: str, scores: tuple[float, float] | None) -> None:
    assert llavabench.read_scores(reply) == scores


# --- the grading procedure -----------------------------------------------------------------------------------------

class Scripted:
    """A `chat_many` client answering from a script: per user text, the replies in the order asked (an
    exception is that call's failure); it records every call's temperature and token limit."""

    def __init__(self, script: dict[str, list[Any]]) -> None:
        self.script = script
        self.calls: list[tuple[str, float, int]] = []

    def chat_many(self, model: str, conversations: Sequence[Sequence[dict[str, Any]]], *, temperature: float = 0.0,
                  max_tokens: int = 512) -> list[Any]:
        out = []
        for conversation in conversations:
            key = next(k for k in self.script if k in conversation[-1]["content"])
            self.calls.append((key, temperature, max_tokens))
            reply = self.script[key][sum(1 for c in self.calls if c[0] == key) - 1]
            out.append(reply if isinstance(reply, Exception) else type("R", (), {"text": reply})())
        return out


class MemoryCache:
    def __init__(self) -> None:
        self.stored: dict[str, str] = {}

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        return {k: self.stored[k] for k in keys if k in self.stored}

    def put_many(self, entries: dict[str, str], model: str) -> None:
        self.stored.update(entries)


IDENTITY = {"kind": "served", "model": "openai:j", "url": "http://127.0.0.1:9/v1", "revision": None, "server": None}


def _mmvet_item(prediction: str, category: str = "rec") -> GradeItem:
    return GradeItem("1", {"question": "Q?", "answer": "A", "prediction": prediction}, category, mmvet.breakdowns(category))


def test_an_unreadable_grade_is_asked_again_hotter_then_is_the_samples_error() -> None:
    client = Scripted({"fine-pred": ["good", "0.7 maybe", "", "nice", "okay"], "right-pred": ["x", "0.8"]})
    [failed, graded] = LiveJudge(client, "j", IDENTITY).grade_many(MMVetGrader(), [_mmvet_item("fine-pred"),
                                                                                   _mmvet_item("right-pred")])
    assert [c[1] for c in client.calls if c[0] == "fine-pred"] == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert all(c[2] == 2048 for c in client.calls)
    assert failed.status == "error" and failed.grade is None and len(failed.attempts) == 5
    assert failed.error == "no readable grade in 5 replies (the last: 'okay')"
    assert graded.status == "graded" and graded.grade is not None and graded.grade.score == 0.8
    assert [a.temperature for a in graded.attempts] == [0.0, 0.5]


def test_a_failed_call_ends_the_item_at_once_and_compat_scores_it_as_vlmevalkit() -> None:
    client = Scripted({"down-pred": [ConnectionError("refused")], "up-pred": ["1.0"]})
    items = [_mmvet_item("down-pred"), _mmvet_item("up-pred")]
    [failed, graded] = LiveJudge(client, "j", IDENTITY).grade_many(MMVetGrader(), items)
    assert failed.status == "error" and len(failed.attempts) == 1
    assert failed.error == "the judge's call failed: ConnectionError: refused"
    assert graded.grade is not None and graded.grade.correct
    [fallback, _] = LiveJudge(Scripted({"down-pred": [ConnectionError("refused")], "up-pred": ["1.0"]}), "j", IDENTITY,
                              mode="compat").grade_many(MMVetGrader(), items)
    assert fallback.status == "graded" and fallback.source == "fallback" and fallback.grade.score == 0.0  # type: ignore[union-attr]
    assert "--mllm-judge-mode=compat" in str(fallback.error)


def test_replies_are_cached_under_the_judges_identity_and_prompt_and_failures_never() -> None:
    cache = MemoryCache()
    items = [_mmvet_item("first-pred"), _mmvet_item("second-pred")]
    first = Scripted({"first-pred": ["0.5"], "second-pred": [TimeoutError("slow")]})
    LiveJudge(first, "j", IDENTITY, cache=cache).grade_many(MMVetGrader(), items)
    again = Scripted({"first-pred": [], "second-pred": ["1.0"]})
    outcomes = LiveJudge(again, "j", IDENTITY, cache=cache).grade_many(MMVetGrader(), items)
    assert [c[0] for c in again.calls] == ["second-pred"]  # the failed call is asked again, the reply is not
    assert outcomes[0].attempts[0].cached and not outcomes[1].attempts[0].cached
    other = Scripted({"first-pred": ["0.5"]})
    LiveJudge(other, "j", {**IDENTITY, "revision": "v2"}, cache=cache).grade_many(MMVetGrader(), items[:1])
    worded = Scripted({"first-pred": ["0.5"]})
    mine = MMVetGrader(GradingPrompt("Grade it. {question} | {answer} | {prediction} |"))
    LiveJudge(worded, "j", IDENTITY, cache=cache).grade_many(mine, items[:1])
    assert len(other.calls) == len(worded.calls) == 1  # another revision, another prompt: asked afresh


def test_several_judge_runs_are_averaged_each_cached_apart() -> None:
    cache = MemoryCache()
    client = Scripted({"only-pred": ["0.5", "1.0"]})
    [outcome] = LiveJudge(client, "j", IDENTITY, cache=cache, runs=2).grade_many(MMVetGrader(), [_mmvet_item("only-pred")])
    assert outcome.grade is not None and outcome.grade.score == 0.75 and outcome.grade.values["grades"] == [0.5, 1.0]
    assert [a.run for a in outcome.attempts] == [0, 1] and len(cache.stored) == 2
    [once] = LiveJudge(Scripted({"only-pred": ["8 7"]}), "j", IDENTITY, runs=2).grade_many(LLaVABenchGrader(), [
        GradeItem("1", {"caption": "c", "question": "q", "reference": "r", "prediction": "only-pred"})])  # one run
    assert len(once.attempts) == 1


def test_mathvistas_rules_decide_before_the_judge_is_asked() -> None:
    question = mathvista.Question("free_form", "integer", "14", "nan", (), ("arithmetic reasoning",))
    items = [GradeItem("1", {"question": "How many?", "response": "14"}, question),
             GradeItem("2", {"question": "How many more?", "response": "about fourteen"}, question)]
    client = Scripted({"about fourteen": ["14"]})
    [rules, judged] = LiveJudge(client, "j", IDENTITY).grade_many(MathVistaGrader(), items)
    assert rules.source == "rules" and rules.grade.correct and rules.attempts == ()  # type: ignore[union-attr]
    assert judged.source == "judge" and judged.grade.correct  # type: ignore[union-attr]
    assert [(c[1], c[2]) for c in client.calls] == [(0.0, 128)]


def test_a_replayed_judge_reads_the_judged_files_cells() -> None:
    rows = {"1": {"index": 1, "score": 0.5, "log": "Succeed"}, "2": {"index": 2, "score": 0.0,
                                                                   "log": "All 5 retries failed.\n"}}
    judge = ReplayJudge(rows, {"kind": "replay", "file": "M_MMVet_gpt-4-turbo.xlsx"})
    [graded, failed, missing] = judge.grade_many(MMVetGrader(), [
        GradeItem("1", {}, "rec"), GradeItem("2", {}, "rec"), GradeItem("3", {}, "rec")])
    assert graded.grade is not None and graded.grade.score == 0.5 and graded.source == "replay"
    assert failed.status == "error" and "judge failed" in str(failed.error)
    assert missing.status == "error" and "has no row of index 3" in str(missing.error)
    part = graded_part(MMVetGrader(), judge, GradeItem("1", {}, "rec", {"capability": ("rec",)}), graded)
    assert part["judge"]["prompt"].startswith("VLMEvalKit's") and part["breakdowns"] == {"capability": ["rec"]}


# --- prompts ---------------------------------------------------------------------------------------------------------

def test_the_built_in_prompts_hold_their_placeholders_and_fill_in_one_pass() -> None:
    for grader in GRADERS.entries().values():
        used = set(re.findall(r"\{([a-z_]+)\}", grader.prompt.user))
        assert used == set(grader.placeholders), grader.name
    messages = render(LLaVABenchGrader.prompt, {"caption": "{question}", "question": "Q", "reference": "R",
                                                "prediction": "P"})
    assert messages[0]["role"] == "system" and "[Context]\n{question}\n\n[Question]\nQ" in messages[1]["content"]


def test_a_users_grading_prompts_replace_the_built_in_ones(tmp_path: Path) -> None:
    path = tmp_path / "prompts.yaml"
    path.write_text("mmvet:\n  system: Be strict.\n  user: 'Q: {question} GT: {answer} P: {prediction} Score:'\n")
    prompts = load_grading_prompts(path)
    grader = MMVetGrader(prompts["mmvet"])
    assert grader.messages(_mmvet_item("x")) == [{"role": "system", "content": "Be strict."},
                                                 {"role": "user", "content": "Q: Q? GT: A P: x Score:"}]
    assert prompts["mmvet"].digest != MMVetGrader.prompt.digest


@pytest.mark.parametrize(("text", "problem"), [
    ("mmvet:\n  user: 'Q: {question} P: {prediction}'\n", "mmvet.user: lacks {answer}"),
    ("mmvet:\n  user: '{question} {answer} {prediction} {image}'\n", "mmvet.user: has unknown {image}"),
    ("mmbench:\n  user: x\n", "'mmbench' is not a grader"),
    ("mmvet:\n  prompt: x\n", "mmvet: must be a mapping with `user`"),
    ("- a\n", "must map grader names")])
def test_a_bad_grading_prompts_file_names_the_field_and_the_fix(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "prompts.yaml"
    path.write_text(text)
    with pytest.raises(GradingPromptsError, match=re.escape(problem)):
        load_grading_prompts(path)


# --- the rows' cells -----------------------------------------------------------------------------------------------

def _spec(tmp_path: Path, options: str) -> Any:
    path = tmp_path / "bench.yaml"
    path.write_text(f"name: b\nloader: tsv\ndata: {{root: {JUDGED / 'LLaVABench'}, file: LLaVABench.tsv}}\n"
                    f"parser: llavabench\nloader_options: {options}\n")
    return load_spec(path)


def test_the_answer_column_and_kept_cells_come_from_the_file(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "{answer_column: gpt4_ans, keep_columns: [caption, image_id]}")
    [first, *_] = load_samples(spec, spec.resolve_data_root(None))
    assert first.answer == "He is riding a bicycle on a beach."
    assert first.metadata["columns"] == {"caption": "A man rides a bicycle along a beach at sunset.", "image_id": "000.jpg"}


@pytest.mark.parametrize(("options", "problem"), [
    ("{answer_column: gpt4_ans, keep_columns: [caption, grade]}", "no column 'grade' (loader_options.keep_columns"),
    ("{answer_column: reference}", "no column 'reference' (loader_options.answer_column"),
    ("{answer_column: gpt4_ans, keep_columns: caption}", "'loader_options.keep_columns' must be a list")])
def test_a_column_the_file_lacks_is_a_spec_error(tmp_path: Path, options: str, problem: str) -> None:
    from pytest_mllm.engine.spec import SpecError

    spec = _spec(tmp_path, options)
    with pytest.raises(SpecError, match=re.escape(problem)):
        load_samples(spec, spec.resolve_data_root(None))
