"""The bundled specs score the cells of the real released files as their reference does, on both layouts.

`fixtures/official/` holds, per benchmark with a TSV and a parquet layout, one set of rows shaped like
the real files' awkward ones (list-looking answers, one-element list answers, word answers, cells with
spaces and tabs, "None"/"NA"/"nan" options, numeric option columns, a subtask shared by two meta-tasks,
a byte-order mark; HallusionBench's figure and question groups with a missing or "nan" l2-category and
a category with a trailing space, answer cells "yes" and "Yes " that the reference compares exactly, yes/no
responses read either way; responses the reference's .xlsx prediction file changes ("None", "N/A" read as
"nan", a carriage return as "_x000D_") in every family; TextVQA's ten-answer list text with
quotes, NaN-like words, number words and an empty answer; a SEED-Bench parquet release in two files
whose option columns are numbers in one file only), written both ways, with recorded answers. Expected
numbers: VLMEvalKit's own evaluation run on the TSVs (`fixtures/official/reference_scores.json`):
repository open-compass/VLMEvalKit, commit e8e78f05f3080fe28154f2130321f17951c3be94, files
vlmeval/dataset/image_vqa.py (ImageVQADataset.evaluate_heuristic, OCRBench.evaluate),
vlmeval/dataset/image_mcq.py (ImageMCQDataset.evaluate_heuristic, judge exact_matching),
vlmeval/dataset/image_yorn.py (ImageYORNDataset.evaluate, judge exact_matching) with
vlmeval/dataset/utils/yorn.py (YOrN_Extraction, Hallusion_rating),
vlmeval/dataset/utils/{vqa_eval,multiple_choice}.py (process_line, hit_calculate: VQA score, ANLS,
relaxed accuracy), vlmeval/utils/matching_util.py (can_infer), vlmeval/smp/file.py (load: pandas
read_csv; dump: the predictions written to .xlsx through xlsxwriter and read back with read_excel, as
every evaluation there reads them); `list_cells`: those metrics on list-looking answer cells ("[1/2]",
"[2*3, 'a']", …), which the reference `eval`s; `response_probes`: responses ("None", "03", "a\r\nb",
"mailto:…", 40,000 characters, …) as that .xlsx round trip hands them to the scorers. Command in fixtures/official/README.md:
`cd /tmp/ref_v/src && PYTHONPATH=. ../venv/bin/python <repo>/fixtures/official/run_reference.py
<repo>/fixtures/official <repo>/fixtures/official/reference_scores.json`.

The sweep: every fixture, both layouts, answered by its recorded answers (replay), is scored with no
ERROR row (a run over it exits 0), every row's verdict equal to the reference's hit, the headline equal
to the reference's, and the two layouts equal row by row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.spec import find_spec
from pytest_mllm.evaluation import Evaluation, EvaluationSettings
from pytest_mllm.record import Record
from pytest_mllm.report.results import BenchmarkResult, results_document
from pytest_mllm.sample import Sample

from official_runs import assert_one_run_exits_0, replay_run

pytest.importorskip("pyarrow")

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official"
REFERENCE = json.loads((FIXTURES / "reference_scores.json").read_text(encoding="utf-8"))
BENCHMARKS = sorted(name for name in REFERENCE if name not in ("list_cells", "response_probes"))
LAYOUTS = {name: ("", "_parquet") if (FIXTURES / f"{name}_parquet").is_dir() else ("",) for name in BENCHMARKS}
PAIRED = [name for name in BENCHMARKS if len(LAYOUTS[name]) == 2]  # MMBench has no parquet release
CASES = [(name, layout) for name in BENCHMARKS for layout in LAYOUTS[name]]
SPEC_OF = {"seedbench_files": "seedbench"}  # a second fixture of a benchmark: its folder, read by that benchmark's spec
VQA_THRESHOLD = {"chartqa": 1.0, "docvqa": 0.5, "textvqa": 0.6}  # the reference's hit is a score; ours its verdict too


def run(spec_name: str, *, spec_path: Path | None = None) -> tuple[list[Record], BenchmarkResult]:
    done = replay_run(spec_name, FIXTURES / spec_name, spec_path=spec_path or _spec_path(spec_name))
    return done.records, done.result


@pytest.fixture(scope="module")
def runs() -> dict[str, tuple[list[Record], BenchmarkResult]]:
    return {name + layout: run(name + layout) for name, layout in CASES}


def _spec_path(folder: str) -> Path:
    name = folder.removesuffix("_parquet")
    return find_spec(SPEC_OF.get(name, name) + folder[len(name):])


def _by_row(records: list[Record]) -> list[Record]:
    return sorted(records, key=lambda r: r["order"])  # the file's row order, in both layouts


@pytest.mark.parametrize(("name", "layout"), CASES)
def test_every_row_is_scored_as_the_reference_scores_it(runs: dict[str, Any], name: str, layout: str) -> None:
    records, result = runs[name + layout]
    reference = REFERENCE[name]
    assert [r["error"] for r in records if r["status"] == "error"] == []  # a run over it exits 0
    if name == "mmbench":  # CircularEval: the reference's hit is per question, every pass right
        passes: dict[int, list[bool]] = {}
        for record in records:
            passes.setdefault(int(record["id"].rsplit("::", 1)[1]) % 1_000_000, []).append(bool(record["correct"]))
        assert [all(passes[q]) for q in sorted(passes)] == [bool(h) for h in reference["hit"]]
        assert result.metrics["circular_accuracy"] == pytest.approx(reference["report"]["Overall"][0])
        return
    scores = [r.get("score") if name in VQA_THRESHOLD else bool(r["correct"]) for r in _by_row(records)]
    expected = reference["hit"] if name in VQA_THRESHOLD else [bool(h) for h in reference["hit"]]
    assert scores == pytest.approx(expected)
    metrics = result.metrics
    if name == "ocrbench":
        assert metrics["ocrbench_score"] == reference["report"]["Final Score"]
    elif name in VQA_THRESHOLD:
        assert metrics["mean_score"] * 100 == pytest.approx(reference["report"]["Overall"])
    elif name == "hallusionbench":
        assert metrics["q_acc"] * 100 == pytest.approx(reference["report"]["Overall"]["qAcc"])
    else:
        assert metrics["accuracy"] == pytest.approx(reference["report"]["Overall"][0])


def test_both_layouts_give_the_same_verdicts_and_scores(runs: dict[str, Any]) -> None:
    for name in PAIRED:
        tsv, parquet = (_by_row(runs[name + layout][0]) for layout in ("", "_parquet"))
        assert [(r["status"], r.get("score"), r["parsed"]) for r in tsv] == \
            [(r["status"], r.get("score"), r["parsed"]) for r in parquet], name
        headline = runs[name][1].spec.headline
        assert runs[name][1].metrics[headline] == runs[name + "_parquet"][1].metrics[headline], name


def test_categories_differing_by_a_trailing_tab_stay_apart(runs: dict[str, Any]) -> None:
    report = REFERENCE["scienceqa"]["report"]
    for layout in ("scienceqa", "scienceqa_parquet"):
        metrics = runs[layout][1].metrics
        for category in ("Weather and climate", "Weather and climate\t", "Adaptations"):
            assert metrics[f"{category}.accuracy"] == pytest.approx(report[category][0]), (layout, category)


def test_hallusionbench_accuracies_per_category_and_l2_category(runs: dict[str, Any]) -> None:
    """aAcc, fAcc and qAcc overall, per category ("VS" and "VS " apart) and per l2-category; the reference's
    row for a missing l2-category ("nan": its figure and question keys still group those rows) has no rows
    of its own (pandas' NaN equals nothing) and is NaN, so it has no counterpart here."""
    report = REFERENCE["hallusionbench"]["report"]
    for layout in ("hallusionbench", "hallusionbench_parquet"):
        metrics = runs[layout][1].metrics
        for split, values in report.items():
            prefix = "" if split == "Overall" else ("category." if split in ("VD", "VS", "VS ") else "l2_category.")
            if values["aAcc"] is None:
                assert not any(key.startswith(f"{prefix}{split}.") for key in metrics), (layout, split)
                continue
            got = {name: metrics[f"{prefix}{split}.{name}" if prefix else name] * 100
                   for name in ("a_acc", "f_acc", "q_acc")}
            assert got == pytest.approx({"a_acc": values["aAcc"], "f_acc": values["fAcc"], "q_acc": values["qAcc"]}), \
                (layout, split)


def test_mmt_bench_meta_tasks_count_a_shared_subtask_whole(runs: dict[str, Any]) -> None:
    expected = REFERENCE["mmt_bench"]["l2_category"]
    for layout in ("mmt_bench", "mmt_bench_parquet"):
        metrics = runs[layout][1].metrics
        got = {key.split(".")[1]: value for key, value in metrics.items()
               if key.startswith("l2_category.") and key.endswith(".category_mean_accuracy")}
        assert got == pytest.approx(expected), layout
        assert metrics["anomaly_detection.accuracy"] == REFERENCE["mmt_bench"]["report"]["anomaly_detection"][0]


def test_option_cells_are_read_as_pandas_reads_them(runs: dict[str, Any]) -> None:
    """The options each layout gives equal the cells the reference's pandas reading gives (str of the value)."""
    for name in ("ai2d", "seedbench", "seedbench_files", "mmt_bench", "scienceqa", "realworldqa", "mmbench", "mmstar"):
        read = REFERENCE[name]["read"]
        expected = [{letter: str(read[letter][row]) for letter in "ABCDEFGHI"
                     if letter in read and read[letter][row] is not None} for row in range(len(read["answer"]))]
        for layout in LAYOUTS[name]:
            samples = [s for s in _samples(name + layout)]
            assert [dict(s.choices) for s in samples] == expected, name + layout


def _samples(spec_name: str) -> list[Any]:
    evaluation = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off",
                                               data={"": str(FIXTURES / spec_name)}))
    samples = evaluation.samples_for(evaluation.spec(_spec_path(spec_name)))
    return sorted(samples, key=lambda s: s.metadata["row"])


