"""A run that is not a full run (`shortfall.py`): its reasons, the gates' verdicts on it (none passes), the gates
summed up without "passed" unless each ran and passed, and the summaries that say it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.scoring.gates import GateSettings, Verdict, gates_headline, parse_gate, parse_max_drop
from pytest_mllm.shortfall import Shortfall, headline, interrupted, limited, not_passed, stopped

METRICS = {"b": {"accuracy": 0.9, "existence": 0.8}}
SCOPES = {"b": ["existence"]}
HEADLINES = {"b": "accuracy"}
CUT = interrupted("SIGTERM", 5, 20)
SMOKE = limited(2, 8, 40)


def verdicts(gates: list[str], shortfalls: list[Shortfall], **settings: object) -> list[Verdict]:
    return GateSettings([parse_gate(g) for g in gates], [], **settings).verdicts(  # type: ignore[arg-type]
        METRICS, SCOPES, HEADLINES, shortfalls=shortfalls)


def test_the_reasons_say_what_happened_and_keep_their_figures() -> None:
    assert CUT.reason == "interrupted: SIGTERM after 5 of 20 tests"
    assert CUT.to_json() == {"kind": "interrupted", "reason": CUT.reason, "cause": "SIGTERM", "tests_done": 5,
                             "tests_selected": 20}
    assert Shortfall.from_json(CUT.to_json()) == CUT
    assert SMOKE.reason == "limited to 2 samples per task (8 of 40 sample tests)"
    assert limited(3).reason == "limited to 3 samples per task"
    assert stopped("stopping after 1 failures", 3, 9).reason == "stopped early (stopping after 1 failures) after 3 of 9 tests"
    assert not_passed([CUT, SMOKE]) == ("not passed: the run was interrupted: SIGTERM after 5 of 20 tests; and limited "
                                        "to 2 samples per task (8 of 40 sample tests)")
    assert headline([SMOKE]) == "incomplete run: limited to 2 samples per task (8 of 40 sample tests)"


def test_a_full_run_decides_as_before() -> None:
    passed, failed = verdicts(["b.accuracy>=0.5", "b.accuracy>=0.95"], [])
    assert (passed.verdict, passed.withheld, passed.note) == ("pass", "", "")
    assert failed.verdict == "fail" and failed.line() == "b.accuracy 0.9 < 0.95"


@pytest.mark.parametrize("shortfall", [CUT, SMOKE, stopped("stopping after 1 failures", 3, 9)],
                         ids=["interrupted", "limited", "stopped"])
def test_no_gate_passes_on_a_run_that_is_not_a_full_run(shortfall: Shortfall) -> None:
    would_pass, fails, missing = verdicts(["b.accuracy>=0.5", "b.accuracy>=0.95", "c.accuracy>=0.1"], [shortfall],
                                          skip_missing=True)
    why = f"not passed: the run was {shortfall.reason}"
    assert (would_pass.verdict, would_pass.value, would_pass.withheld, would_pass.note) == ("fail", 0.9, why, why)
    assert would_pass.line() == f"b.accuracy 0.9 >= 0.5, {why}"
    assert fails.verdict == "fail" and not fails.withheld and fails.line() == "b.accuracy 0.9 < 0.95"
    assert fails.note == f"the run was {shortfall.reason}"
    assert missing.verdict == "not run" and missing.note == f"benchmark 'c' did not run; the run was {shortfall.reason}"


def test_a_regression_limit_on_a_limited_run_never_passes(tmp_path: Path) -> None:
    baseline = tmp_path / "base.json"
    baseline.write_text('{"benchmarks": {"b": {"metrics": {"accuracy": 0.85}}}}')
    settings = GateSettings([], [parse_max_drop("b.accuracy=0.1")], baseline=baseline)
    full, = settings.verdicts(METRICS, SCOPES, HEADLINES)
    assert full.verdict == "pass"
    limited_run, = settings.verdicts(METRICS, SCOPES, HEADLINES, shortfalls=[SMOKE])
    assert limited_run.verdict == "fail" and limited_run.withheld.startswith("not passed: the run was limited to 2")
    assert limited_run.line().startswith("b.accuracy 0.9 >= 0.75, not passed: the run was limited to 2 samples")


@pytest.mark.parametrize(("outcomes", "said"), [
    (["pass"] * 4, "All 4 gates passed"),
    (["not run"] * 4, "0 of 4 gates ran"),
    (["pass", "pass", "pass", "not run"], "3 of 4 gates ran and passed; 1 did not run"),
    (["fail", "pass", "not run", "not run"], "1 of 4 gates failed; 2 did not run"),
    (["fail", "fail"], "2 of 2 gates failed"),
])
def test_the_gates_are_never_passed_unless_each_ran_and_passed(outcomes: list[str], said: str) -> None:
    gate = parse_gate("b.accuracy>=0.5")
    assert gates_headline([Verdict(gate, None, None, outcome) for outcome in outcomes]) == said


def test_the_job_summary_says_the_run_is_incomplete_and_that_no_gate_ran() -> None:
    from pytest_mllm.report.markdown import markdown_summary

    gate = parse_gate("b.accuracy>=0.5")
    text = markdown_summary({}, [Verdict(gate, None, 0.5, "not run")] * 4, model="m")
    assert "**0 of 4 gates ran**" in text and "passed" not in text
    text = markdown_summary({}, [Verdict(gate, 0.9, 0.5, "pass")], model="m", shortfalls=[CUT])
    assert text.splitlines()[2] == "**⚠️ incomplete run: interrupted: SIGTERM after 5 of 20 tests**"


def test_the_html_report_says_the_run_is_incomplete_and_counts_only_gates_that_passed() -> None:
    from pytest_mllm.report.html import _cards

    gates = [{"verdict": "pass"}, {"verdict": "not run"}]
    cards = {card.label: card for card in _cards({"incomplete": [SMOKE.to_json()], "gates": gates})}
    assert cards["incomplete run"].value == "limited" and cards["incomplete run"].note == SMOKE.reason
    assert (cards["gates"].value, cards["gates"].note, cards["gates"].tone) == ("1/2 pass", "1 did not run", "bad")
    assert "incomplete run" not in {card.label for card in _cards({"incomplete": []})}


def test_a_limit_that_left_nothing_out_is_a_full_run() -> None:
    from pytest_mllm.harness.limit import RunLimit

    limit = RunLimit(5)
    assert limit.shortfall() == limited(5)  # the counts never arrived (an interrupted xdist run): limited
    limit.counts = {"a": {"kept": 4, "total": 4}, "b": {"kept": 3, "total": 3}}
    assert limit.shortfall() is None
    limit.counts["b"] = {"kept": 5, "total": 9}
    assert limit.shortfall() == limited(5, 9, 13)


def test_the_signals_handlers_are_taken_over_only_from_their_defaults_and_given_back() -> None:
    import os
    import signal

    from pytest_mllm.harness.interruption import Interruption, SignalInterrupt

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    run = Interruption()
    try:
        run.install()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN  # left ignored
        with pytest.raises(SignalInterrupt, match="SIGTERM received"):
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs as os.kill returns
        run.finishing = True
        os.kill(os.getpid(), signal.SIGINT)  # while the outputs are written: noted, nothing raised
        assert run.received == "SIGTERM"
    finally:
        run.restore()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGINT) is before[signal.SIGINT]
        for number, handler in before.items():
            signal.signal(number, handler)
