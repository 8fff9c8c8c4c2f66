"""The transformers path for real: the tiny LLaVA, built offline, answers through the plugin."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("transformers")


def test_tiny_llava_answers_every_sample_identically_under_xdist(pytester: pytest.Pytester) -> None:
    runs = {}
    for workers in ("0", "2"):
        out = pytester.path / f"out{workers}.json"
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", workers, "--mllm=tiny-llava",
                                               "--mllm-bench=shapes", "-k", "img_000 or img_001",
                                               f"--mllm-json={out}")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        records = json.loads(out.read_text())["records"]
        assert len(records) == 18 and all(r["status"] != "error" for r in records)
        assert all(isinstance(r["response"], str) for r in records)
        assert {r["model"] for r in records} == {"tiny-llava"}
        runs[workers] = [(r["id"], r["response"], r["parsed"]) for r in records]
    assert runs["0"] == runs["2"]