def test_deviations_are_off_by_default_named_when_on_and_recorded(tmp_path: Path, runs: dict[str, Any]) -> None:
    _, result = runs["mmt_bench"]
    entry = results_document({"mmt_bench": result}, [], {})["benchmarks"]["mmt_bench"]
    assert entry["deviations"] == []
    assert entry["reference"] == {"implementation": result.spec.about.reference, "repository": "open-compass/VLMEvalKit",
                                  "commit": "e8e78f05f3080fe28154f2130321f17951c3be94"}
    text = find_spec("mmt_bench").read_text(encoding="utf-8").replace("name: mmt_bench", "name: mmt_bench_friendly")
    (tmp_path / "friendly.yaml").write_text(text + "deviations: [strip_cells, keep_na_words]\n", encoding="utf-8")
    records, friendly = run("mmt_bench", spec_path=tmp_path / "friendly.yaml")
    entry = results_document({"mmt_bench_friendly": friendly}, [], {})["benchmarks"]["mmt_bench_friendly"]
    assert entry["deviations"] == ["strip_cells", "keep_na_words"]
    first = _by_row(records)[0]  # options " dog", "cat\t": the answer "cat" reads as B once stripped
    assert first["correct"] is True and REFERENCE["mmt_bench"]["hit"][0] == 0
    assert friendly.metrics["accuracy"] > result.metrics["accuracy"]


@pytest.mark.parametrize(("reference_name", "parser"), [("TextVQA_VAL", "textvqa_score"), ("DocVQA_VAL", "docvqa_anls"),
                                                       ("ChartQA_TEST", "chartqa_relaxed"), ("OCRBench", "ocrbench")])
def test_list_looking_answer_cells_are_computed_as_the_reference_evals_them(reference_name: str, parser: str) -> None:
    """Each cell of `list_cells` (`[1/2]`, `[2*3, 'a']`, `[Gambia, Niger]`, …) against each prediction scores
    what the reference's metric gives (its `eval` of the cell, then the metric), and is this row's error
    where the reference stops (an item that is not text: AttributeError; OCRBench evals every cell)."""
    from pytest_mllm.scoring.score import score_answer

    for case in REFERENCE["list_cells"]:
        expected = case[reference_name]
        if isinstance(expected, str):  # the exception that stopped the reference
            with pytest.raises(ValueError, match="cannot score it either|cannot score either"):
                score_answer(parser, case["prediction"], [case["cell"]])
        else:
            assert score_answer(parser, case["prediction"], [case["cell"]])[0] == pytest.approx(expected), case


def test_the_fixtures_are_what_their_script_writes() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(FIXTURES / "make_fixtures.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_run_over_every_fixture_exits_0(pytester: pytest.Pytester, tmp_path: Path, runs: dict[str, Any]) -> None:
    """One pytest-mllm run over every fixture folder, every row answered (the recorded answers, keyed by
    benchmark and sample id): no ERROR, exit status 0. A second fixture of a benchmark runs under a copy
    of its spec named as its folder."""
    names = [name + layout for name, layout in CASES]
    benches = []
    for folder in names:
        spec = _spec_path(folder)
        if spec.stem != folder:
            text = spec.read_text(encoding="utf-8").replace(f"name: {spec.stem}\n", f"name: {folder}\n")
            spec = tmp_path / f"{folder}.yaml"
            spec.write_text(text, encoding="utf-8")
        benches.append(str(spec) if spec.parent == tmp_path else folder)
    answers = tmp_path / "answers.jsonl"
    with answers.open("w", encoding="utf-8") as out:
        for spec_name in names:
            recorded = {json.loads(line)["id"]: json.loads(line)["response"]
                        for line in (FIXTURES / spec_name / "responses.jsonl").read_text(encoding="utf-8").splitlines()}
            for sample in _samples(spec_name):
                out.write(json.dumps({"id": f"{spec_name}::{sample.id}",
                                      "response": recorded[sample.metadata["source_id"]]}) + "\n")
    assert_one_run_exits_0(pytester, benches, {n: FIXTURES / n for n in names}, answers,
                           sum(len(runs[name][0]) for name in names))


def test_answer_option_text_reads_word_answers_as_their_option(tmp_path: Path, runs: dict[str, Any]) -> None:
    """RealWorldQA's word answers ("Uphill") are never right for the reference; the deviation reads them as
    the option holding that text."""
    text = find_spec("realworldqa_parquet").read_text(encoding="utf-8").replace("name: realworldqa_parquet",
                                                                                 "name: realworldqa_words")
    (tmp_path / "words.yaml").write_text(text + "deviations: [answer_option_text]\n", encoding="utf-8")
    records, friendly = run("realworldqa_parquet", spec_path=tmp_path / "words.yaml")
    assert [r["answer"] for r in _by_row(records)][:2] == ["A", "B"]
    assert REFERENCE["realworldqa"]["report"]["Overall"][0] == runs["realworldqa_parquet"][1].metrics["accuracy"] == 0.4
    assert friendly.metrics["accuracy"] == 0.8  # the answer "B" whose option is "None" stays unanswerable


def _probe_text(case: dict[str, Any]) -> str:
    prefix, filler, times, suffix = case.get("repeat") or (case["response"], "", 0, "")
    return prefix + filler * times + suffix


def test_responses_are_read_as_the_reference_reads_its_xlsx_prediction_file() -> None:
    """Every probe response, read back by `read_back`, is what VLMEvalKit's dump to .xlsx and load hand
    its scorers (missing-value words and an empty response "nan"; whitespace, numbers, "True" kept; control
    characters as Excel escapes; links as xlsxwriter writes them; cut at 32,767 UTF-16 units)."""
    import hashlib

    from pytest_mllm.scoring.prediction_cells import read_back

    probes = REFERENCE["response_probes"]["responses"]
    for case in probes:
        read = read_back(_probe_text(case))
        if "read" in case:
            assert read == case["read"], case["response"]
        else:
            assert (len(read), hashlib.sha256(read.encode("utf-8")).hexdigest()) == \
                (case["read_length"], case["read_sha256"]), case["repeat"][1:3]
    # the one reading not reproduced: a column whose every response is a number (or true/false) is typed
    # as a whole, so one response alone is kept as text ("03" stays "03"; among text, as there)
    typed = REFERENCE["response_probes"]["columns"][0]
    assert typed["read"][0] == "3.0" and read_back(typed["column"][0]) == "03"
    assert next(c["read"] for c in probes if c.get("response") == "03") == "03"


def test_records_keep_the_response_and_show_what_the_reference_scored(runs: dict[str, Any]) -> None:
    """A live response is scored as the reference's .xlsx gives it; the record keeps it as given."""
    records = _by_row(runs["textvqa"][0])
    assert (records[-1]["response"], records[-1]["read_response"], records[-1]["score"]) == ("None", "nan", 0.9)
    assert records[0]["read_response"] is None  # read back unchanged
    seed = _by_row(runs["seedbench_parquet"][0])[-1]
    assert (seed["response"], seed["read_response"], seed["correct"]) == ("B\r\n", "B_x000D_\n", False)


def test_responses_as_given_scores_the_live_text(tmp_path: Path, runs: dict[str, Any]) -> None:
    """The deviation `responses_as_given`: "None" against humans saying "none" is right, "B\\r\\n" reads B."""
    for name, friendlier in (("textvqa", 1.0), ("seedbench_parquet", True)):
        spec = find_spec(name)
        text = spec.read_text(encoding="utf-8").replace(f"name: {name}\n", f"name: {name}_as_given\n")
        (tmp_path / f"{name}.yaml").write_text(text + "deviations: [responses_as_given]\n", encoding="utf-8")
        records, result = run(name, spec_path=tmp_path / f"{name}.yaml")
        last = _by_row(records)[-1]
        assert last["read_response"] is None
        assert (last["score"] if name == "textvqa" else last["correct"]) == friendlier
        assert results_document({result.spec.name: result}, [], {})["benchmarks"][result.spec.name]["deviations"] \
            == ["responses_as_given"]


def test_hallusionbench_answer_cells_are_compared_exactly(runs: dict[str, Any]) -> None:
    """Answer cells "yes" and "Yes " are never right, as VLMEvalKit's `answer == extracted` has it."""
    for layout in ("hallusionbench", "hallusionbench_parquet"):
        by_answer = {r["answer"]: r for r in _by_row(runs[layout][0])[-4:]}
        assert by_answer["yes"]["parsed"] == "Yes" and by_answer["yes"]["correct"] is False, layout
        assert by_answer["Yes "]["parsed"] == "Yes" and by_answer["Yes "]["correct"] is False, layout
        assert [r["parsed"] for r in _by_row(runs[layout][0])] == REFERENCE["hallusionbench"]["extracted"], layout


def test_replayed_vlmevalkit_predictions_are_not_read_twice(tmp_path: Path) -> None:
    """A VLMEvalKit prediction file holds what its scorer read (here JSON, whose strings it keeps): replayed,
    each answer is scored as it is, never read through the .xlsx round trip again; a JSON Lines recording of
    live responses is read through it."""
    from pytest_mllm.engine.evaluator import sample_record
    from pytest_mllm.models.replay import ReplayModel
    from pytest_mllm.sample import Request
    from pytest_mllm.scoring.score import score_record

    spec = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off")).spec(find_spec("textvqa"))
    samples = [Sample(id=str(i), benchmark="textvqa", task="val", question="q", answer="none", answer_type="open",
                      metadata={"source_id": str(i)}) for i in (0, 1)]
    predictions = tmp_path / "model_TextVQA_VAL.json"
    predictions.write_text(json.dumps([{"index": 0, "prediction": "None"}, {"index": 1, "prediction": "a\rb"}]))
    live = tmp_path / "live.jsonl"
    live.write_text("".join(json.dumps({"id": str(i), "response": r}) + "\n" for i, r in enumerate(["None", "a\rb"])))
    for path, as_read, scored in ((predictions, True, [None, None]), (live, False, ["nan", "a_x000D_b"])):
        responses = ReplayModel(path).generate([Request(sample, "q", [], 8) for sample in samples])
        assert [(r.text, r.as_read) for r in responses] == [("None", as_read), ("a\rb", as_read)]
        records = [score_record(sample_record(sample, spec, "q"), sample, response, through_xlsx=True)
                   for sample, response in zip(samples, responses)]
        assert [r["read_response"] for r in records] == scored
        assert [r["response"] for r in records] == ["None", "a\rb"]
