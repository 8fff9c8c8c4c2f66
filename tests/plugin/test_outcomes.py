"""Outcomes: a wrong answer is "incorrect" (not a failure), bad data and crashes are errors,
and --mllm-strict turns wrong answers into failures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_incorrect_is_its_own_category_and_passes_the_session(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                "-k", "existence and img_000", "-v")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([
        "*existence::img_000.png::q1 PASSED*",
        "*existence::img_000.png::q2 INCORRECT*",
        "*incorrect answers*",
        "*existence::img_000.png::q2: Q 'Is there a * in the image? Please answer yes or no.' "
        "expected 'no', got 'Yes' → 'yes'",
        "*1 passed, 358 deselected, 1 incorrect*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_strict_makes_wrong_answers_fail(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                                "-k", "existence and img_000", "--mllm-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*incorrect answer", "*expected: no", "*response: 'Yes'", "*1 failed, 1 passed*"])


def _bench_with_images(pytester: pytest.Pytester, broken: dict[str, str]) -> Path:
    """A jsonl benchmark of four samples, some pointing at broken images."""
    root = pytester.path / "data"
    root.mkdir()
    (root / "ok.png").write_bytes((FIXTURES / "bad" / "ok.png").read_bytes())
    lines = []
    for n in range(4):
        image = broken.get(f"q{n}", "ok.png")
        lines.append(json.dumps({"id": f"q{n}", "task": "t", "image": image, "question": "Red?", "answer": "yes"}))
    (root / "bench.jsonl").write_text("\n".join(lines) + "\n")
    for name in broken.values():
        source = FIXTURES / "bad" / name
        if source.is_file():
            (root / name).write_bytes(source.read_bytes())
    spec = pytester.path / "bench.yaml"
    spec.write_text(f"name: imgs\nloader: jsonl\nparser: mme\ndata: {{root: {root}, file: bench.jsonl}}\n")
    return spec


@pytest.mark.parametrize("image, message", [
    ("missing.png", "image not found:*missing.png"),
    ("corrupt.jpg", "cannot decode*corrupt.jpg*"),
    ("not_an_image.jpg", "cannot decode*not_an_image.jpg*"),
    ("bomb.png", "*bomb.png refused as a decompression bomb*400000000 pixels*"),
])
def test_a_broken_image_errors_alone(pytester: pytest.Pytester, image: str, message: str) -> None:
    spec = _bench_with_images(pytester, {"q1": image})
    out = pytester.path / "out.json"
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines([f"*{message}", "ERROR bench.yaml::t::q1*", "*3 passed, 1 error*"])
    records = json.loads(out.read_text())["records"]
    assert [r["status"] for r in records] == ["correct", "error", "correct", "correct"]
    assert json.loads(out.read_text())["benchmarks"]["imgs"]["metrics"]["errors"] == 1


def test_our_pixel_limit_applies_before_decoding(pytester: pytest.Pytester) -> None:
    spec = _bench_with_images(pytester, {})
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes",
                                "--mllm-max-image-pixels=100")
    result.stdout.fnmatch_lines(["*ok.png declares 24x24 pixels, over the limit of 100*", "*4 error*"])


def test_an_image_path_escaping_the_root_errors_alone(pytester: pytest.Pytester) -> None:
    spec = _bench_with_images(pytester, {"q2": "../../../etc/passwd"})
    result = pytester.runpytest("-p", "no:cacheprovider", str(spec), "--mllm=baseline:yes")
    result.stdout.fnmatch_lines(["*image path '../../../etc/passwd' escapes the data root*", "*3 passed, 1 error*"])


def test_a_model_crash_is_an_error_with_its_traceback(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        from pytest_mllm.sample import Response

        class Crashy:
            # a fault injector (named as such): crashes on one sample, answers the rest
            name = "fault-injector"
            needs_images = False
            def generate(self, requests):
                if any(r.sample.id.endswith("img_001.png::q1") for r in requests):
                    raise RuntimeError("CUDA kernel exploded")
                return [Response("Yes") for _ in requests]

        def pytest_mllm_make_model(spec, config):
            return Crashy() if spec == "crashy" else None
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=crashy", "--mllm-bench=shapes", "-k",
                                "existence and (img_000 or img_001)")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*model error: Traceback*", "*RuntimeError: CUDA kernel exploded*",
                                 "*1 passed, 356 deselected, 1 error, 2 incorrect*"])
