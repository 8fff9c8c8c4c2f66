"""--mllm-judge-prompts=FILE: the five judge prompts' wording from a YAML file, checked before anything
runs (a bad file is a usage error naming the file and the field), sent to the judge, and cached per
wording. The judge is the loopback stub; its replies say 1 after whichever key phrase the prompt asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from chat_stub import ChatStub

VQA = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"
EXAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "prompts.yaml"
KEYS = ("Final Assessment Score", "Most Likely Score", "Final Score")


def _reply(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    return f"Analysis: matches.\n{next(k for k in KEYS if k in user)}: 1"


@pytest.fixture
def judge() -> Iterator[ChatStub]:
    with ChatStub(_reply) as stub:
        yield stub


def _run(pytester: pytest.Pytester, predictions: Path, *args: str) -> tuple[pytest.RunResult, Path]:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", str(VQA / "bench.yaml"), f"--mllm=replay:{predictions}", f"--mllm-json={out}",
        f"--mllm-cache-dir={pytester.path / 'cache'}", "--mllm-max-retries=0", *args)
    return result, out


def test_the_files_prompts_are_sent_and_cached_per_wording(pytester: pytest.Pytester, judge: ChatStub,
                                                           predictions: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["prompts"][0]["system"] = "A custom first system message."
    custom = tmp_path / "custom.yaml"
    custom.write_text(yaml.safe_dump(data), encoding="utf-8")
    args = ("--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={judge.base_url}")

    result, out = _run(pytester, predictions, *args, f"--mllm-judge-prompts={custom}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-2000:]
    first = judge.calls
    assert first == 40  # 8 open answers × 5 prompts
    systems = {r["body"]["messages"][0]["content"] for r in judge.requests}
    assert "A custom first system message." in systems
    users = [r["body"]["messages"][-1]["content"] for r in judge.requests]
    assert all("\n\nQuestion: " in u and "\nReference answer: " in u and "\nAnswer to grade: " in u for u in users)
    records = json.loads(out.read_text())["records"]
    assert all(r["judge"]["status"] == "judged" and r["judge"]["split"] == "5-0" for r in records)

    _run(pytester, predictions, *args, f"--mllm-judge-prompts={custom}")
    assert judge.calls == first  # same wording: every reply comes from the cache

    data["prompts"][0]["system"] = "A reworded first system message."
    custom.write_text(yaml.safe_dump(data), encoding="utf-8")
    _run(pytester, predictions, *args, f"--mllm-judge-prompts={custom}")
    assert judge.calls == first + 8  # only the reworded prompt is asked again, once per answer


def test_a_bad_prompts_file_is_a_usage_error_before_anything_runs(pytester: pytest.Pytester, judge: ChatStub,
                                                                  predictions: Path, tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["prompts"][3]["rule"] = 7
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    result = pytester.runpytest(str(VQA / "bench.yaml"), f"--mllm=replay:{predictions}",
                                "--mllm-judge=openai:judge-model", f"--mllm-judge-base-url={judge.base_url}",
                                f"--mllm-judge-prompts={bad}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--mllm-judge-prompts: {bad}: prompts[3].rule: must be 1 or 2, not 7" in result.stderr.str()
    assert judge.calls == 0


def test_a_prompts_file_without_a_judge_is_a_usage_error(pytester: pytest.Pytester, predictions: Path) -> None:
    result = pytester.runpytest(str(VQA / "bench.yaml"), f"--mllm=replay:{predictions}",
                                f"--mllm-judge-prompts={EXAMPLE}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--mllm-judge-prompts needs a judge" in result.stderr.str()
