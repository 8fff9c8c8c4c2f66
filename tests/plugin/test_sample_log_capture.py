"""Sample tests capture logs the light way (`harness/log_capture.py`): one handler on the root
logger instead of pytest's per-phase capture, unless --log-level asks for pytest's; either way a
failing sample's log lines reach its report."""

from __future__ import annotations

import json

import pytest

PROBE_CONFTEST = """
    import json
    import logging
    from pathlib import Path

    from pytest_mllm.sample import Response

    SEEN = Path(__file__).parent / "seen.jsonl"


    class LogProbe:
        '''Says "No" to everything; logs a warning and notes which handlers the root logger has.'''
        name = "log-probe"
        needs_images = False

        def generate(self, requests):
            with SEEN.open("a") as seen:
                seen.write(json.dumps([type(h).__name__ for h in logging.getLogger().handlers]) + "\\n")
            logging.getLogger("probe.model").warning("probe warning for %d requests", len(requests))
            return [Response("No") for _ in requests]


    def pytest_mllm_make_model(spec, config):
        return LogProbe() if spec == "log-probe" else None
"""

ONE_SAMPLE = "existence and img_000.png and q1"  # its answer is "yes", so "No" is wrong


def _run(pytester: pytest.Pytester, *args: str, select: str = ONE_SAMPLE) -> tuple[pytest.RunResult, list[list[str]]]:
    pytester.makeconftest(PROBE_CONFTEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=log-probe", "--mllm-bench=shapes",
                                           "--mllm-strict", "-k", select, *args)
    seen = [json.loads(line) for line in (pytester.path / "seen.jsonl").read_text().splitlines()]
    return result, seen


def test_a_failing_sample_shows_its_log_lines_without_pytests_handlers(pytester: pytest.Pytester) -> None:
    result, seen = _run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the wrong answer fails under --mllm-strict
    # while the model answered, the root logger had the light handler, not pytest's per-phase ones
    assert len(seen) == 1 and "_Lines" in seen[0] and "LogCaptureHandler" not in seen[0]
    result.stdout.fnmatch_lines(["*Captured log call*", "WARNING *probe.model*probe warning for 1 requests"])


def test_log_level_brings_log_capture_back(pytester: pytest.Pytester) -> None:
    result, seen = _run(pytester, "--log-level=WARNING")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert seen and "LogCaptureHandler" in seen[0]
    result.stdout.fnmatch_lines(["*Captured log call*", "*probe.model*probe warning for 1 requests*"])


def test_live_logging_shows_the_call_section(pytester: pytest.Pytester) -> None:
    result, seen = _run(pytester, "--log-cli-level=WARNING")
    assert seen and "LogCaptureHandler" in seen[0]
    result.stdout.fnmatch_lines(["*live log call*", "WARNING *probe.model*probe warning for 1 requests*"])


def test_ordinary_tests_in_the_same_run_keep_caplog(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="""
        import logging

        def test_caplog_sees_records(caplog):
            logging.getLogger("plain").warning("from a plain test")
            assert [r.getMessage() for r in caplog.records] == ["from a plain test"]
    """)
    result, _ = _run(pytester, "test_plain.py", select=f"({ONE_SAMPLE}) or caplog")
    result.assert_outcomes(passed=1, failed=1)
