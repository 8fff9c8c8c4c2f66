"""An endpoint that cannot be reached: one clear error before any sample, the key never shown."""

from __future__ import annotations

import socket
import time

import pytest


def test_unreachable_endpoint_stops_the_run_at_once_and_the_key_is_never_shown(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-print-me")
    start = time.monotonic()
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=openai:some-vlm",
                                f"--mllm-base-url=http://127.0.0.1:{port}/v1", "--mllm-bench=shapes",
                                "-k", "existence and img_00")
    assert time.monotonic() - start < 20
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # before any sample: no error per sample
    assert result.stderr.lines[0].startswith(f"ERROR: --mllm=openai:some-vlm: cannot reach the endpoint "
                                             f"(http://127.0.0.1:{port}/v1: ")
    assert "--mllm-base-url" in result.stderr.str()
    assert "sk-never-print-me" not in result.stdout.str() + result.stderr.str()


def test_a_base_url_that_is_not_a_url_is_a_clear_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=openai:some-vlm", "--mllm-base-url=localhost:8000",
                                "--mllm-bench=shapes", "-k", "existence and img_000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mllm-base-url: the base URL must look like http(s)://host[:port]/v1, got 'localhost:8000'" in result.stderr.str()
