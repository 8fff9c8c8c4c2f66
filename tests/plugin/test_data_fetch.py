"""`engine/fetch.py` against loopback servers (nothing reaches the internet): a released file downloaded,
checked by its MD5 and reused; resumed after an interruption; fetched once by processes starting together;
and each bad input one line, with no file in the cache that a run could read as data."""

from __future__ import annotations

import builtins
import errno
import hashlib
import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from data_server import FileServer, HubStandIn
from local_serve import free_port

from pytest_mllm.engine.fetch import VERIFIED, DataCache, FetchError, FetchProgress, FileSource, HubSource

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
TSV = (FIXTURES / "mcq" / "mmstar" / "MMStar.tsv").read_bytes()  # a real-format MMStar.tsv
TSV_MD5 = hashlib.md5(TSV).hexdigest()


def source(server: FileServer, md5: str = TSV_MD5, path: str = "utils/VLMEval/MMStar.tsv") -> FileSource:
    return FileSource(name="mmstar", url=server.url(path), md5=md5, filename="MMStar.tsv")


def data_files(folder: Path) -> list[str]:
    """What a run could read in a source's folder (the lock file aside)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(".lock")) if folder.exists() else []


@pytest.fixture
def server() -> FileServer:
    with FileServer({"utils/VLMEval/MMStar.tsv": TSV}).running() as running:
        yield running


def test_a_file_is_fetched_verified_and_reused(server: FileServer, tmp_path: Path) -> None:
    lines: list[str] = []
    cache = DataCache(folder=tmp_path, offline=False)
    folder = cache.fetch(source(server), FetchProgress(say=lines.append))
    assert folder == tmp_path / "files" / TSV_MD5
    assert (folder / "MMStar.tsv").read_bytes() == TSV
    assert data_files(folder) == [VERIFIED, "MMStar.tsv"]
    assert lines[0] == f"fetching MMStar.tsv for mmstar from {server.url('utils/VLMEval/MMStar.tsv')} (2.3 kB)"
    assert lines[1].startswith("fetched MMStar.tsv (2.3 kB) in ") and "MD5 verified" in lines[1]
    assert cache.has(source(server))
    assert cache.fetch(source(server)) == folder
    assert server.gets("utils/VLMEval/MMStar.tsv") == 1  # the second fetch found it in the cache


def test_an_interrupted_download_is_resumed_with_a_range_request(server: FileServer, tmp_path: Path) -> None:
    server.cut_after["utils/VLMEval/MMStar.tsv"] = 1000
    cache = DataCache(folder=tmp_path, offline=False)
    with pytest.raises(FetchError) as info:
        cache.fetch(source(server))
    folder = tmp_path / "files" / TSV_MD5
    assert str(info.value) == (
        f"the download of MMStar.tsv from {server.url('utils/VLMEval/MMStar.tsv')} stopped at 1000 of {len(TSV)} "
        f"bytes (the connection closed early); the bytes received are kept in {folder / 'MMStar.tsv.part'} and "
        "the next run resumes from them")
    assert data_files(folder) == ["MMStar.tsv.part"] and not cache.has(source(server))
    server.cut_after.clear()
    lines: list[str] = []
    cache.fetch(source(server), FetchProgress(say=lines.append))
    assert (folder / "MMStar.tsv").read_bytes() == TSV
    assert server.requests[-1] == ("GET", "/utils/VLMEval/MMStar.tsv", "bytes=1000-")
    assert "resuming at 1.0 kB" in lines[0]


def test_a_server_that_ignores_ranges_sends_the_whole_file_again(server: FileServer, tmp_path: Path) -> None:
    folder = tmp_path / "files" / TSV_MD5
    folder.mkdir(parents=True)
    (folder / "MMStar.tsv.part").write_bytes(b"x" * 500)  # not even a prefix: replaced, not appended to
    server.ranges = False
    DataCache(folder=tmp_path, offline=False).fetch(source(server))
    assert (folder / "MMStar.tsv").read_bytes() == TSV and data_files(folder) == [VERIFIED, "MMStar.tsv"]


def test_a_kept_part_longer_than_the_file_starts_again(server: FileServer, tmp_path: Path) -> None:
    folder = tmp_path / "files" / TSV_MD5
    folder.mkdir(parents=True)
    (folder / "MMStar.tsv.part").write_bytes(TSV + b"tail")  # the server answers 416 to its range
    DataCache(folder=tmp_path, offline=False).fetch(source(server))
    assert (folder / "MMStar.tsv").read_bytes() == TSV
    assert [r[2] for r in server.requests] == [f"bytes={len(TSV) + 4}-", None]


def test_a_checksum_mismatch_names_file_and_digests_and_keeps_nothing(server: FileServer, tmp_path: Path) -> None:
    expected = "0" * 32
    with pytest.raises(FetchError) as info:
        DataCache(folder=tmp_path, offline=False).fetch(source(server, md5=expected))
    assert str(info.value).startswith(
        f"MD5 mismatch for MMStar.tsv from {server.url('utils/VLMEval/MMStar.tsv')}: expected {expected}, got "
        f"{TSV_MD5}; the download was deleted")
    assert data_files(tmp_path / "files" / expected) == []


def test_a_404_is_one_line_and_leaves_no_file(server: FileServer, tmp_path: Path) -> None:
    gone = source(server, path="utils/VLMEval/MMStar_v2.tsv")
    with pytest.raises(FetchError) as info:
        DataCache(folder=tmp_path, offline=False).fetch(gone)
    assert str(info.value) == (f"{gone.url} answered 404 Not Found for mmstar's data (MMStar.tsv); check the URL "
                               "(the spec's data.url) or the server")
    assert data_files(tmp_path / "files" / TSV_MD5) == []


def test_an_unreachable_server_is_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    dead = FileSource(name="mmstar", url=f"http://127.0.0.1:{port}/MMStar.tsv", md5=TSV_MD5, filename="MMStar.tsv")
    with pytest.raises(FetchError) as info:
        DataCache(folder=tmp_path, offline=False).fetch(dead)
    assert str(info.value) == (f"cannot reach 127.0.0.1:{port} for mmstar's data ({dead.url}): Connection refused; "
                               "check the network, or fetch on a connected machine (`pytest-mllm-data fetch mmstar`) "
                               "and copy the data cache here")
    assert data_files(tmp_path / "files" / TSV_MD5) == []


def test_offline_a_missing_file_names_the_command_that_fetches_it(server: FileServer, tmp_path: Path) -> None:
    cache = DataCache(folder=tmp_path, offline=True, offline_reason="HF_HUB_OFFLINE=1")
    with pytest.raises(FetchError) as info:
        cache.fetch(source(server))
    assert str(info.value) == (
        f"the data of benchmark 'mmstar' (MMStar.tsv from {server.url('utils/VLMEval/MMStar.tsv')}) is not in the "
        f"data cache {tmp_path} and downloads are off (HF_HUB_OFFLINE=1): on a connected machine run "
        "`pytest-mllm-data fetch mmstar` and copy its data cache folder here (or point PYTEST_MLLM_DATA_CACHE at "
        "it), or pass --mllm-data=mmstar=DIR with the files")
    assert server.requests == []
    DataCache(folder=tmp_path, offline=False).fetch(source(server))  # fetched on a connected machine …
    assert cache.fetch(source(server)) == tmp_path / "files" / TSV_MD5  # … it is found offline


def test_a_file_put_in_the_cache_by_hand_is_checked_once_by_its_md5(server: FileServer, tmp_path: Path) -> None:
    cache = DataCache(folder=tmp_path, offline=True)
    folder = cache.location(source(server))
    folder.mkdir(parents=True)
    (folder / "MMStar.tsv").write_bytes(TSV)  # e.g. copied from an LMUData folder
    assert cache.fetch(source(server)) == folder and (folder / VERIFIED).is_file()
    (folder / "MMStar.tsv").write_bytes(TSV[:-1] + b"!")  # changed since: no longer the released file
    assert not cache.has(source(server))
    DataCache(folder=tmp_path, offline=False).fetch(source(server))
    assert (folder / "MMStar.tsv").read_bytes() == TSV and server.gets("utils/VLMEval/MMStar.tsv") == 1


def test_a_full_disk_mid_download_deletes_the_partial_file(server: FileServer, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A fault injected: writes to the download fail with ENOSPC after 1,000 bytes, as on a full disk (the
    real full disk, a small tmpfs, is the next test, where the machine allows mounting one)."""
    real_open = builtins.open

    class FillingFile(io.FileIO):
        def write(self, data: bytes) -> int:  # type: ignore[override]
            if self.tell() + len(data) > 1000:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return super().write(data)

    def open_filling(file, mode="r", *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(file).endswith(".part") and "b" in mode and ("w" in mode or "a" in mode):
            return FillingFile(file, mode.replace("b", ""))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", open_filling)  # Path.open goes through io.open
    with pytest.raises(FetchError) as info:
        DataCache(folder=tmp_path, offline=False).fetch(source(server))
    folder = tmp_path / "files" / TSV_MD5
    assert str(info.value) == (f"no space left in {folder} while downloading MMStar.tsv for mmstar: the partial "
                               "file was deleted; free space there or pass --mllm-data-cache=DIR (or set "
                               "PYTEST_MLLM_DATA_CACHE) to a folder with room")
    assert data_files(folder) == []


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-r", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"],
                           capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs `unshare -r -m` to mount a small tmpfs")
