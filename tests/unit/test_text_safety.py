"""Text from data and servers made safe once (`echo.py`), and where it is rendered: the job summary's
Markdown, the JUnit XML, the terminal's Rich tables; non-finite baselines and unreadable model args refused."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from pytest_mllm.echo import json_loads, markdown_code, markdown_text, markup_text, well_formed, xml_text


def test_lone_surrogates_become_replacement_characters_and_pairs_stay() -> None:
    assert well_formed("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert json_loads('{"k\\ud800": ["\\udc00x", "\\ud83d\\ude00"], "n": 1}') == {"k\ufffd": ["\ufffdx", "\U0001f600"], "n": 1}
    assert json_loads(b'["plain"]') == ["plain"]
    "".join(json_loads('["\\ud800"]')).encode("utf-8")  # writable as UTF-8


def test_xml_text_leaves_only_characters_xml_holds() -> None:
    escaped = xml_text("task\x01\x1b[2J\ud800\ufffe end\t\n")
    assert escaped == "task\\x01\\x1b[2J\\ud800\\ufffe end\t\n"
    ET.fromstring(f'<p name="{escaped}"/>'.encode())  # parses


def test_markup_text_shows_rich_markup_as_written() -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table()
    table.add_column("category")
    for name in ("[/]", "[bold]x[/bold]", "[link=http://e]y", "a\\", "\x1b[2J"):
        table.add_row(markup_text(name))
    out = io.StringIO()
    Console(file=out, width=80).print(table)
    assert "[/]" in out.getvalue() and "[bold]x[/bold]" in out.getvalue() and "\\x1b[2J" in out.getvalue()


@pytest.mark.parametrize("name", [
    "g\n## All gates passed", "![x](http://evil/p.png)", "<img src=x onerror=alert(1)>", "a|b", "[l](javascript:x)",
    "www.evil.com", "*bold* _it_ `code`", "line\u2028## h", "x\r\n---", "\\[escaped\\]",
])
def test_markdown_text_is_one_line_of_plain_text(name: str) -> None:
    shown = markdown_text(name)
    assert "\n" not in shown and "\r" not in shown and "\u2028" not in shown
    # every character Markdown reads as syntax comes escaped: no heading, link, image, HTML, emphasis or cell break
    assert all(i > 0 and shown[i - 1] == "\\" for i, c in enumerate(shown) if c in "[]<>!#|*_`"), shown
    assert "http:" not in shown and "www." not in shown


def test_markdown_text_leaves_plain_words_and_numbers_as_they_are() -> None:
    assert markdown_text("benchmark 'pope' did not run; change -0.5556 (p=0.3)") == (
        "benchmark 'pope' did not run; change -0.5556 (p=0.3)")


def test_markdown_code_keeps_a_code_span_and_a_table_cell_whole() -> None:
    assert markdown_code("a|b`c\nd") == "a\\|b'c d"


def test_the_job_summary_shows_hostile_names_as_text() -> None:
    from metric_records import rec

    from pytest_mllm.engine.spec import load_spec
    from pytest_mllm.report.markdown import markdown_summary
    from pytest_mllm.report.results import compute_results

    spec = load_spec(Path(__file__).resolve().parents[2] / "benchmarks" / "mme.yaml")
    records = [{**rec("existence", "g1", "yes", "yes"), "benchmark": "mme", "id": "a", "order": 0}]
    results = compute_results({"mme": spec}, records)
    text = markdown_summary(results, [], model="main\n## All gates passed\n![ok](http://evil/badge.png)")
    lines = text.splitlines()
    assert not [line for line in lines if line.startswith("## All gates")]
    assert "![ok](http" not in text and "\\!\\[ok\\](http\\://evil/badge.png)" in text
    assert lines[0].startswith("## pytest-mllm: main \\#\\# All gates passed")


def test_a_non_finite_baseline_metric_is_refused(tmp_path: Path) -> None:
    from pytest_mllm.scoring.gates import GateSyntaxError, load_baseline

    for word in ("-Infinity", "NaN", "Infinity"):
        path = tmp_path / "b.json"
        path.write_text('{"benchmarks": {"mme": {"metrics": {"accuracy": %s}}}}' % word)
        with pytest.raises(GateSyntaxError, match=f"it holds {word}, which is not a finite number"):
            load_baseline(path)
    path.write_text(json.dumps({"benchmarks": {"mme": {"metrics": {"accuracy": 0.5}}}}))
    assert load_baseline(path) == {"mme": {"accuracy": 0.5}}


@pytest.mark.parametrize(("text", "message"), [
    ("max_pixels=" + "9" * 5000, "the value of 'max_pixels' holds a number of more than 4300 digits"),
    ("max_pixels=" + "[" * 5000 + "]" * 5000, "the value of 'max_pixels' is nested too deeply to read"),
    ('max_memory={"0": "-1GiB"}', 'max_memory["0"]="-1GiB" is not a size'),
    ('max_memory={"cpu": "lots"}', 'max_memory["cpu"]="lots" is not a size'),
    ('max_memory={"0": -5}', 'max_memory["0"]=-5 is not a size'),
])
def test_model_args_that_cannot_be_read_or_used_name_the_key(text: str, message: str) -> None:
    from pytest_mllm.models.model_args import ModelArgsError, parse_model_args

    with pytest.raises(ModelArgsError, match="--mllm-model-args: " + message.replace("[", r"\[").replace("]", r"\]")):
        parse_model_args([text])


def test_max_memory_sizes_accelerate_reads_are_accepted() -> None:
    from pytest_mllm.models.model_args import parse_model_args

    args = parse_model_args(['max_memory={"0": "20GiB", "1": "500MB", "cpu": 1000000, "disk": "1.5GB"}'])
    assert args.loading["max_memory"]["cpu"] == 1000000
