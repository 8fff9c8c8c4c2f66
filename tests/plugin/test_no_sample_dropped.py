"""A sample is never dropped from the scores: under each injected failure every sample of the run has
a record in the results file, and `count + errors` is the number of samples.

The failures are real where a real part produces them (SQLite's own "database or disk is full",
a cache file with other columns, an EPS file Pillow would hand to Ghostscript); the model of the
user's conftest injects the rest (an `identity` that raises on every batch, a response that is not
text), and a parser of the user's that raises is registered for the test's length.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SAMPLES = 6
EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nshowpage\n%%EOF\n"

CONFTEST = '''
from pytest_mllm.sample import Response

FAULT = {fault!r}


class Counting:
    name = "counting"
    needs_images = True

    def __init__(self, config):
        self.config = config
        self.calls = 0

    @property
    def identity(self):
        if FAULT == "identity raises":
            raise RuntimeError("the identity could not be computed")
        return "counting-v1"

    def generate(self, requests):
        self.calls += 1
        if self.calls == 2 and FAULT == "cache disk full":  # SQLite's own "database or disk is full"
            from pytest_mllm.harness.stash import RUN_KEY

            db = self.config.stash[RUN_KEY].evaluation.cache._db
            db.execute(f"PRAGMA max_page_count={{db.execute('PRAGMA page_count').fetchone()[0]}}")
        if FAULT == "response not text":
            return [Response(None if r.sample.id.endswith("s1") else "yes") for r in requests]
        if FAULT == "cache disk full":  # answers of 4 kB: storing them needs new pages, which the limit refuses
            return [Response("yes" + " ." * 2000) for r in requests]
        return [Response("yes") for r in requests]


def pytest_mllm_make_model(spec, config):
    return Counting(config) if spec == "counting" else None
'''


def _benchmark(tmp: Path, parser: str = "mme", eps: bool = False) -> None:
    data = tmp / "data"
    data.mkdir()
    (data / "ok.png").write_bytes((FIXTURES / "bad" / "ok.png").read_bytes())
    (data / "x.png").write_bytes(EPS if eps else (FIXTURES / "bad" / "ok.png").read_bytes())
    rows = [{"id": f"s{n}", "image": "x.png" if n == 1 else "ok.png", "question": f"Red {n}?", "answer": "yes"}
            for n in range(SAMPLES)]
    (data / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp / "mine.yaml").write_text(f"name: mine\nloader: jsonl\nparser: {parser}\ndata: {{root: data, file: b.jsonl}}\n")


def _wrong_columns(tmp: Path) -> None:
    (tmp / "cache").mkdir()
    db = sqlite3.connect(tmp / "cache" / "responses.sqlite3")
    db.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, text TEXT)")
    db.execute("PRAGMA user_version=2")
    db.commit()
    db.close()


# fault → (errors expected, a phrase of the warning or error it gives)
FAULTS = {
    "cache disk full": (0, "database or disk is full"),
    "cache wrong columns": (0, "its responses table has the columns key, text"),
    "eps image": (1, "is a PostScript (EPS/PS) file"),
    "identity raises": (SAMPLES, "internal error while answering its batch: RuntimeError: the identity could not be"),
    "response not text": (1, "model error: the response is None, not text"),
    "parser raises": (SAMPLES, "scoring error: ZeroDivisionError: the user's parser divided by zero"),
}


def _parser_with_a_bug(response: str, sample: object) -> str:
    raise ZeroDivisionError("the user's parser divided by zero")


@pytest.mark.parametrize("fault", list(FAULTS))
def test_records_equal_samples_under_each_injected_failure(fault: str, pytester: pytest.Pytester,
                                                           request: pytest.FixtureRequest) -> None:
    from pytest_mllm.scoring.score import PARSERS, parser

    parser("buggy")(_parser_with_a_bug)  # a parser of the user's, registered for this test
    request.addfinalizer(lambda: PARSERS.remove("buggy"))
    tmp = pytester.path
    _benchmark(tmp, parser="buggy" if fault == "parser raises" else "mme", eps=fault == "eps image")
    if fault == "cache wrong columns":
        _wrong_columns(tmp)
    pytester.makeconftest(CONFTEST.format(fault=fault))
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=counting", f"{tmp}/mine.yaml", "--mllm-batch-size=2",
                                f"--mllm-cache-dir={tmp}/cache", f"--mllm-json={tmp}/out.json")
    output = result.stdout.str() + result.stderr.str()
    errors, phrase = FAULTS[fault]
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert phrase in output, output
    document = json.loads((tmp / "out.json").read_text())
    records = document["records"]
    overall = document["benchmarks"]["mine"]["metrics"]
    assert sorted(r["id"] for r in records) == [f"mine::s{n}" for n in range(SAMPLES)], output  # records = samples
    assert (overall["count"] + overall["errors"], overall["errors"]) == (SAMPLES, errors), overall
    assert sum(r["status"] == "error" for r in records) == errors
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if errors else pytest.ExitCode.OK), output
