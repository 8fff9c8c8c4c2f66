"""Installed but not asked for: ordinary test runs are unchanged, and the plugin imports three modules of the
package (`scripts/inert_cost.py` measures what it costs)."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast


def test_ordinary_tests_run_unchanged(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_one():\n    assert 1 + 1 == 2\n")
    (pytester.path / "config.yaml").write_text("loader: jsonl\nname: looks_like_a_spec\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*1 passed*"])
    assert "pytest-mllm" not in result.stdout.str()


PLAIN_RUN = """
import sys, pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[1:], "test_plain.py"])
assert "pytest_mllm.plugin" in sys.modules, "the plugin was not loaded"
print("PACKAGE", sorted(m for m in sys.modules if m.split(".")[0] == "pytest_mllm"))
print("HEAVY", [m for m in ("torch", "transformers", "PIL", "yaml", "rich", "pydantic", "jinja2", "numpy", "openai")
                if m in sys.modules])
sys.exit(code)
"""


def _plain_run(folder: Path, *args: str) -> tuple[list[str], list[str]]:
    """The package's modules and the heavy packages a pytest run of a plain test imports (a fresh process)."""
    (folder / "test_plain.py").write_text("import pytest\n\n\n@pytest.mark.mllm_bench('shapes')\ndef test_one():\n"
                                          "    pass\n\n\ndef test_two():\n    pass\n")
    done = subprocess.run([sys.executable, "-c", PLAIN_RUN, *args], cwd=folder, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if line.startswith(("PACKAGE", "HEAVY")))
    return ast.literal_eval(lines["PACKAGE"]), ast.literal_eval(lines["HEAVY"])


def test_a_run_without_options_imports_three_modules_of_the_package(pytester: pytest.Pytester) -> None:
    """The entry point, the compatibility module and the package itself: no registry, no spec is read."""
    package, heavy = _plain_run(pytester.path)
    assert package == ["pytest_mllm", "pytest_mllm.plugin", "pytest_mllm.pytest_compat"]
    assert heavy == []


def test_strict_markers_and_xdist_runs_stay_inert(pytester: pytest.Pytester) -> None:
    package, heavy = _plain_run(pytester.path, "--strict-markers", "-n", "1")
    assert len(package) <= 3 and heavy == [], package


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
