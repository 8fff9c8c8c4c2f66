"""Sections: a method's results beside accuracy, declared once and registered where the method is defined,
reach every output through the generic reports; the record's core is typed and its parts are the sections'."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm import sections
from pytest_mllm.engine.evaluator import sample_record
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.record import CORRECT, ERROR, INCORRECT, STATUSES, RecordPart, dumps, loads, new_record, status_of
from pytest_mllm.sample import Sample
from pytest_mllm.scoring import metrics
from pytest_mllm.scoring.metrics import BenchmarkView, Metric, ScopeView
from pytest_mllm.sections import Column, HtmlPage, HtmlPart, OutputFile, Section

# -- a section as a plugin would add it: one metric, one section, registered here ------------------

STREAK: RecordPart[int] = RecordPart("streak", from_metadata="streak")


def scope_hit_rate(scope: ScopeView) -> dict[str, float]:
    """A value in every scope: the share of scored records with a streak above 1."""
    return {"hit_rate": sum((STREAK.get(r) or 0) > 1 for r in scope.scored) / len(scope.scored)} if scope.scored else {}


def streaks_section(view: BenchmarkView) -> dict[str, Any]:
    """A part beside `overall`: the longest streak and how many records carry one."""
    found = [s for r in view.records if (s := STREAK.get(r)) is not None]
    return {"streaks": {"longest": max(found), "carried": len(found)}} if found else {}


class StreaksSection(Section):
    title = "Streaks"
    metrics = ("streaks", "hit_rate")
    columns = (Column("hit_rate", "hits %", note="hits count streaks above 1"),)
    gate_values = ("longest",)
    outputs = (OutputFile("--mllm-streaks"),)
    record_parts = (STREAK,)

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        return [f"{benchmark} · longest streak {part['longest']}"]

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        body = page.render("run.html.j2", rows=[(name, str(p["longest"])) for name, p in parts.items()], benchmarks=[])
        return HtmlPart(self.name, self.title, body)

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        return [f"- {benchmark}: longest streak {part['longest']}"]

    def write(self, option: str, path: Path, results: Mapping[str, Any]) -> str | None:
        path.write_text(json.dumps({name: r.scopes["streaks"] for name, r in results.items()}), encoding="utf-8")
        return "streaks"


@pytest.fixture
def streaks() -> Iterator[Section]:
    """The section and its metrics registered for one test (the registries as they were afterwards)."""
    registries = (metrics.METRICS, sections.SECTIONS)
    before = [set(registry.names()) for registry in registries]
    metrics.register(Metric("hit_rate", scope_hit_rate, keys=("hit_rate",)))
    metrics.register(Metric("streaks", streaks_section, section=True))
    sections.all_sections()  # the package's own first, as a run finds them
    try:
        yield sections.register_section("streaks", StreaksSection())
    finally:
        for registry, names in zip(registries, before):
            for name in set(registry.names()) - names:
                registry.remove(name)


def _result(tmp_path: Path) -> Any:
    from pytest_mllm.report.results import compute_results

    spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl", metrics=("accuracy", "hit_rate", "streaks"))
    records = []
    for order, streak in enumerate([3, 1, 2, None]):
        sample = Sample(id=f"t::{order}", benchmark="b", task="t", question="q", answer="yes",
                        metadata={} if streak is None else {"streak": streak})
        record = sample_record(sample, spec, "q")
        record.update(status=status_of(order % 2 == 0), correct=order % 2 == 0, order=order)
        records.append(record)
    return compute_results({"b": spec}, records)["b"]


def test_a_section_registered_by_a_plugin_reaches_every_output(streaks: Section, tmp_path: Path) -> None:
    from pytest_mllm.harness.junit import suite_properties
    from pytest_mllm.report.html import write_html
    from pytest_mllm.report.markdown import markdown_summary
    from pytest_mllm.report.outputs import Outputs
    from pytest_mllm.report.results import results_document
    from pytest_mllm.report.terminal import benchmark_tables, render
    from pytest_mllm.scoring.gates import MetricSpace

    result = _result(tmp_path)
    assert [r.get("streak") for r in result.records] == [3, 1, 2, None]  # the part, from the sample's metadata
    assert result.metrics["streaks.longest"] == 3 and result.metrics["hit_rate"] == 0.5  # gates' namespace
    assert "streaks.longest" in MetricSpace.of(["accuracy", "hit_rate"], ["t"]).keys()  # known before the run

    text = render(benchmark_tables(result), 200, False)
    assert "hits %" in text and "50.00" in text  # its column, as a rate in %
    assert "b: hits count streaks above 1" in text and "b · longest streak 3" in text  # its note and its table
    assert suite_properties("b", result)["b.streaks.longest"] == 3  # JUnit
    assert "- b: longest streak 3" in markdown_summary({"b": result}, [], model="m")

    html = tmp_path / "r.html"
    write_html(results_document({"b": result}, [], {"model": "m"}), html)
    page = html.read_text(encoding="utf-8")
    assert 'id="streaks"' in page and "<h2>Streaks</h2>" in page and "hits %" in page

    out = tmp_path / "streaks.json"
    outputs = Outputs(section_files={"--mllm-streaks": out})
    outputs.check()
    assert outputs.write({}, {"b": result}) == [("streaks", out)]
    assert json.loads(out.read_text()) == {"b": {"longest": 3, "carried": 3}}


def test_a_section_may_not_take_another_sections_name_or_column(streaks: Section) -> None:
    class Other(Section):
        pass

    with pytest.raises(ValueError, match="already registered"):
        sections.register_section("streaks", Other())
    with pytest.raises(ValueError, match="section 'pope' is already registered"):
        sections.register_section("pope", Other())
    with pytest.raises(ValueError, match="column 'hit_rate' is another section's"):
        sections.register_section("more", Section(columns=(Column("hit_rate", "hit %"),)))
    with pytest.raises(TypeError, match="declared attributes"):
        Section(name="x", colums=())


def test_the_package_sections_are_found_where_they_are_defined() -> None:
    assert [s.name for s in sections.all_sections()] == sections.SECTIONS.names()
    assert {"vrp": "pytest_mllm.vrp.section", "judge": "pytest_mllm.judge.section",
            "tp_eval": "pytest_mllm.tpeval.section", "mme_results": "pytest_mllm.loaders.mme_results_section",
            "mme": "pytest_mllm.scoring.mme_section", "pope": "pytest_mllm.scoring.pope_section"}.items() \
        <= sections.SECTIONS.index().items()
    keys = [part.key for part in sections.record_parts()]
    assert len(keys) == len(set(keys))
    assert {"variant", "judge", "word_match", "human_label", "extraction", "original", "caption"} <= set(keys)
    assert set(sections.output_files()) == {"--mllm-vrp-radar", "--mllm-mme-results"}
    assert sections.is_rate_key("circular_accuracy") and sections.is_points_key("score")
    assert sections.gate_units() == "rates as fractions 0–1, not %; MME scores in points"


# -- the record's core --------------------------------------------------------------------------

# Every key a record of an earlier version holds (its `new_record`): the layout results files keep.
EARLIER_KEYS = {"id", "benchmark", "task", "group", "image", "question", "prompt", "answer", "answer_type", "parser",
                "pair_group", "category", "l2_category", "split", "response", "read_response", "parsed", "correct",
                "status", "error", "latency_s", "model", "cached", "variant", "human_label", "word_match", "judge",
                "score"}


def test_status_is_a_closed_set_written_as_before() -> None:
    assert STATUSES == ("correct", "incorrect", "error") == (CORRECT, INCORRECT, ERROR)
    assert status_of(True) == "correct" and status_of(False) == "incorrect"
    record = new_record(id="t::1", benchmark="b", task="t", status=CORRECT, correct=True)
    assert '"status": "correct"' in dumps([record]) and loads(dumps([record])) == [record]


def test_a_new_record_keeps_the_layout_of_earlier_results_files(tmp_path: Path) -> None:
    spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl")
    plain = sample_record(Sample(id="t::1", benchmark="b", task="t", question="q", answer="yes"), spec, "q")
    assert set(plain) == EARLIER_KEYS
    assert plain["variant"] is None and plain["judge"] is None and plain["word_match"] is None
    labelled = sample_record(Sample(id="t::2", benchmark="b", task="t", question="q", answer="yes",
                                    metadata={"human_label": 1, "vrp": {"source": "t::0"}}), spec, "q")
    assert labelled["human_label"] == 1 and labelled["variant"] == {"source": "t::0"}  # type: ignore[typeddict-item]


def test_a_record_part_reads_absent_and_null_alike() -> None:
    from pytest_mllm.judge.ensemble import JUDGE
    from pytest_mllm.judge.metrics import judge_metrics

    record = new_record(id="t::1", benchmark="b", task="t")
    assert JUDGE.get(record) is None and JUDGE.get({**record, "judge": None}) is None
    outcome = {"status": "judged", "correct": True, "split": "5-0", "error": None, "votes": []}
    JUDGE.put(record, outcome)  # type: ignore[arg-type]
    assert record["judge"] == outcome  # type: ignore[typeddict-item]
    # an earlier results file's open answers (every part present, null where unused) score as they did
    wrong = {"status": "judged", "correct": False, "split": "1-4", "error": None, "votes": []}
    earlier = [{**{key: None for key in EARLIER_KEYS}, "id": f"o::{n}", "benchmark": "b", "task": "o",
                "answer_type": "open", "status": "correct" if ok else "incorrect", "correct": ok, "word_match": ok,
                "human_label": int(ok), "judge": outcome if ok else wrong} for n, ok in enumerate([True, False])]
    assert judge_metrics(loads(json.dumps(earlier))) == {
        "scoring": "cee", "answered": 2, "word_accuracy": 0.5, "judge_errors": 0, "judge_error_rate": 0.0,
        "cee_accuracy": 0.5, "agreement": 1.0, "splits": {"1-4": 1, "5-0": 1}, "abstentions": 0,
        "human": {"word_match": {"count": 2, "agreement": 1.0, "kappa": 1.0},
                  "cee": {"count": 2, "agreement": 1.0, "kappa": 1.0}}}


def test_each_method_says_its_result_in_one_markdown_line() -> None:
    found = {s.name: s for s in sections.all_sections()}
    vrp = {"consistency": 0.5, "relation_holds": 0.25, "sensitivity": 0.125}
    assert found["vrp"].markdown("v", vrp) == [
        "- v, visual referring prompts: relation holds 25.00 %, consistency 50.00 %, sensitivity 12.50 pp"]
    judge = {"word_accuracy": 0.5, "cee_accuracy": 0.75, "agreement": 0.75, "judge_errors": 1}
    assert found["judge"].markdown("o", judge) == [
        "- o, open answers: word matching 50.00 %, CEE judge 75.00 % (agreement 75.00 %), 1 judge errors"]
    assert found["judge"].markdown("o", {"word_accuracy": 0.5, "judge_errors": 0}) == [
        "- o, open answers: word matching 50.00 %, 0 judge errors"]
    tp = {"original_accuracy": 0.5, "optimized_accuracy": 0.625, "samples": 8, "improved_tasks": 1, "task_count": 2}
    assert found["tp_eval"].markdown("s", tp) == [
        "- s, customized prompts: accuracy 50.00 % → 62.50 % on 8 samples, 1 of 2 tasks improved"]


def test_a_section_names_only_registered_metrics() -> None:
    registered = set(metrics.METRICS.names())
    for section in sections.all_sections():
        assert set(section.metrics) <= registered, (section.name, section.metrics)
        assert section.metrics or not (section.columns or section.gate_values), section.name  # whose values?


def test_a_number_column_is_shown_as_it_is_not_in_percent(tmp_path: Path) -> None:
    """A section's column in another unit than a rate ("number": a length, a count) is not scaled to %."""
    from pytest_mllm.report.results import compute_results
    from pytest_mllm.report.terminal import benchmark_tables, render

    registries = (metrics.METRICS, sections.SECTIONS)
    before = [set(registry.names()) for registry in registries]
    metrics.register(Metric("reply_length", lambda view: {"reply_chars": 2.5} if view.scored else {},
                            keys=("reply_chars",)))
    sections.all_sections()
    try:
        sections.register_section("reply_length", Section(metrics=("reply_length",),
                                                          columns=(Column("reply_chars", "chars", unit="number"),)))
        spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl", metrics=("accuracy", "reply_length"))
        sample = Sample(id="t::0", benchmark="b", task="t", question="q", answer="yes")
        record = sample_record(sample, spec, "q")
        record.update(status=status_of(True), correct=True, order=0)
        text = render(benchmark_tables(compute_results({"b": spec}, [record])["b"]), 200, False)
        assert "chars" in text and "2.50" in text and "250.00" not in text
    finally:
        for registry, names in zip(registries, before):
            for name in set(registry.names()) - names:
                registry.remove(name)


