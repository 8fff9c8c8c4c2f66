"""Installed but not asked for: ordinary test runs are unchanged and nothing heavy is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def test_ordinary_tests_run_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    (pytester.path / "config.yaml").write_text("loader: jsonl\nname: looks_like_a_spec\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 passed*"])
    assert "pytest-mllm" not in result.stdout.str()


def test_plugin_imports_nothing_heavy_without_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    pass\n")
    script = textwrap.dedent("""
        import sys, pytest
        code = pytest.main(["-q", "-p", "no:cacheprovider", "test_plain.py"])
        assert "pytest_mllm.plugin" in sys.modules, "the plugin was not loaded"
        heavy = [m for m in ("torch", "transformers", "PIL", "yaml", "rich", "pytest_mllm.harness.session",
                             "pytest_mllm.models.hf") if m in sys.modules]
        print("HEAVY", heavy)
        sys.exit(code)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout


def test_active_run_without_transformers_model_never_imports_torch(pytester: pytest.Pytester) -> None:
    script = textwrap.dedent("""
        import sys, pytest
        code = pytest.main(["-q", "-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes",
                            "-k", "img_000"])
        print("HEAVY", [m for m in ("torch", "transformers") if m in sys.modules])
        sys.exit(code)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=pytester.path, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout
