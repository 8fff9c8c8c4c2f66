"""Users' own tests on benchmark samples: @pytest.mark.mllm_bench with the mllm and
mllm_sample fixtures."""

from __future__ import annotations

import pytest

TEST_FILE = """
    import pytest

    @pytest.mark.mllm_bench("shapes", task="color")
    def test_color_answers_are_readable(mllm, mllm_sample):
        record = mllm.answer(mllm_sample)
        assert record["parsed"] in ("yes", "no"), record["response"]

    @pytest.mark.mllm_bench("shapes", task="choice")
    def test_choice_is_right(mllm, mllm_sample):
        assert mllm.answer(mllm_sample)["correct"]

    def test_plain():
        pass
"""


def test_marker_parametrizes_samples_and_fixture_answers(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_custom=TEST_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "test_custom.py", "-q")
    # "Yes" is always readable (80 pass); "Yes" is never an option letter (40 fail); plus the plain test
    result.stdout.fnmatch_lines(["*40 failed, 81 passed*"])
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "test_custom.py",
                                "--collect-only", "-q")
    result.stdout.fnmatch_lines(["test_custom.py::test_color_answers_are_readable[color::img_000.png::q1]"])


def test_without_a_model_benchmark_tests_skip_and_plain_tests_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_custom=TEST_FILE)
    result = pytester.runpytest("-p", "no:cacheprovider", "test_custom.py", "-rs")
    result.stdout.fnmatch_lines(["*benchmark test: pass --mllm=MODEL to run it*", "*1 passed, 2 skipped*"])