class _Echo:
    """A model answering each request with its prompt's last word."""

    name = "echo"
    needs_images = False

    def generate(self, requests: Any) -> list[Any]:
        from pytest_mllm.sample import Response

        return [Response(r.prompt.split()[-1]) for r in requests]


class TossSection(Section):
    """Gives the verdicts of the parser naming it once a batch is answered; runs tossed otherwise do not compare."""

    def verdict_step(self, settings: Any, run: Any, cache: Any) -> Any:
        def rule(triples: Any) -> None:
            for record, _, _ in triples:
                if record["parsed"] == "fail":
                    record["error"] = "the step could not rule"  # its own failure: the sample's error
                    continue
                right = record["parsed"] == settings
                record.update(correct=right, status=status_of(right), error=None)

        return rule

    def comparable(self, before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
        return None if before.get("side") == now.get("side") else "tossed otherwise"


def test_a_parser_may_leave_its_verdict_to_a_sections_step_and_a_section_may_refuse_a_comparison(
        tmp_path: Path) -> None:
    from pytest_mllm.engine.evaluator import Evaluator
    from pytest_mllm.scoring.score import NOT_YET_RULED, PARSERS, parser

    sections.all_sections()
    section = sections.register_section("toss", TossSection())
    parser("toss_call", verdict_by="toss")(lambda response, sample: response)
    try:
        spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl", parser="toss_call")
        items = [(Sample(id=f"t::{n}", benchmark="b", task="t", question=f"say {word}", answer="", answer_type="open"),
                  spec) for n, word in enumerate(("heads", "tails", "fail"))]
        asked: list[str] = []
        evaluator = Evaluator(lambda: _Echo(), model_name="echo",  # type: ignore[arg-type, return-value]
                              verdict_steps=lambda name: asked.append(name) or sections.SECTIONS.get(name).verdict_step(
                                  "heads", None, None))
        records = evaluator.evaluate(items)
        assert [(r["status"], r["error"]) for r in records] == [
            (CORRECT, None), (INCORRECT, None), (ERROR, "the step could not rule")]
        assert asked == ["toss"]  # built once per run
        unruled = Evaluator(lambda: _Echo(), model_name="echo").evaluate(items[:1])  # type: ignore[arg-type, return-value]
        assert (unruled[0]["status"], unruled[0]["error"]) == (ERROR, NOT_YET_RULED)  # never a verdict of its own
        assert sections.incomparable({"toss": {"side": "heads"}}, {"toss": {"side": "heads"}}) is None
        assert sections.incomparable({"toss": {"side": "heads"}}, {"overall": {}}) == "tossed otherwise"
        assert section.name == "toss"
    finally:
        PARSERS.remove("toss_call")
        sections.SECTIONS.remove("toss")


class RecountSection(Section):
    """Takes a second pass over every answered batch: an answer saying "maybe" is revised to wrong; its settings
    keep replies in the cache and are recorded, also when it has none."""

    def review_step(self, settings: Any, run: Any, cache: Any) -> Any:
        if settings is None:
            return None

        def review(pairs: Any) -> None:
            seen.append([sample.id for _, sample in pairs])
            for record, _ in pairs:
                if record["response"] == "maybe":
                    record.update(correct=False, status=status_of(False))

        seen: list[list[str]] = []
        review.seen = seen  # type: ignore[attr-defined]
        return review

    def uses_cache(self, settings: Any) -> bool:
        return settings is not None

    def describe(self, settings: Any) -> dict[str, Any]:
        return {"recount": settings}


def test_a_section_may_take_a_second_pass_over_each_batch_and_record_its_settings(tmp_path: Path) -> None:
    from pytest_mllm.engine.evaluator import Evaluator

    sections.all_sections()
    sections.register_section("recount", RecountSection())
    try:
        assert not sections.uses_cache({}) and sections.described({})["recount"] is None
        assert sections.uses_cache({"recount": "on"}) and sections.described({"recount": "on"})["recount"] == "on"
        steps = [step for step in sections.review_steps({"recount": "on"}, None, None) if hasattr(step, "seen")]
        assert len(steps) == 1 and not any(hasattr(s, "seen") for s in sections.review_steps({}, None, None))
        spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl", parser="exact_stripped")
        items = [(Sample(id=f"t::{n}", benchmark="b", task="t", question=f"say {word}", answer="maybe"), spec)
                 for n, word in enumerate(("maybe", "no"))]
        records = Evaluator(lambda: _Echo(), model_name="echo",  # type: ignore[arg-type, return-value]
                            review_steps=steps).evaluate(items)
        assert steps[0].seen == [["t::0", "t::1"]]  # type: ignore[attr-defined]  # the whole batch, once
        assert [(r["response"], r["status"]) for r in records] == [("maybe", INCORRECT), ("no", INCORRECT)]
        assert Evaluator(lambda: _Echo(), model_name="echo").evaluate(items[:1])[0]["status"] == CORRECT  # type: ignore[arg-type, return-value]
    finally:
        sections.SECTIONS.remove("recount")
class TwiceSection(Section):
    """With its settings "on": checks that a benchmark has samples, sets aside each task's first sample, and
    answers every batch twice, keeping the second answer beside the first; with "job": a job per task."""

    def __init__(self, asked: list[int]) -> None:
        self.asked = asked

    def check_samples(self, settings: Any, spec: Any, samples: Any, run: Any) -> None:
        if settings == "on" and not samples:
            raise ValueError(f"benchmark {spec.name!r} has no samples to answer twice")

    def set_aside(self, settings: Any, sample: Any) -> bool:
        return bool(settings == "on" and sample.id.endswith("::0"))

    def wrap_answer(self, settings: Any, answer: Any) -> Any:
        if settings != "on":
            return answer

        def twice(items: Any) -> list[Any]:
            self.asked.append(len(items))
            records = answer(items)
            for record, again in zip(records, answer(items)):
                record["error"] = f"again: {again['response']}"
            return records

        return twice

    def task_job(self, settings: Any, run: Any, answer: Any, cache: Any) -> Any:
        return ("a job", run.model) if settings == "job" else None


def test_a_section_may_check_set_aside_and_answer_samples_or_work_per_task_without_the_core_naming_it(
        tmp_path: Path) -> None:
    from pytest_mllm.engine.spec import SpecError
    from pytest_mllm.evaluation import Evaluation, EvaluationSettings

    sections.all_sections()
    asked: list[int] = []
    sections.register_section("twice", TwiceSection(asked))
    try:
        spec = BenchmarkSpec(path=tmp_path / "b.yaml", name="b", loader="jsonl")
        items = [(Sample(id=f"t::{n}", benchmark="b", task="t", question="?", answer="yes"), spec) for n in range(2)]
        plain = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off"))
        assert plain.task_job() is None and not plain.set_aside(items[0][0])
        assert [r["error"] for r in plain.answer(items)] == [None, None] and asked == []
        evaluation = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off", sections={"twice": "on"}))
        evaluation.check_samples(spec, [s for s, _ in items])
        with pytest.raises(SpecError, match="'b' has no samples to answer twice"):
            evaluation.check_samples(spec, [])
        assert [evaluation.set_aside(s) for s, _ in items] == [True, False]
        assert [r["error"] for r in evaluation.answer(items)] == ["again: Yes", "again: Yes"] and asked == [2]
        per_task = Evaluation(EvaluationSettings(model="baseline:yes", cache_mode="off", sections={"twice": "job"}))
        assert per_task.task_job() == ("a job", "baseline:yes") and per_task.task_job() is per_task.task_job()
    finally:
        sections.SECTIONS.remove("twice")
