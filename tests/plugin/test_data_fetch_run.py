"""A run whose benchmark has no data folder fetches the released data into the data cache first (from a
loopback server, or a loopback stand-in of the Hugging Face hub: nothing reaches the internet), once for
all xdist workers, and scores it as VLMEvalKit does; offline and bad downloads are one usage error before
any sample. Each run is a subprocess, as a user runs it."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from data_server import FileServer, HubStandIn

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "mcq"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
GOLDEN = json.loads((FIXTURES / "vlmevalkit_scores.json").read_text())["mmstar"]["report_acc"]  # VLMEvalKit's run
TSV = (FIXTURES / "mmstar" / "MMStar.tsv").read_bytes()
TSV_MD5 = hashlib.md5(TSV).hexdigest()
REPLAY = f"--mllm=replay:{FIXTURES / 'mmstar' / 'responses.jsonl'}"


@pytest.fixture(autouse=True)
def data_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Downloads allowed (to loopback only), into a data cache of this test's own."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("PYTEST_MLLM_DATA_CACHE", str(tmp_path / "data-cache"))
    monkeypatch.delenv("MLLM_DATA_MMSTAR", raising=False)
    return tmp_path / "data-cache"


@pytest.fixture
def server() -> FileServer:
    with FileServer({"utils/VLMEval/MMStar.tsv": TSV}).running() as running:
        yield running


def mmstar_spec(folder: Path, url: str, md5: str = TSV_MD5) -> Path:
    """The bundled MMStar spec, its data.url and data.md5 those of the loopback server's file."""
    text = (BENCHMARKS / "mmstar.yaml").read_text()
    text = re.sub(r"^  url: .*$", f"  url: {url}", text, count=1, flags=re.M)
    text = re.sub(r"^  md5: .*$", f"  md5: {md5}", text, count=1, flags=re.M)
    path = folder / "mmstar.yaml"
    path.write_text(text)
    return path


def error_line(result: pytest.RunResult) -> str:
    """The run's one error line (a usage error: nothing ran)."""
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1, result.stderr.str()
    return errors[0]


def accuracies(path: Path) -> dict[str, float]:
    metrics = json.loads(path.read_text())["benchmarks"]["mmstar"]["metrics"]
    return {key: value for key, value in metrics.items() if key == "accuracy" or key.endswith(".accuracy")}


GOLDEN_ACCURACIES = {"accuracy": GOLDEN["Overall"][0],
                     **{f"{c}.accuracy": v[0] for c, v in GOLDEN.items() if c not in ("Overall", "split")}}


def test_a_benchmark_without_data_is_fetched_once_and_scored_as_vlmevalkit_does(
        pytester: pytest.Pytester, server: FileServer, data_cache: Path) -> None:
    """Fetched once before xdist's workers start (they find the copy), scored as VLMEvalKit scores the file,
    and reused by the next run."""
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"))
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", f"--mllm-bench={spec}", REPLAY,
                                           "--mllm-cache=off", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    stored = data_cache / "files" / TSV_MD5 / "MMStar.tsv"
    result.stderr.fnmatch_lines([f"pytest-mllm: fetching MMStar.tsv for mmstar from {server.url('utils/VLMEval/MMStar.tsv')} (2.3 kB)",
                                 f"pytest-mllm: fetched MMStar.tsv (2.3 kB) in * s, MD5 verified: {stored}"])
    assert result.parseoutcomes() == {"passed": 4, "incorrect": 4}
    assert accuracies(out) == pytest.approx(GOLDEN_ACCURACIES, abs=1e-12)
    assert server.gets("utils/VLMEval/MMStar.tsv") == 1
    again = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={spec}", REPLAY, "--mllm-cache=off")
    assert again.ret == pytest.ExitCode.OK and "fetching" not in again.stderr.str()
    assert server.gets("utils/VLMEval/MMStar.tsv") == 1


def test_a_spec_given_as_a_test_path_among_test_files_is_fetched_when_it_collects(
        pytester: pytest.Pytester, server: FileServer, data_cache: Path) -> None:
    """With test files on the command line the run's benchmarks are not known before collection: the spec
    fetches its data as it collects (under the same lock), and then runs as with --mllm-bench."""
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"))
    pytester.makepyfile(test_other="def test_other():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", str(spec), "test_other.py", REPLAY,
                                           "--mllm-cache=off")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert result.parseoutcomes() == {"passed": 5, "incorrect": 4}
    assert (data_cache / "files" / TSV_MD5 / "MMStar.tsv").read_bytes() == TSV and server.gets(
        "utils/VLMEval/MMStar.tsv") == 1