@pytest.mark.parametrize("announced", [True, False], ids=["length-announced", "no-length"])
def test_a_real_full_disk_is_one_line_and_leaves_nothing(tmp_path: Path, announced: bool) -> None:
    """A 64 kB tmpfs as the data cache (in a user and mount namespace of its own) and a 200 kB file: with its
    length announced the fetch refuses before writing; without, the write fails and the part is deleted."""
    big = os.urandom(200_000)
    mount = tmp_path / "small-disk"
    mount.mkdir()
    script = textwrap.dedent(f"""
        import os, sys
        from pathlib import Path
        from pytest_mllm.engine.fetch import DataCache, FetchError, FileSource
        source = FileSource(name="big", url=sys.argv[1], md5="{hashlib.md5(big).hexdigest()}", filename="big.tsv")
        try:
            DataCache(folder=Path("{mount}"), offline=False).fetch(source)
        except FetchError as exc:
            print("ERROR", exc)
        print("LEFT", sorted(str(p.relative_to("{mount}")) for p in Path("{mount}").rglob("*") if p.is_file()
                             and not p.name.endswith(".lock")))
    """)
    with FileServer({"big.tsv": big}, no_length=set() if announced else {"big.tsv"}).running() as server:
        done = subprocess.run(["unshare", "-r", "-m", "sh", "-c",
                               f'mount -t tmpfs -o size=64k tmpfs "{mount}" && exec "$0" -c "$1" "$2"',
                               sys.executable, script, server.url("big.tsv")], capture_output=True, text=True,
                              timeout=60)
    out = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr
    folder = mount / "files" / hashlib.md5(big).hexdigest()
    if announced:
        assert out[0].startswith(f"ERROR not enough space in {folder} for big's data: 200.0 kB needed, ")
    else:
        assert out[0] == (f"ERROR no space left in {folder} while downloading big.tsv for big: the partial file was "
                          "deleted; free space there or pass --mllm-data-cache=DIR (or set PYTEST_MLLM_DATA_CACHE) "
                          "to a folder with room")
    assert out[1] == "LEFT []"


