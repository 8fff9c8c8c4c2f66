"""Bad benchmark input seen from the command line: every error names the file, field or option
and how to fix it."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_malformed_spec_is_a_collection_error_naming_file_and_field(pytester: pytest.Pytester) -> None:
    spec = pytester.path / "broken.yaml"
    spec.write_text("name: broken\nloader: jsonl\nmetrics: [accuracy, bleu]\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*{spec}: field 'metrics': 'bleu' is not one of accuracy, accuracy_plus*"])


def test_missing_data_root_says_which_option_or_variable(pytester: pytest.Pytester,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLLM_DATA_MME", raising=False)
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=mme")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*benchmark 'mme' needs its data: pass --mllm-data=mme=/path/to/data "
                                 "or set MLLM_DATA_MME=/path/to/data*"])


def test_data_root_from_the_environment(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLLM_DATA_MME", str(FIXTURES / "mme" / "MME_Benchmark_release_version"))
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=mme")
    assert result.parseoutcomes() == {"passed": 14, "incorrect": 14}


def test_unknown_benchmark_is_a_usage_error_listing_the_bundled_ones(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--mllm=baseline:yes", "--mllm-bench=no_such_bench")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown benchmark 'no_such_bench' in --mllm-bench: give a bundled name (*mmbench, mme, *"])


def test_duplicate_sample_ids_are_a_collection_error(pytester: pytest.Pytester) -> None:
    spec = pytester.path / "dup.yaml"
    spec.write_text(f"name: dup\nloader: jsonl\ndata: {{root: {FIXTURES / 'bad'}, file: dup_ids.jsonl}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*duplicate sample id 'colors::q1'*every sample needs a unique id*"])


def test_a_malformed_data_row_errors_alone(pytester: pytest.Pytester) -> None:
    root = pytester.path / "data"
    root.mkdir()
    (root / "ok.png").write_bytes((FIXTURES / "bad" / "ok.png").read_bytes())
    (root / "b.jsonl").write_text(
        '{"id": "a", "image": "ok.png", "question": "Red?", "answer": "yes"}\n'
        '{"id": "b", "image": "ok.png", "question": "Red?"}\n'
        '{not json\n'
        '{"id": "d", "image": "ok.png", "question": "Pick", "answer": "E", "choices": ["x", "y"]}\n')
    spec = pytester.path / "rows.yaml"
    spec.write_text(f"name: rows\nloader: jsonl\nparser: mme\ndata: {{root: {root}, file: b.jsonl}}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes")
    result.stdout.fnmatch_lines(["*b.jsonl:2: missing field 'answer'*", "*b.jsonl:3: not valid JSON*",
                                 "*b.jsonl:4: field 'answer': 'E' is not one of the choices*",
                                 "*1 passed, 3 error*"])
