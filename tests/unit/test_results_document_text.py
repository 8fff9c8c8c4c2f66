"""The results file's text: the same parsed content as before, the indented layout kept, one line per record."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_mllm.record import new_record
from pytest_mllm.report.results import document_text, write_json


def document(records: int = 3) -> dict[str, Any]:
    return {
        "pytest_mllm": "1.0", "settings": {"model": "m", "shard": None, "tags": ["a", "b"], "empty": {}},
        "benchmarks": {"b": {"metrics": {"accuracy": 0.5, "count": 2}, "scopes": {"tasks": {"t": {"count": 2}}},
                             "intervals": {"accuracy": {"value": 0.5, "se": 0.1, "ci": [0.2, 0.8]}}}},
        "gates": [{"gate": "b.accuracy>=0.1", "value": 0.5, "verdict": "pass"}],
        "records": [new_record(id=f"t::{n}", benchmark="b", task="t", question="Où est le chat ?\nRéponds « oui »",
                               answer="oui", variant={"source": "s", "levels": [1, 2]}, order=n) for n in range(records)],
    }


def test_the_text_parses_to_the_document() -> None:
    doc = document()
    assert json.loads(document_text(doc)) == doc


def test_without_lists_of_objects_the_text_is_json_dumps_indent_1_byte_for_byte() -> None:
    doc = {k: v for k, v in document().items() if k not in ("gates", "records")}
    doc["lists"] = {"plain": [1, "two", None], "empty": []}
    assert document_text(doc) == json.dumps(doc, indent=1, ensure_ascii=False)
    assert document_text({}) == json.dumps({}, indent=1)


def test_each_record_takes_one_line_and_text_stays_readable() -> None:
    doc = document(records=5)
    lines = document_text(doc).splitlines()
    record_lines = [line for line in lines if line.startswith('  {"id": "t::')]
    assert [json.loads(line.rstrip(",")) for line in record_lines] == doc["records"]
    assert ' "settings": {' in lines and '  "model": "m",' in lines  # the rest keeps its indented layout
    assert "Où est le chat" in document_text(doc)  # not escaped to \\u sequences


def test_write_json_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.json"
    write_json(path, document())
    write_json(path, document(records=1))
    assert json.loads(path.read_text(encoding="utf-8")) == document(records=1)
    assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]