def test_processes_starting_together_download_once(tmp_path: Path) -> None:
    """Three processes fetch the same file at once (started together once each is ready, and a slow server
    makes them overlap): one downloads, the others wait on the lock and find the verified copy."""
    script = textwrap.dedent("""
        import sys
        from pathlib import Path
        from pytest_mllm.engine.fetch import DataCache, FetchProgress, FileSource
        source = FileSource(name="mmstar", url=sys.argv[1], md5=sys.argv[2], filename="MMStar.tsv")
        print("ready", flush=True)
        sys.stdin.readline()
        print(DataCache(folder=Path(sys.argv[3]), offline=False).fetch(source, FetchProgress(say=print)))
    """)
    with FileServer({"MMStar.tsv": TSV}, delay_s=1.0).running() as server:
        processes = [subprocess.Popen([sys.executable, "-c", script, server.url("MMStar.tsv"), TSV_MD5, str(tmp_path)],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(3)]
        assert all(p.stdout.readline() == "ready\n" for p in processes)  # type: ignore[union-attr]
        for process in processes:
            process.stdin.write("go\n")  # type: ignore[union-attr]
            process.stdin.close()  # type: ignore[union-attr]
        outputs = [(p.stdout.read(), p.stderr.read()) for p in processes]  # type: ignore[union-attr]
        assert all(p.wait(timeout=60) == 0 for p in processes), outputs
        assert server.gets("MMStar.tsv") == 1
    folder = tmp_path / "files" / TSV_MD5
    assert all(out.strip().endswith(str(folder)) for out, _ in outputs)
    assert sum("waiting for another process fetching mmstar's data" in out for out, _ in outputs) == 2, outputs
    assert (folder / "MMStar.tsv").read_bytes() == TSV


# --- a Hugging Face dataset, from a loopback stand-in of the hub ------------------------------------------

PARQUET = FIXTURES / "mcq" / "mmstar_parquet"
REPO_FILES = {"README.md": (PARQUET / "README.md").read_bytes(),
              "data/val-00000-of-00001.parquet": (PARQUET / "mmstar.parquet").read_bytes(),
              "data/test-00000-of-00001.parquet": b"another split's file, never fetched for split val"}


def _fetch_from_hub(hub: HubStandIn, cache: Path, home: Path, revision: str = "main") -> subprocess.CompletedProcess[str]:
    """A fetch in a fresh interpreter: huggingface_hub reads HF_ENDPOINT (the stand-in) when imported."""
    script = ("import sys; from pathlib import Path; from pytest_mllm.engine.fetch import *\n"
              "try: print(DataCache(folder=Path(sys.argv[1]), offline=False).fetch("
              "HubSource('mmstar_parquet', 'Lin-Chen/MMStar', sys.argv[2], 'val')))\n"
              "except FetchError as exc: print('ERROR', exc)")
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0", "HF_HOME": str(home),
           "HF_HUB_DISABLE_TELEMETRY": "1"}
    return subprocess.run([sys.executable, "-c", script, str(cache), revision], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_hub_dataset_split_is_fetched_checked_and_reused(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    with HubStandIn({"Lin-Chen/MMStar": REPO_FILES}).running() as hub:
        done = _fetch_from_hub(hub, tmp_path / "cache", tmp_path / "hf-home")
        commit = hub.commits["Lin-Chen/MMStar"]
        folder = tmp_path / "cache" / "hub" / "Lin-Chen__MMStar" / "main" / "split-val"
        assert done.stdout.strip() == str(folder), done.stderr
        assert (folder / "data" / "val-00000-of-00001.parquet").read_bytes() == REPO_FILES["data/val-00000-of-00001.parquet"]
        assert not (folder / "data" / "test-00000-of-00001.parquet").exists()  # the other split stays on the hub
        assert f'"commit": "{commit}"' in (folder / VERIFIED).read_text()
        downloads = len(hub.downloads())
        assert _fetch_from_hub(hub, tmp_path / "cache", tmp_path / "hf-home").stdout.strip() == str(folder)
        assert len(hub.downloads()) == downloads and downloads == 2  # README.md and the split's file, once
    assert DataCache(folder=tmp_path / "cache", offline=True).has(HubSource("mmstar_parquet", "Lin-Chen/MMStar",
                                                                             "main", "val"))


def test_a_hub_file_that_differs_from_the_hubs_record_is_deleted(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    with HubStandIn({"Lin-Chen/MMStar": REPO_FILES},
                    corrupt={"Lin-Chen/MMStar/data/val-00000-of-00001.parquet"}).running() as hub:
        commit = hub.commits["Lin-Chen/MMStar"]
        done = _fetch_from_hub(hub, tmp_path / "cache", tmp_path / "hf-home", revision=commit)
    data = REPO_FILES["data/val-00000-of-00001.parquet"]
    served = bytes(b ^ 0x20 for b in data)
    assert done.stdout.strip() == (
        f"ERROR sha256 mismatch for data/val-00000-of-00001.parquet of Lin-Chen/MMStar at {commit}: expected "
        f"{hashlib.sha256(data).hexdigest()}, got {hashlib.sha256(served).hexdigest()}; the file was deleted"), done.stderr
    folder = tmp_path / "cache" / "hub" / "Lin-Chen__MMStar" / commit / "split-val"
    assert not (folder / "data" / "val-00000-of-00001.parquet").exists() and not (folder / VERIFIED).exists()


def test_a_hub_dataset_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    with HubStandIn({"Lin-Chen/MMStar": REPO_FILES}).running() as hub:
        script = ("import sys; from pathlib import Path; from pytest_mllm.engine.fetch import *\n"
                  "try: DataCache(folder=Path(sys.argv[1]), offline=False).fetch(HubSource('x', 'nobody/nothing'))\n"
                  "except FetchError as exc: print('ERROR', exc)")
        env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "home")}
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "cache")], env=env, capture_output=True,
                              text=True, timeout=120)
    line = done.stdout.strip()
    assert line.startswith("ERROR cannot list the Hugging Face dataset nobody/nothing at main for x: "), done.stderr
    assert "\n" not in line


def test_a_file_with_no_published_md5_is_recorded_by_its_first_download(server: FileServer, tmp_path: Path) -> None:
    """VLMEvalKit checks no MD5 for some files: the first download's digest is recorded, and a copy that
    changes later is fetched again."""
    unchecked = source(server, md5=None)  # type: ignore[arg-type]
    lines: list[str] = []
    cache = DataCache(folder=tmp_path, offline=False)
    folder = cache.fetch(unchecked, FetchProgress(say=lines.append))
    assert f"no MD5 published to check, its MD5 {TSV_MD5} recorded" in lines[-1]
    (folder / "MMStar.tsv").write_bytes(b"changed")
    assert not cache.has(unchecked)
    cache.fetch(unchecked)
    assert (folder / "MMStar.tsv").read_bytes() == TSV and server.gets("utils/VLMEval/MMStar.tsv") == 2