def test_a_hub_dataset_is_fetched_from_the_hub_stand_in_and_scored(pytester: pytest.Pytester,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """mmstar_parquet as bundled (data.hub: Lin-Chen/MMStar at main, split val), its repository served by a
    loopback stand-in of the hub (HF_ENDPOINT) holding the fixture's parquet file and card."""
    pytest.importorskip("huggingface_hub")
    folder = FIXTURES / "mmstar_parquet"
    repo = {"README.md": (folder / "README.md").read_bytes(), "mmstar.parquet": (folder / "mmstar.parquet").read_bytes()}
    out = pytester.path / "out.json"
    with HubStandIn({"Lin-Chen/MMStar": repo}).running() as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HOME", str(pytester.path / "hf-home"))
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=mmstar_parquet",
                                               f"--mllm=replay:{folder / 'responses.jsonl'}", "--mllm-cache=off",
                                               f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    result.stderr.fnmatch_lines(["pytest-mllm: fetched Lin-Chen/MMStar at * (2 files), each checked against the "
                                 "hub's record: *split-val"])
    metrics = json.loads(out.read_text())["benchmarks"]["mmstar_parquet"]["metrics"]
    assert metrics["accuracy"] == pytest.approx(GOLDEN["Overall"][0], abs=1e-12)


@pytest.mark.parametrize("how", ["HF_HUB_OFFLINE", "--mllm-offline"])
def test_offline_a_missing_benchmark_is_one_error_before_any_sample(pytester: pytest.Pytester,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    data_cache: Path, how: str) -> None:
    args = ["--mllm-offline"] if how == "--mllm-offline" else []
    if how == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm-bench=MMStar,POPE", REPLAY, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    reason = "HF_HUB_OFFLINE=1" if how == "HF_HUB_OFFLINE" else "--mllm-offline"
    assert error_line(result) == (
        f"ERROR: the data of benchmarks 'mmstar', 'pope' is not in the data cache {data_cache} and downloads are off "
        f"({reason}): on a connected machine run `pytest-mllm-data fetch mmstar pope` and copy its data cache folder "
        "here (or point PYTEST_MLLM_DATA_CACHE at it), or pass --mllm-data=mmstar=DIR with the files")
    assert "passed" not in result.stdout.str() and not data_cache.exists()


def test_prefetched_on_a_connected_machine_the_run_works_offline(pytester: pytest.Pytester, server: FileServer,
                                                                 monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"))
    shared = tmp_path / "carried"
    fetched = subprocess.run([sys.executable, "-m", "pytest_mllm.engine.fetch_cli", "--cache", str(shared), "fetch",
                              str(spec)], capture_output=True, text=True, timeout=120)
    assert fetched.returncode == 0, fetched.stderr
    assert fetched.stdout == f"mmstar: {shared / 'files' / TSV_MD5}\n"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={spec}", REPLAY, "--mllm-cache=off",
                                           f"--mllm-data-cache={shared}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    assert result.parseoutcomes() == {"passed": 4, "incorrect": 4}
    assert server.gets("utils/VLMEval/MMStar.tsv") == 1


def test_an_xdist_controller_identifies_the_data_in_the_cache_the_option_names(
        pytester: pytest.Pytester, server: FileServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The controller reads the benchmark again for the results' data identity: from the --mllm-data-cache
    folder (not the default one), offline, without a download."""
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"))
    shared = tmp_path / "carried"
    fetched = subprocess.run([sys.executable, "-m", "pytest_mllm.engine.fetch_cli", "--cache", str(shared), "fetch",
                              str(spec)], capture_output=True, text=True, timeout=120)
    assert fetched.returncode == 0, fetched.stderr
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", f"--mllm-bench={spec}", REPLAY,
                                           "--mllm-cache=off", f"--mllm-data-cache={shared}", f"--mllm-json={out}")
    assert result.ret == pytest.ExitCode.OK, result.stderr.str()
    data = json.loads(out.read_text())["benchmarks"]["mmstar"]["data"]
    assert data["files"] == {"MMStar.tsv": hashlib.sha256(TSV).hexdigest()[:16]} and data["rows"] == 8
    assert server.gets("utils/VLMEval/MMStar.tsv") == 1  # the fetch before the run, and no other


def test_a_bad_download_is_one_usage_error_and_leaves_nothing(pytester: pytest.Pytester, server: FileServer,
                                                              data_cache: Path) -> None:
    wrong = "a" * 32
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"), md5=wrong)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={spec}", REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_line(result).startswith(
        f"ERROR: benchmark 'mmstar': MD5 mismatch for MMStar.tsv from {server.url('utils/VLMEval/MMStar.tsv')}: "
        f"expected {wrong}, got {TSV_MD5}; the download was deleted")
    assert [p.name for p in (data_cache / "files" / wrong).iterdir() if not p.name.endswith(".lock")] == []
    missing = mmstar_spec(pytester.path, server.url("utils/VLMEval/nothing.tsv"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={missing}", REPLAY)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error_line(result) == (f"ERROR: benchmark 'mmstar': {server.url('utils/VLMEval/nothing.tsv')} answered "
                                       "404 Not Found for mmstar's data (MMStar.tsv); check the URL (the spec's "
                                       "data.url) or the server")


def test_a_data_folder_given_wins_over_the_fetch(pytester: pytest.Pytester, server: FileServer) -> None:
    spec = mmstar_spec(pytester.path, server.url("utils/VLMEval/MMStar.tsv"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm-bench={spec}", REPLAY,
                                           "--mllm-cache=off", f"--mllm-data=mmstar={FIXTURES / 'mmstar'}")
    assert result.ret == pytest.ExitCode.OK and result.parseoutcomes() == {"passed": 4, "incorrect": 4}
    assert server.requests == []  # (MLLM_DATA_* and data.root likewise: tests/unit/test_fetch_sources.py)


def test_the_fetch_command_names_what_it_cannot_fetch(tmp_path: Path) -> None:
    unknown = subprocess.run([sys.executable, "-m", "pytest_mllm.engine.fetch_cli", "--cache", str(tmp_path),
                              "fetch", "MMStr"], capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and "unknown benchmark 'MMStr'" in unknown.stderr
    assert "did you mean 'MMStar'" in unknown.stderr
    nothing = subprocess.run([sys.executable, "-m", "pytest_mllm.engine.fetch_cli", "--cache", str(tmp_path),
                              "fetch", "mme"], capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 1 and nothing.stderr.startswith(
        "pytest-mllm-data: benchmark 'mme' has no released data to fetch")
