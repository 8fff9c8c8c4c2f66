"""The spec model: its JSON Schema (benchmarks/spec.schema.json) and its errors in the spec's words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pytest_mllm.engine.spec import SpecError, bundled_specs, is_spec_file, load_spec, schema_text, spec_schema

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "benchmarks" / "spec.schema.json"
REGENERATE = "python -m pytest_mllm.engine.spec --write-schema benchmarks/spec.schema.json"


def spec_files() -> list[Path]:
    fixtures = sorted(p for p in (REPO / "fixtures").rglob("*.y*ml") if is_spec_file(p))
    return sorted(bundled_specs().values()) + fixtures


def test_committed_schema_is_what_the_model_generates() -> None:
    assert SCHEMA.read_text(encoding="utf-8") == schema_text(), (
        f"{SCHEMA} is out of date with the spec model or the parser/metric registries; regenerate it: {REGENERATE}")


def test_schema_lists_the_registered_names() -> None:
    from pytest_mllm.scoring.metrics import known_metrics
    from pytest_mllm.scoring.score import PARSERS

    properties = spec_schema()["properties"]
    assert properties["parser"]["enum"] == sorted(PARSERS.names())
    assert properties["metrics"]["items"]["enum"] == sorted(known_metrics())
    assert properties["variants"]["enum"] == ["none", "grid", "full", "property"]
    assert "mme" in properties["loader"]["enum"] and properties["name"]["description"]
    assert spec_schema()["required"] == ["name", "loader"]


def test_registries_are_read_at_validation_time(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from pytest_mllm.scoring.score import PARSERS, get_parser, parser

    parser("my_parser")(get_parser("exact").read)
    request.addfinalizer(lambda: PARSERS.remove("my_parser"))
    path = tmp_path / "spec.yaml"
    path.write_text("name: x\nloader: jsonl\ntasks: {t: {parser: my_parser}}\n", encoding="utf-8")
    assert load_spec.__wrapped__(path).task_settings("t").parser == "my_parser"
    assert "my_parser" in spec_schema()["properties"]["parser"]["enum"]


def test_every_bundled_and_fixture_spec_validates_against_the_committed_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    files = spec_files()
    assert len(files) >= 10
    for path in files:
        problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
                    for e in validator.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))]
        assert not problems, f"{path}: {problems}"


@pytest.mark.parametrize("body", [
    "loader: jsonl\n",
    "name: 'a b'\nloader: jsonl\n",
    "name: x\nloader: csv\n",
    "name: x\nloader: jsonl\nparser: fuzzy\n",
    "name: x\nloader: jsonl\nmetrics: []\n",
    "name: x\nloader: jsonl\nmetrics: [accuracy, bleu]\n",
    "name: x\nloader: jsonl\nmax_new_tokens: 0\n",
    "name: x\nloader: jsonl\nmax_new_tokens: true\n",
    "name: x\nloader: jsonl\ngroups: {g: t}\n",
    "name: x\nloader: jsonl\ntasks: {t: {parser: nope}}\n",
    "name: x\nloader: jsonl\ntasks: {t: {template: x}}\n",
    "name: x\nloader: jsonl\ndata: {root: .., folder: x}\n",
    "name: x\nloader: jsonl\nvariants: some\n",
    "name: x\nloader: jsonl\nprompts: {}\n",
])
def test_schema_and_loader_refuse_the_same_specs(tmp_path: Path, body: str) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    path = tmp_path / "spec.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(SpecError):
        load_spec(path)
    assert not jsonschema.Draft202012Validator(spec_schema()).is_valid(yaml.safe_load(body))


def test_every_problem_is_one_line_naming_file_and_field_without_pydantic_words(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("loader: csv\nparser: fuzzy\nmax_new_tokens: yes\nmetrics: [bleu]\n"
                    "data: {folder: x}\ntasks: {t: {template: x}}\n", encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    lines = str(info.value).splitlines()
    assert [line.split(": field ")[1].split(":")[0] for line in lines] == [
        "'name'", "'loader'", "'data.folder'", "'parser'", "'max_new_tokens'", "'metrics'", "'tasks.t.template'"]
    assert all(line.startswith(f"{path}: field '") for line in lines)
    assert "True must be a positive integer" in lines[4]
    assert lines[2].endswith("unknown field; allowed fields: file, hub, md5, root, url")
    assert lines[6].endswith("unknown field; allowed fields: parser, prompt")
    for jargon in ("Input should", "pydantic", "errors.pydantic.dev", "validation error", "type="):
        assert jargon not in str(info.value)


def test_importing_the_plugin_does_not_import_pydantic() -> None:
    code = "import sys, pytest_mllm.plugin, pytest_mllm.engine.spec; print('pydantic' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "False"


def test_write_schema_command(tmp_path: Path) -> None:
    target = tmp_path / "spec.schema.json"
    subprocess.run([sys.executable, "-m", "pytest_mllm.engine.spec", "--write-schema", str(target)],
                   check=True, capture_output=True, cwd=REPO)
    assert target.read_text(encoding="utf-8") == schema_text()
