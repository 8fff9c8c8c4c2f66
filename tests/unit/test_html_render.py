"""The HTML report and the run comparison, on small hand-built results documents."""

from __future__ import annotations

import base64
import hashlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.report.compare import CompareError, compare, load_results
from pytest_mllm.report.html import format_value, is_rate, safe_thumbnail, write_html
from pytest_mllm.scoring.gates import parse_max_drop

JPEG = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8U"
INJECTED = "<script>alert(1)</script>"


def record(id: str, status: str, task: str = "existence", **fields: Any) -> dict[str, Any]:
    base = {"id": id, "benchmark": "bench", "task": task, "group": "perception", "image": f"{id}.png",
            "question": f"Is there a {id}?", "prompt": f"Is there a {id}?", "answer": "yes",
            "response": "No" if status != "correct" else "Yes", "parsed": "no" if status != "correct" else "yes",
            "correct": status == "correct", "status": status, "error": "boom" if status == "error" else None,
            "latency_s": 0.01, "model": "m", "cached": False, "order": 0, "duration_s": 0.01}
    return {**base, **fields}


def document(records: list[dict[str, Any]] | None = None, gates: list[dict[str, Any]] | None = None,
             tasks: dict[str, dict[str, Any]] | None = None, metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    tasks = tasks if tasks is not None else {
        "existence": {"count": 2, "errors": 0, "accuracy": 0.5, "accuracy_plus": 0.0, "score": 50.0},
        "count": {"count": 2, "errors": 0, "accuracy": 1.0, "accuracy_plus": 1.0, "score": 200.0},
    }
    overall = {"count": 4, "errors": 0, "accuracy": 0.75, "accuracy_plus": 0.5, "score": 250.0}
    return {
        "pytest_mllm": "0.1.0", "created": "2026-01-02T03:04:05+00:00", "python": "3.11.7",
        "settings": {"model": "m", "batch_size": 8, "cache": "on", "benchmarks": ["/b.yaml"], "strict": False,
                     "gates": [], "baseline": None},
        "benchmarks": {"bench": {
            "spec": "/b.yaml", "version": "1", "headline": "score",
            "metrics": metrics if metrics is not None else {**overall, "existence": 50.0, "count.score": 200.0},
            "scopes": {"overall": overall, "tasks": tasks, "groups": {"perception": overall}},
        }},
        "gates": gates or [],
        "records": records if records is not None else [record("a", "correct"), record("b", "incorrect")],
    }


def html_of(doc: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "sub" / "report.html"
    write_html(doc, path)
    return path.read_text(encoding="utf-8")


def test_model_and_data_text_is_escaped(tmp_path: Path) -> None:
    task = "<script>alert(3)</script>"
    wrong = record("x<b>1</b>", "incorrect", task=task, response=INJECTED, question='<img src=x onerror="alert(2)">',
                   parsed="</dd><script>alert(4)</script>")
    doc = document([record("a", "correct"), wrong],
                   tasks={task: {"count": 1, "errors": 0, "accuracy": 0.0}, "ok": {"count": 1, "errors": 0,
                                                                               "accuracy": 1.0}})
    doc["settings"]["model"] = "<script>alert(5)</script>"
    doc["settings"]["prompts_file"] = "<i>p.yaml</i>"
    html = html_of(doc, tmp_path)
    assert "<script>alert" not in html and "<img src=x" not in html and "<i>p.yaml" not in html
    assert html.count("<script") == 1  # the page's own filter script
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=&#34;alert(2)&#34;&gt;" in html
    assert "&lt;script&gt;alert(3)&lt;/script&gt;" in html  # the task name, in the tables and the chart
    assert "prompts file" in html and "&lt;i&gt;p.yaml&lt;/i&gt;" in html


def test_a_response_read_otherwise_for_scoring_is_shown_beside_it_escaped(tmp_path: Path) -> None:
    wrong = record("x", "incorrect", response="B\r\n", parsed="unreadable")
    wrong["read_response"] = "B_x000D_<b>"
    html = html_of(document([wrong, record("a", "incorrect", response="A")]), tmp_path)
    assert html.count("as scored") == 1 and "B_x000D_&lt;b&gt;" in html


def test_sections_appear_only_when_their_data_exists(tmp_path: Path) -> None:
    quiet = html_of(document([record("a", "correct")]), tmp_path)
    assert 'id="run"' in quiet and 'id="scores"' in quiet
    for absent in ('id="gates"', 'id="incorrect"', 'id="errors"', "<img"):
        assert absent not in quiet
    gates = [{"gate": "bench.score>=300", "value": 250.0, "limit": 300.0, "verdict": "fail", "note": ""},
             {"gate": "bench.accuracy>=0.5", "value": 0.75, "limit": 0.5, "verdict": "pass", "note": ""}]
    busy = html_of(document([record("a", "incorrect"), record("b", "error")], gates=gates), tmp_path)
    assert 'id="gates"' in busy and 'class="badge fail"' in busy and 'class="badge pass"' in busy
    assert 'id="incorrect"' in busy and "Incorrect answers (1)" in busy
    assert 'id="errors"' in busy and "boom" in busy
    assert "1/2 pass" in busy  # the gates' card


@pytest.mark.parametrize("thumbnail", [
    "http://evil.example/x.jpg", "https://evil.example/x.png", "//evil.example/x.png", "javascript:alert(1)",
    "data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+", "data:text/html;base64,PHNjcmlwdD4=",
    'data:image/jpeg;base64,AAAA" onerror="alert(1)', "data:image/png,evil", 42,
])
def test_a_thumbnail_that_is_not_a_data_image_is_dropped(tmp_path: Path, thumbnail: Any) -> None:
    assert safe_thumbnail(thumbnail) is None
    html = html_of(document([record("a", "incorrect", thumbnail=thumbnail)]), tmp_path)
    assert "<img" not in html and "evil" not in html and "onerror" not in html
    assert "no image" in html


def test_a_data_image_thumbnail_is_shown(tmp_path: Path) -> None:
    png = "data:image/png;base64," + base64.b64encode(b"\x89PNG....").decode()
    assert safe_thumbnail(png) == png
    html = html_of(document([record("a", "incorrect", thumbnail=JPEG)]), tmp_path)
    assert f'<img src="{JPEG}"' in html


def test_mme_like_benchmarks_get_score_bars_as_inline_svg(tmp_path: Path) -> None:
    html = html_of(document(), tmp_path)
    assert html.count("<svg") == 1 and "Score per subtask" in html and "score (0–200)" in html
    assert "<?xml" not in html and "DOCTYPE svg" not in html


def test_chart_labels_are_plain_text_not_mathtext(tmp_path: Path) -> None:
    tasks = {name: {"count": 1, "errors": 0, "accuracy": 0.5} for name in ("costs $5 or $6", "a_$b^2$", "\\frac{")}
    html = html_of(document(tasks=tasks), tmp_path)
    assert "<svg" in html and "costs $5 or $6" in html and "a_$b^2$" in html


def test_without_matplotlib_the_report_says_how_to_get_charts(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    html = html_of(document(), tmp_path)
    assert "<svg" not in html and "pytest-mllm[html]" in html and 'id="scores"' in html


def test_the_page_is_self_contained_and_its_policy_allows_only_its_script(tmp_path: Path) -> None:
    html = html_of(document([record("a", "incorrect", thumbnail=JPEG)]), tmp_path)
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html)
    assert not re.search(r"""url\(\s*["']?(?!#)""", html) and "@import" not in html  # url(#id) is in-page
    policy_tag = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    script_tag = re.search(r"<script>(.*?)</script>", html, re.S)
    assert policy_tag and script_tag
    policy, script = policy_tag.group(1), script_tag.group(1)
    assert "default-src 'none'" in policy and "img-src data:" in policy
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy


@pytest.mark.parametrize(("key", "value", "headline", "rate"), [
    ("accuracy", 0.5, "score", True), ("existence.score", 90.0, "accuracy", False), ("errors", 3, "accuracy", False),
    ("existence", 0.5, "accuracy", True), ("existence", 90.0, "score", False),
    ("count", 0.5, "accuracy", True),  # a task named "count": its headline, not the sample count
])
def test_rates_are_told_from_scores_and_counts(key: str, value: Any, headline: str, rate: bool) -> None:
    assert is_rate(key, value, headline) is rate


def test_values_are_formatted_for_people() -> None:
    assert format_value(0.4975, True) == "49.75" and format_value(1453.214, False) == "1453.21"
    assert format_value(360, True) == "360" and format_value(None, True) == "–"


# -- intervals ---------------------------------------------------------------------------

BOOTSTRAP = "percentile bootstrap over units, stratified by task, 1000 resamples, seed 0"


def with_intervals(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with the `intervals` and `intervals_method` a run with scipy writes (see report/results.py)."""
    bench = doc["benchmarks"]["bench"]
    bench["scopes"]["categories"] = {"color <b>": {"count": 4, "accuracy": 0.75}}
    bench["intervals"] = {
        "accuracy": {"value": 0.75, "se": 0.2165, "ci": [0.30064, 0.95441], "method": "wilson"},
        "score": {"value": 250.0, "se": 40.0, "ci": [180.0, 300.5], "method": "bootstrap"},
        "existence.score": {"value": 50.0, "se": 0.0, "ci": [50.0, 50.0], "method": "bootstrap"},
        "perception.accuracy_plus": {"value": 0.5, "se": 0.25, "ci": [0.0, 1.0], "method": "bootstrap"},
        "category.color <b>.accuracy": {"value": 0.75, "se": 0.2165, "ci": [0.30064, 0.95441], "method": "wilson"},
        "count.score": {"value": 200.0, "se": 1.0, "ci": ["<b>", None], "method": "bootstrap"},  # unreadable: no ±
    }
    bench["intervals_method"] = {"level": 0.95, "accuracy": "wilson", "other": BOOTSTRAP}
    return doc


def scores_html(html: str) -> str:
    """The scores section without its charts."""
    section = html[html.index('<section id="scores">'):]
    return re.sub(r"<svg.*?</svg>", "", section[:section.index("</section>")], flags=re.S)


def test_scores_show_their_interval_with_bounds_and_method_on_hover(tmp_path: Path) -> None:
    scores = scores_html(html_of(with_intervals(document()), tmp_path))
    # overall accuracy, a rate: ± in percentage points, the Wilson bounds in the tooltip
    assert ('75.00<span class="muted pm" title="95 % interval: 30.06 to 95.44 %; standard error 21.65 pp '
            '(Wilson score interval)"> ±32.7</span>') in scores
    # an MME score (points) with the document's bootstrap method
    assert (f'250.00<span class="muted pm" title="95 % interval: 180.00 to 300.50; standard error 40.00 ({BOOTSTRAP})">'
            " ±60.2</span>") in scores
    assert "50.00<span class=\"muted pm\"" in scores and "> ±0.0</span>" in scores  # a task's score
    assert '50.00<span class="muted pm" title="95 % interval: 0.00 to 100.00 %' in scores  # the group's acc+
    assert scores.count("±32.7") == 2  # overall and the category (name escaped in its key and its cell)
    assert "color &lt;b&gt;" in scores and "color <b>" not in scores
    assert "200.00</td>" in scores  # count's score: its interval is unreadable, no ± and no markup from it
    assert "<b>" not in scores
    assert "<p class=\"note\">± is half the width of the score&#39;s 95 % interval" in scores
    assert f"Wilson for accuracies, otherwise a {BOOTSTRAP}." in scores


def test_interval_text_from_the_document_is_escaped(tmp_path: Path) -> None:
    doc = with_intervals(document())
    doc["benchmarks"]["bench"]["intervals_method"]["other"] = INJECTED
    doc["benchmarks"]["bench"]["intervals"]["accuracy"]["method"] = '"><script>alert(6)</script>'
    html = html_of(doc, tmp_path)
    assert "<script>alert" not in html and html.count("<script") == 1
    assert "otherwise a &lt;script&gt;alert(1)&lt;/script&gt;." in html
    assert 'title="95 % interval: 180.00 to 300.50; standard error 40.00 (&lt;script&gt;alert(1)&lt;/script&gt;)"' in html
    assert "(&#34;&gt;&lt;script&gt;alert(6)&lt;/script&gt;)" in html


def test_without_intervals_no_plus_minus_and_the_note_says_why(tmp_path: Path) -> None:
    old = scores_html(html_of(document(), tmp_path))
    assert "±" not in old and 'class="muted pm"' not in old  # a document written before intervals
    doc = document()
    doc["benchmarks"]["bench"]["intervals_note"] = "intervals need scipy and numpy: pip install 'pytest-mllm[stats]'"
    scores = scores_html(html_of(doc, tmp_path))
    assert "±" not in scores
    assert "No uncertainty shown: intervals need scipy and numpy: pip install &#39;pytest-mllm[stats]&#39;." in scores


# -- compare -------------------------------------------------------------------------------


def two_runs() -> tuple[dict[str, Any], dict[str, Any]]:
    base = document([record("a", "correct"), record("b", "incorrect"), record("c", "correct"),
                     record("d", "error"), record("gone", "correct")],
                    metrics={"count": 4, "errors": 1, "accuracy": 0.5, "score": 100.0})
    head = document([record("a", "incorrect", thumbnail=JPEG), record("b", "correct"), record("c", "correct"),
                     record("d", "correct"), record("new", "incorrect")],
                    metrics={"count": 4, "errors": 0, "accuracy": 0.75, "score": 90.0, "f1": 0.5})
    head["benchmarks"]["extra"] = {"headline": "accuracy", "metrics": {"accuracy": 0.3}}
    return base, head


def test_compare_gives_metrics_side_by_side_with_deltas_against_the_first_run() -> None:
    base, head = two_runs()
    result = compare([base, head], ["base", "head"])
    bench = result["benchmarks"]["bench"]
    assert bench["metrics"]["accuracy"] == [0.5, 0.75] and bench["deltas"]["accuracy"] == [None, 0.25]
    assert bench["deltas"]["score"] == [None, -10.0] and bench["deltas"]["errors"] == [None, -1]
    assert bench["metrics"]["f1"] == [None, 0.5] and bench["deltas"]["f1"] == [None, None]
    assert result["benchmarks"]["extra"]["metrics"]["accuracy"] == [None, 0.3]
    assert [r["label"] for r in result["runs"]] == ["base", "head"] and result["gates"] == []


def test_compare_lists_the_samples_whose_verdict_flipped() -> None:
    base, head = two_runs()
    result = compare([base, head], ["base", "head"])
    flips = {f["id"]: f for f in result["flips"]}
    assert set(flips) == {"a", "b", "d"}  # c stayed correct; "gone" and "new" are in one run only
    assert flips["a"]["change"] == "regressed" and flips["a"]["thumbnail"] == JPEG
    assert flips["a"]["before"]["status"] == "correct" and flips["a"]["after"]["response"] == "No"
    assert flips["b"]["change"] == "fixed" and flips["d"]["change"] == "fixed"  # error → correct
    assert result["flip_counts"] == {"head": {"compared": 4, "changed_inputs": 0, "regressed": 1, "fixed": 2}}


def test_compare_checks_regression_limits_for_each_later_run() -> None:
    base, head = two_runs()
    limits = [parse_max_drop("bench.score=5"), parse_max_drop("bench.score=20"), parse_max_drop("bench.accuracy=0")]
    result = compare([base, head, base], ["base", "head", "again"], limits)
    verdicts = {(g["run"], g["gate"]): g["verdict"] for g in result["gates"]}
    assert verdicts[("head", "bench.score drop<=5")] == "fail"
    assert verdicts[("head", "bench.score drop<=20")] == "pass"
    assert verdicts[("head", "bench.accuracy drop<=0")] == "pass"
    assert verdicts[("again", "bench.score drop<=5")] == "pass"
    failed = next(g for g in result["gates"] if g["verdict"] == "fail")
    assert failed["value"] == 90.0 and failed["limit"] == 95.0


def test_compare_needs_a_label_per_run() -> None:
    base, head = two_runs()
    with pytest.raises(ValueError):
        compare([base, head], ["only one"])


@pytest.mark.parametrize(("content", "problem"), [
    ("not json", "not JSON"), ("[1, 2]", "not a JSON object"), ('{"records": []}', "no 'benchmarks' object"),
    ('{"benchmarks": {"b": {"headline": "accuracy"}}}', "benchmark 'b' has no 'metrics' object"),
])
def test_a_file_that_is_not_a_results_document_is_named(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "thing.json"
    path.write_text(content)
    with pytest.raises(CompareError, match=re.escape(str(path))) as info:
        load_results(path)
    assert problem in str(info.value) and "not a pytest-mllm results file" in str(info.value)


def section_part(document: dict[str, Any], name: str) -> Any:
    """The registered section `name`'s part of the page, or None."""
    from pytest_mllm.report import html as html_report

    return next((part for part in html_report.section_parts(document) if part.id == name), None)


def test_vrp_and_judge_sections_appear_only_with_their_data() -> None:
    plain = {"benchmarks": {"b": {"scopes": {"overall": {"count": 1}}}}}
    assert section_part(plain, "vrp") is None and section_part(plain, "judge") is None
    vrp = {"levels": {"none": {"count": 2, "accuracy": 0.5}}, "axes": {"C_Red": {"count": 2, "accuracy": 1.0}},
           "consistency": 0.5, "relation_holds": 0.25, "sensitivity": 0.5, "strategies": {}}
    judge = {"scoring": "cee", "answered": 3, "word_accuracy": 1 / 3, "judge_errors": 1, "judge_error_rate": 1 / 3,
             "cee_accuracy": 0.5, "agreement": 0.5, "splits": {"4-1": 1, "5-0": 1}, "abstentions": 0,
             "human": {"cee": {"count": 2, "agreement": 1.0, "kappa": 1.0}}}
    doc = {"benchmarks": {"v": {"scopes": {"vrp": vrp, "judge": judge}}}}
    vrp_body = str(section_part(doc, "vrp").body)
    assert "C_Red" in vrp_body and "sensitivity" in vrp_body and "<svg" in vrp_body
    judge_body = str(section_part(doc, "judge").body)
    assert "CEE accuracy" in judge_body and "vote splits" in judge_body and "κ" in judge_body


def test_the_tp_eval_section_compares_prompts_per_task_and_escapes_names() -> None:
    assert section_part({"benchmarks": {"b": {"scopes": {"overall": {"count": 1}}}}}, "tp_eval") is None
    tp = {"tasks": {"exist<b>": {"samples": 4, "original_accuracy": 0.25, "optimized_accuracy": 0.75, "delta": 0.5}},
          "samples": 4, "original_accuracy": 0.25, "optimized_accuracy": 0.75, "improved_tasks": 1, "worse_tasks": 0,
          "task_count": 1, "improvement_ratio": 2.0}
    doc = {"settings": {"prompts_model": "model<A>"}, "benchmarks": {"s": {"scopes": {"tp_eval": tp}}}}
    body = str(section_part(doc, "tp_eval").body)
    assert "exist&lt;b&gt;" in body and "exist<b>" not in body and "model&lt;A&gt;" in body
    assert "+50.00" in body and "improved tasks 1/1" in body and "+200.0 %" in body and "<svg" in body
