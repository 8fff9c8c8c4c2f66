"""The README's quick start as written: the real-benchmark command reaches its data (fetched when online,
here one clear error offline naming the command that fetches it), and its offline variant collects the
bundled fixture from the repository root."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text()


def quick_start_command(bench: str) -> list[str]:
    """The arguments of the quick start's command for `bench`, as the README writes them."""
    block = README.split("## Quick start", 1)[1].split("\n1. ", 1)[0]
    lines = [line.strip() for line in block.splitlines() if line.strip().startswith("pytest ")]
    found = [line for line in lines if f"--mllm-bench={bench} " in line + " "]
    assert len(found) == 1, lines
    return found[0].split()[1:]


def test_the_real_benchmark_command_needs_no_path_and_offline_names_the_prefetch(tmp_path: Path) -> None:
    args = quick_start_command("POPE")
    assert not any("/path/to" in arg or arg.startswith("--mllm-data=") for arg in args)
    env = {"HF_HUB_OFFLINE": "1", "PYTEST_MLLM_DATA_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=tmp_path,
                          env={**_environ(), **env}, capture_output=True, text=True, timeout=300)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert done.stderr.strip() == (
        "ERROR: the data of benchmark 'pope' (POPE.tsv from https://opencompass.openxlab.space/utils/VLMEval/POPE.tsv) "
        f"is not in the data cache {tmp_path / 'cache'} and downloads are off (HF_HUB_OFFLINE=1): on a connected "
        "machine run `pytest-mllm-data fetch pope` and copy its data cache folder here (or point "
        "PYTEST_MLLM_DATA_CACHE at it), or pass --mllm-data=pope=DIR with the files")


def test_the_offline_variant_reads_the_bundled_fixture() -> None:
    named = re.search(r"`(--mllm-data=POPE=fixtures/\S+)`", README)
    assert named, "the README names the bundled fixture for offline use"
    args = [*quick_start_command("POPE"), named.group(1)]
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "--collect-only", "-q"],
                          cwd=REPO, env={**_environ(), "HF_HUB_OFFLINE": "1"}, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == pytest.ExitCode.OK, done.stdout + done.stderr
    collected = [line for line in done.stdout.splitlines() if line.startswith("pope::")]
    assert {line.split("::")[1] for line in collected} == {"adversarial", "popular", "random"}
    assert len(collected) == 24  # --mllm-limit=8: the first 8 of each split


def _environ() -> dict[str, str]:
    import os

    return {key: value for key, value in os.environ.items() if not key.startswith("MLLM_DATA_")}
