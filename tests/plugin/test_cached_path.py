"""The end of a run pays only for what it shows and writes: without a results file or HTML report no
metric is bootstrapped beyond the headline the terminal shows, and the terminal's scores are the same."""

from __future__ import annotations

import json

import pytest

SPY = """
import json

import pytest_mllm.scoring.uncertainty as uncertainty

_real = uncertainty.intervals


def _counting(records, setup, flat=None, *, keys=None, **kwargs):
    with open("interval_calls.jsonl", "a") as log:
        log.write(json.dumps({"records": len(records), "keys": keys}) + "\\n")
    return _real(records, setup, flat, keys=keys, **kwargs)


uncertainty.intervals = _counting
"""


def _paired_benchmark(pytester: pytest.Pytester) -> None:
    """40 yes/no questions in pairs, two tasks, accuracy+ as the headline (its interval is a bootstrap)."""
    lines = [json.dumps({"id": f"q{i}", "task": f"t{i // 2 % 2}", "image": "", "question": f"Q{i // 2}?",
                         "answer": "yes" if i % 2 == 0 else "no", "pair_group": f"p{i // 2}"}) for i in range(40)]
    (pytester.path / "bench.jsonl").write_text("\n".join(lines) + "\n")
    (pytester.path / "pairs.yaml").write_text(
        "name: pairs\nloader: jsonl\nparser: mme\ndata: {root: ., file: bench.jsonl}\n"
        "metrics: [accuracy, accuracy_plus]\nheadline: accuracy_plus\n")
    pytester.makeconftest(SPY)


def _run(pytester: pytest.Pytester, *extra: str) -> tuple[list[str], list[dict]]:
    calls = pytester.path / "interval_calls.jsonl"
    calls.unlink(missing_ok=True)
    result = pytester.runpytest_subprocess("pairs.yaml", "--mllm=baseline:random:3", "-p", "no:cacheprovider", *extra)
    assert result.ret == pytest.ExitCode.OK
    lines = result.stdout.lines
    table = lines[next(n for n, line in enumerate(lines) if "pytest-mllm scores" in line):]
    table = table[:next(n for n, line in enumerate(table) if "incorrect answers" in line)]
    logged = [json.loads(line) for line in calls.read_text().splitlines()] if calls.exists() else []
    return table, logged


def test_without_outputs_only_the_headline_is_bootstrapped_and_the_scores_shown_are_the_same(
        pytester: pytest.Pytester) -> None:
    _paired_benchmark(pytester)
    plain_table, plain_calls = _run(pytester)
    json_table, json_calls = _run(pytester, "--mllm-json=out.json")

    assert any("±" in line for line in plain_table)  # the headline's interval is shown ...
    assert plain_calls and all(call["keys"] for call in plain_calls)  # ... and only the headline's is computed
    assert [call["keys"] for call in json_calls] == [None]  # the results file: every metric, once
    assert plain_table == json_table

    written = json.loads((pytester.path / "out.json").read_text())["benchmarks"]["pairs"]
    assert {"accuracy_plus", "t0.accuracy_plus", "t1.accuracy_plus"} <= set(written["intervals"])
    assert written["intervals"]["accuracy_plus"]["method"] == "bootstrap"
