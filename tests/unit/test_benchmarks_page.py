"""docs/benchmarks.md is generated from the bundled specs and kept up to date."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from pytest_mllm.engine.spec import bundled_specs, load_spec

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "benchmarks_page.py"


def _page_module():
    spec = importlib.util.spec_from_file_location("benchmarks_page", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_up_to_date() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_every_bundled_spec_has_a_section_with_its_about_facts() -> None:
    specs = {key: load_spec(path) for key, path in sorted(bundled_specs().items())}
    page = _page_module().render(specs)
    for key, spec in specs.items():
        assert f"\n## {key}\n" in page
        assert spec.about.reference, f"benchmarks/{key}.yaml has no about.reference"
        assert spec.about.reference in page


def test_a_stale_page_fails_the_check(tmp_path, monkeypatch) -> None:
    module = _page_module()
    stale = tmp_path / "benchmarks.md"
    stale.write_text("# old\n")
    monkeypatch.setattr(module, "PAGE", stale)
    monkeypatch.setattr(module, "REPO", tmp_path)
    assert module.main(["--check"]) == 1
    assert module.main([]) == 0 and module.main(["--check"]) == 0
