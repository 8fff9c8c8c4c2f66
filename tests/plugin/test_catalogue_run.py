"""VLMEvalKit's catalogue from the command line: `--mllm-list` shows what runs by VLMEvalKit's names (type,
scorer, lmms-eval's names) and what does not (grouped by reason); a name that cannot run is one usage error
before any sample; an lmms-eval task name runs the VLMEvalKit benchmark it maps to."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

CATALOGUE_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "official" / "catalogue"


def test_the_list_shows_the_catalogue(pytester: pytest.Pytester) -> None:
    listed = pytester.runpytest("-p", "no:cacheprovider", "--mllm-list")
    assert listed.ret == 0
    text = listed.stdout.str()
    header = re.search(r"^VLMEvalKit's catalogue \(open-compass/VLMEvalKit [0-9a-f]{12}\): (\d+) of (\d+) image "
                       r"datasets run here by their VLMEvalKit name", text, re.MULTILINE)
    assert header and int(header[1]) >= 100
    runs = re.findall(r"^(\S+)(?: \[[^\]]*\])?: ([^;]+)(?:; spec \S+ \(hand-written\))?; VLMEvalKit scorer: (\S+) \(",
                      text, re.MULTILINE)
    assert len(runs) == int(header[1])
    kinds = {kind for _, kind, _ in runs}
    assert {"multiple choice", "multiple choice, circular", "ANLS", "CC-OCR text recognition", "OCRBench"} <= kinds
    assert ("InfoVQA_VAL", "ANLS", "ImageVQADataset.evaluate_heuristic") in runs
    assert re.search(r"^CCBench \[mmbench_cn_cc\]: multiple choice, circular; ", text, re.MULTILINE)
    assert re.search(r"^Not supported \(\d+\), by reason:$", text, re.MULTILINE)
    for reason in ("LLM-graded: vlmeval/dataset/image_vqa.py:MathVerse.evaluate asks an LLM judge (build_judge): "
                   "MathVerse_MINI", "video: a video benchmark (frames sampled from clips): ",
                   "no ground truth here: run.py does not score it (mmbench_evaluation_requires_official_server): "):
        assert f"\n  {reason}" in text, reason


def test_a_catalogue_name_that_cannot_run_is_one_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=random", "--mllm-bench=MathVerse_MINI")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --mllm-bench=MathVerse_MINI: MathVerse_MINI is in VLMEvalKit's catalogue but "
                                 "cannot run here: LLM-graded: *"])
    assert "passed" not in result.stdout.str() and "incorrect" not in result.stdout.str()


def test_an_lmms_eval_name_runs_the_vlmevalkit_benchmark_it_maps_to(pytester: pytest.Pytester) -> None:
    folder = CATALOGUE_FIXTURES / "InfoVQA_VAL"
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm-bench=infovqa_val", f"--mllm-data=InfoVQA_VAL={folder}",
                                f"--mllm=replay:{folder / 'responses.jsonl'}", "--mllm-cache=off")
    assert result.ret == pytest.ExitCode.OK, result.outlines[-20:]
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("incorrect", 0) == 7
    result.stdout.fnmatch_lines(["*InfoVQA_VAL*"])
