"""Benchmark data fetched on first use into a data cache, verified, and reused afterwards.

A source is a record of where a benchmark's released data lies, from a spec's `data:` section or a
catalogue entry:

- `FileSource`: one released file at a URL with its MD5 (VLMEvalKit's LMUData files). Downloaded with
  progress into `<cache>/files/<md5>/<filename>`; an interrupted download stays as `<filename>.part`
  and the next fetch resumes it (an HTTP Range request); the MD5 of the whole file is checked before
  the file takes its name, and a mismatch deletes the download.
- `HubSource`: a Hugging Face dataset repository at a revision (lmms-eval's datasets), fetched with
  `huggingface_hub` (the optional extra `hub`) into `<cache>/hub/<owner>__<name>/<revision>/split-<split>/`: the
  files of the split when the repository's file names show it, else all of them; each file is checked
  against the hub's own record of that commit (the SHA-256 of a large file, the git blob id of a small one).

A folder holds a verified copy once `.pytest-mllm-verified.json` is written in it, last. Fetching one
source is done under a file lock in its folder (the `filelock` package): xdist workers, shards and
runs started together on one machine (or sharing a cache folder) download it once; the others wait.

The cache folder: `DataCache.folder`, from `--mllm-data-cache`, else `$PYTEST_MLLM_DATA_CACHE`, else
`$XDG_CACHE_HOME/pytest-mllm/data`, else `~/.cache/pytest-mllm/data`. Downloads are off when
`HF_HUB_OFFLINE` is set to a true value (as for the hub's own library) or with `--mllm-offline`: a
source not yet in the cache is then a `FetchError` that names the command fetching it on a connected
machine (`pytest-mllm-data fetch NAME`, `engine/fetch_cli.py`).
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

CACHE_VARIABLE = "PYTEST_MLLM_DATA_CACHE"
OFFLINE_VARIABLE = "HF_HUB_OFFLINE"
FETCH_COMMAND = "pytest-mllm-data fetch"
VERIFIED = ".pytest-mllm-verified.json"  # written last in a source's folder: its files are whole and checked
_LOCK = ".pytest-mllm-fetch.lock"
_CHUNK = 1 << 20
_TIMEOUT_S = 60.0  # per connection attempt and per read: a stalled server is an error, not a hang
_MD5 = re.compile(r"^[0-9a-f]{32}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_REPO = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")
_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's reading of its boolean variables


class FetchError(Exception):
    """A benchmark's data could not be fetched or verified; one line naming what, where and the fix."""


@dataclass(frozen=True)
class FileSource:
    """A released file at a URL with its MD5 (VLMEvalKit's `DATASET_URL` and `DATASET_MD5`; None where
    VLMEvalKit publishes none: the digest of the first download is then recorded and checked afterwards)."""

    name: str  # the benchmark, for messages
    url: str
    md5: str | None
    filename: str  # the file's name in the cache (what the spec's `data.file` names)

    def __post_init__(self) -> None:
        if urllib.parse.urlsplit(self.url).scheme not in ("http", "https"):
            raise ValueError(f"{self.url!r} is not an http(s) URL")
        if self.md5 is not None and not _MD5.match(self.md5):
            raise ValueError(f"{self.md5!r} is not an MD5 digest (32 lowercase hex digits)")
        if not self.filename or Path(self.filename).name != self.filename or self.filename.startswith("."):
            raise ValueError(f"{self.filename!r} is not a plain file name")

    def where(self) -> str:
        return f"{self.filename} from {self.url}"


@dataclass(frozen=True)
class HubSource:
    """A Hugging Face dataset repository at a revision (lmms-eval's `dataset_path`), and the split read."""

    name: str
    repo: str  # "owner/name"
    revision: str = "main"  # a commit (checked), or a branch or tag (the commit it pointed at is recorded)
    split: str | None = None  # fetch only this split's files when their names show it

    def __post_init__(self) -> None:
        if not _REPO.match(self.repo):
            raise ValueError(f"{self.repo!r} is not a dataset repository id (owner/name)")
        if not self.revision or not self.revision.isprintable() or " " in self.revision or ".." in self.revision:
            raise ValueError(f"{self.revision!r} is not a revision")

    def where(self) -> str:
        split = f", split {self.split}" if self.split else ""
        return f"the Hugging Face dataset {self.repo} at {self.revision}{split}"


Source = FileSource | HubSource


def source_from_record(record: Mapping[str, Any]) -> Source:
    """A source from a plain record (a catalogue entry): {name, url, md5 (or None), file or filename} as
    VLMEvalKit's datasets give it, or {name, repo or dataset_path, revision, split} as lmms-eval's tasks do;
    ValueError naming what is wrong."""
    if record.get("url"):
        url = str(record["url"])
        md5 = record.get("md5")
        return FileSource(name=str(record["name"]), url=url, md5=str(md5) if md5 else None,
                          filename=str(record.get("filename") or record.get("file") or url_filename(url)))
    repo = record.get("repo") or record.get("dataset_path")
    if repo:
        split = record.get("split")
        return HubSource(name=str(record["name"]), repo=str(repo), revision=str(record.get("revision") or "main"),
                         split=str(split) if split else None)
    raise ValueError(f"the data source of {record.get('name')!r} needs a url (with its md5) or a Hugging Face "
                     "dataset (repo or dataset_path)")


def url_filename(url: str) -> str:
    """The file name a URL ends in ('' when none)."""
    return urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])


def default_folder(environ: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """$PYTEST_MLLM_DATA_CACHE, else $XDG_CACHE_HOME/pytest-mllm/data, else ~/.cache/pytest-mllm/data."""
    if environ.get(CACHE_VARIABLE):
        return Path(environ[CACHE_VARIABLE]).expanduser()
    base = Path(environ["XDG_CACHE_HOME"]).expanduser() if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "pytest-mllm" / "data"


def offline_by_environment(environ: dict[str, str] | os._Environ[str] = os.environ) -> bool:
    return environ.get(OFFLINE_VARIABLE, "").strip().upper() in _TRUE


# --- progress ---------------------------------------------------------------------------------------


class FetchProgress:
    """How a fetch shows itself: a line as each download starts and ends, and a bar (rich) in between
    when `terminal` is a terminal. `say` writes one line."""

    def __init__(self, say: Callable[[str], None] = lambda line: None, terminal: TextIO | None = None) -> None:
        self.say = say
        self.terminal = terminal if terminal is not None and terminal.isatty() else None
        self._bar: Any = None
        self._task: Any = None

    def started(self, what: str, total: int | None, done: int) -> None:
        size = f" ({_size(total)})" if total else ""
        resumed = f", resuming at {_size(done)}" if done else ""
        self.say(f"fetching {what}{size}{resumed}")
        if self.terminal is None:
            return
        from rich.console import Console
        from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TransferSpeedColumn

        self._bar = Progress(TextColumn("  {task.description}"), BarColumn(), DownloadColumn(),
                             TransferSpeedColumn(), console=Console(file=self.terminal), transient=True)
        self._bar.start()
        self._task = self._bar.add_task(what.split(" ")[0], total=total, completed=done)

    def advanced(self, n: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def stopped(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _size(n: int | None) -> str:
    """A byte count as people read it: 812 B, 2.3 kB, 41.0 MB, 1.2 GB."""
    if n is None:
        return "size unknown"
    if n < 1000:
        return f"{n} B"
    value, unit = n / 1000, "kB"
    for bigger in ("MB", "GB"):
        if value < 1000:
            break
        value, unit = value / 1000, bigger
    return f"{value:.1f} {unit}"


# --- the cache --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataCache:
    """Where fetched data lives and whether downloads are allowed."""

    folder: Path = field(default_factory=default_folder)
    offline: bool = field(default_factory=offline_by_environment)
    offline_reason: str = ""  # what turned downloads off, for messages ("HF_HUB_OFFLINE=1", "--mllm-offline")

    def location(self, source: Source) -> Path:
        """The folder holding `source`'s files once fetched: a spec's data root."""
        if isinstance(source, FileSource):
            if source.md5 is None:  # no published digest: keyed by the URL
                return self.folder / "files" / ("url-" + hashlib.sha256(source.url.encode()).hexdigest()[:32])
            return self.folder / "files" / source.md5
        split = f"split-{_safe_name(source.split)}" if source.split else "all-splits"
        return self.folder / "hub" / source.repo.replace("/", "__") / _safe_name(source.revision) / split

    def has(self, source: Source) -> bool:
        """Whether a verified copy of `source` is in the cache (no network; a file changed since it was
        verified is checked again)."""
        return _verified(self.location(source), source)

    def fetch(self, source: Source, progress: FetchProgress | None = None) -> Path:
        """The folder of a verified copy of `source`, downloaded first unless the cache has it (FetchError)."""
        progress = progress or FetchProgress()
        folder = self.location(source)
        if _verified(folder, source):
            return folder
        if self.offline:
            raise FetchError(missing_offline([source], self))
        from filelock import FileLock, Timeout

        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise FetchError(f"the data cache folder {folder} cannot be created ({exc.strerror or exc}): pass "
                             f"--mllm-data-cache=DIR or set {CACHE_VARIABLE}=DIR (a writable folder)") from None
        lock = FileLock(str(folder / _LOCK))
        try:
            lock.acquire(timeout=0.2)
        except Timeout:
            progress.say(f"waiting for another process fetching {source.name}'s data into {folder}")
            lock.acquire()
        try:
            if _verified(folder, source):  # another process fetched it while this one waited
                return folder
            if isinstance(source, FileSource):
                _fetch_file(source, folder, progress)
            else:
                _fetch_hub(source, folder, progress)
        finally:
            progress.stopped()
            lock.release()
        return folder


def missing_offline(sources: Sequence[Source], cache: DataCache) -> str:
    """The one-line error for sources not in the cache while downloads are off."""
    names = list(dict.fromkeys(s.name for s in sources))
    what = (f"the data of benchmark {names[0]!r} ({describe(sources[0])})" if len(names) == 1
            else "the data of benchmarks " + ", ".join(repr(n) for n in names))
    reason = cache.offline_reason or f"{OFFLINE_VARIABLE}={os.environ.get(OFFLINE_VARIABLE, '1')}"
    return (f"{what} is not in the data cache {cache.folder} and downloads are off ({reason}): on a connected "
            f"machine run `{FETCH_COMMAND} {' '.join(names)}` and copy its data cache folder here (or point "
            f"{CACHE_VARIABLE} at it), or pass --mllm-data={names[0]}=DIR with the files")


def describe(source: Source) -> str:
    """Where the source's data comes from, in a few words (each source says: no test of its class, which a
    spec read before the module was loaded again, as pytest's in-process test runs do, would fail)."""
    return source.where()


def _safe_name(text: str) -> str:
    return re.sub(r"[^\w.\-]", "_", text)


# --- what is verified -------------------------------------------------------------------------------


def _verified(folder: Path, source: Source) -> bool:
    """True when the folder's marker matches `source` and its files are as they were when verified; a
    file whose size or time changed (copied from another machine) is hashed again, once."""
    try:
        marker = json.loads((folder / VERIFIED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _adopt(folder, source)
    files = marker.get("files") if isinstance(marker, dict) else None
    if not isinstance(files, dict) or marker.get("source") != _identity(source):
        return False
    changed = False
    for relative, seen in files.items():
        path = folder / relative
        try:
            stat = path.stat()
        except OSError:
            return False
        if stat.st_size != seen.get("size"):
            return False
        if stat.st_mtime_ns != seen.get("mtime_ns"):
            if _digest(path, seen["algorithm"]) != seen["digest"]:
                return False
            seen["mtime_ns"] = stat.st_mtime_ns
            changed = True
    if changed:
        _write_marker(folder, marker)
    return True


def _adopt(folder: Path, source: Source) -> bool:
    """A released file put into its cache folder by hand (from an LMUData folder): verified once by its MD5."""
    if not isinstance(source, FileSource) or source.md5 is None:
        return False
    path = folder / source.filename
    if not path.is_file() or _digest(path, "md5") != source.md5:
        return False
    _mark(folder, source, {source.filename: ("md5", source.md5)})
    return True


def _identity(source: Source) -> dict[str, Any]:
    if isinstance(source, FileSource):  # the same bytes from another URL (a mirror) are the same data
        return {"md5": source.md5, "filename": source.filename} if source.md5 else {"url": source.url,
                                                                                    "filename": source.filename}
    return {"repo": source.repo, "revision": source.revision, "split": source.split}


def _mark(folder: Path, source: Source, digests: dict[str, tuple[str, str]], **extra: Any) -> None:
    """Write the folder's marker: each file's size, time and digest."""
    files = {}
    for relative, (algorithm, digest) in digests.items():
        stat = (folder / relative).stat()
        files[relative] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "algorithm": algorithm,
                           "digest": digest}
    _write_marker(folder, {"source": _identity(source), **extra, "files": files})


def _write_marker(folder: Path, marker: dict[str, Any]) -> None:
    temporary = folder / (VERIFIED + ".tmp")
    temporary.write_text(json.dumps(marker, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, folder / VERIFIED)


def _digest(path: Path, algorithm: str) -> str:
    """The file's digest: md5, sha256, or git-blob (git's SHA-1 of a blob: the hub's id of a small file)."""
    if algorithm == "git-blob":
        hasher = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    else:
        hasher = hashlib.new(algorithm)
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


# --- a released file over HTTP ------------------------------------------------------------------------


def _fetch_file(source: FileSource, folder: Path, progress: FetchProgress) -> None:
    """Download (or resume) `source` into `folder`, check its MD5, then give it its name."""
    part = folder / (source.filename + ".part")
    target = folder / source.filename
    if target.exists():  # a file that failed verification: never read as data
        target.unlink()
    have = part.stat().st_size if part.exists() else 0
    response = _open(source, have)
    if have and (response is None or response.status == 206 and _range_start(response) != have):
        if response is not None:  # a range other than the one asked for
            response.close()
        part.unlink()  # the kept part is no prefix of the file the server has now: start again
        have = 0
        response = _open(source, 0)
    with response:
        if have and response.status != 206:
            have = 0  # the server sends the whole file again
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        if total is not None:
            _check_space(folder, total - have, source)
        hasher = hashlib.md5()
        if have:
            with part.open("rb") as handle:
                while chunk := handle.read(_CHUNK):
                    hasher.update(chunk)
        what = f"{source.filename} for {source.name} from {source.url}"
        progress.started(what, total, have)
        started = time.monotonic()
        received = _receive(response, part, "ab" if have else "wb", hasher, progress, source)
    size = have + received
    if total is not None and size < total:
        raise FetchError(f"the download of {source.filename} from {source.url} stopped at {size} of {total} bytes "
                         f"(the connection closed early); the bytes received are kept in {part} and the next "
                         "run resumes from them")
    actual = hasher.hexdigest()
    if source.md5 is not None and actual != source.md5:
        part.unlink(missing_ok=True)
        raise FetchError(f"MD5 mismatch for {source.filename} from {source.url}: expected {source.md5}, got "
                         f"{actual}; the download was deleted (the server's file differs from the one this "
                         "benchmark was checked against: a changed release, or a proxy's page)")
    os.replace(part, target)
    _mark(folder, source, {source.filename: ("md5", actual)})
    seconds = max(time.monotonic() - started, 1e-6)
    progress.stopped()
    checked = "MD5 verified" if source.md5 else f"no MD5 published to check, its MD5 {actual} recorded"
    progress.say(f"fetched {source.filename} ({_size(size)}) in {seconds:.1f} s, {checked}: {target}")


def _range_start(response: Any) -> int | None:
    """Where a 206 response's bytes start (its Content-Range)."""
    match = re.match(r"^\s*bytes\s+(\d+)-", response.headers.get("Content-Range") or "")
    return int(match.group(1)) if match else None


def _open(source: FileSource, have: int) -> Any:
    """The server's response, asking for the bytes after `have` when a part is kept (None when the server
    refuses that range: 416); FetchError when there is no response to read."""
    import urllib.error
    import urllib.request

    from pytest_mllm import __version__

    headers = {"User-Agent": f"pytest-mllm/{__version__}", "Accept-Encoding": "identity"}
    if have:
        headers["Range"] = f"bytes={have}-"
    request = urllib.request.Request(source.url, headers=headers)
    host = urllib.parse.urlsplit(source.url).netloc
    try:
        return urllib.request.urlopen(request, timeout=_TIMEOUT_S)  # noqa: S310 - http(s) only (FileSource)
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and have:
            return None
        raise FetchError(f"{source.url} answered {exc.code} {exc.reason} for {source.name}'s data "
                         f"({source.filename}); check the URL (the spec's data.url) or the server") from None
    except urllib.error.URLError as exc:
        reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
        raise FetchError(f"cannot reach {host} for {source.name}'s data ({source.url}): {reason}; check the "
                         f"network, or fetch on a connected machine (`{FETCH_COMMAND} {source.name}`) and copy "
                         "the data cache here") from None
    except (OSError, ValueError) as exc:  # a timeout, a reset connection, a malformed reply
        raise FetchError(f"cannot download {source.name}'s data from {source.url}: {exc}") from None


def _receive(response: Any, part: Path, mode: str, hasher: Any, progress: FetchProgress, source: FileSource) -> int:
    """Copy the response's body into `part`, hashing it; the bytes received. A full disk deletes the part
    (FetchError); a broken connection keeps it for the next run to resume."""
    import http.client

    received = 0
    try:
        with part.open(mode) as out:
            while True:
                try:
                    chunk = response.read(_CHUNK)
                except (OSError, http.client.HTTPException) as exc:  # reset, timed out, a chunk cut: what arrived is kept
                    out.flush()
                    raise FetchError(f"the download of {source.filename} from {source.url} broke off after "
                                     f"{received} more bytes ({exc}); the bytes received are kept in {part} and "
                                     "the next run resumes from them") from None
                if not chunk:
                    break
                out.write(chunk)
                hasher.update(chunk)
                received += len(chunk)
                progress.advanced(len(chunk))
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        part.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise FetchError(f"no space left in {part.parent} while downloading {source.filename} for "
                             f"{source.name}: the partial file was deleted; free space there or pass "
                             f"--mllm-data-cache=DIR (or set {CACHE_VARIABLE}) to a folder with room") from None
        raise FetchError(f"cannot write {part}: {exc}; the partial file was deleted") from None
    return received


def _check_space(folder: Path, needed: int, source: Source) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise FetchError(f"not enough space in {folder} for {source.name}'s data: {_size(needed)} needed, "
                         f"{_size(free)} free; free space there or pass --mllm-data-cache=DIR (or set "
                         f"{CACHE_VARIABLE}) to a folder with room")


# --- a Hugging Face dataset ---------------------------------------------------------------------------


def _fetch_hub(source: HubSource, folder: Path, progress: FetchProgress) -> None:
    """Download the dataset's files (the split's when their names show it) with huggingface_hub, check each
    against the hub's record of the commit, and mark the folder."""
    try:
        from huggingface_hub import HfApi, hf_hub_download
        from huggingface_hub.hf_api import RepoFile
    except ImportError:
        raise FetchError(f"{source.name}'s data is {source.where()}: fetching it needs huggingface_hub; install "
                         "the extra: pip install 'pytest-mllm[hub]'") from None
    api = HfApi()
    try:
        commit = source.revision if _COMMIT.match(source.revision) else api.repo_info(
            source.repo, repo_type="dataset", revision=source.revision).sha
        entries = [f for f in api.list_repo_tree(source.repo, repo_type="dataset", revision=commit, recursive=True)
                   if isinstance(f, RepoFile)]
    except Exception as exc:  # noqa: BLE001 - the hub library's errors (HTTP, connection, not found) in one line
        raise FetchError(f"cannot list {source.where()} for {source.name}: {_first_line(exc)}") from None
    wanted = split_files([f.path for f in entries], source.split)
    files = {f.path: f for f in entries if f.path in wanted}
    _check_space(folder, sum(f.size or 0 for f in files.values()), source)
    progress.started(f"{source.repo}@{commit[:12]} for {source.name} ({len(files)} files)", None, 0)
    digests: dict[str, tuple[str, str]] = {}
    for path, entry in files.items():
        try:
            hf_hub_download(source.repo, path, repo_type="dataset", revision=commit, local_dir=folder)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise FetchError(f"no space left in {folder} while downloading {path} of {source.repo}: free "
                                 f"space there or pass --mllm-data-cache=DIR (or set {CACHE_VARIABLE})") from None
            raise FetchError(f"cannot download {path} of {source.where()}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - the hub library's errors in one line
            raise FetchError(f"cannot download {path} of {source.where()}: {_first_line(exc)}") from None
        algorithm, expected = ("sha256", entry.lfs.sha256) if entry.lfs is not None else ("git-blob", entry.blob_id)
        actual = _digest(folder / path, algorithm)
        if actual != expected:
            (folder / path).unlink(missing_ok=True)
            raise FetchError(f"{algorithm} mismatch for {path} of {source.repo} at {commit}: expected {expected}, "
                             f"got {actual}; the file was deleted")
        digests[path] = (algorithm, actual)
    _mark(folder, source, digests, commit=commit)
    progress.stopped()
    progress.say(f"fetched {source.repo} at {commit} ({len(files)} files), each checked against the hub's "
                 f"record: {folder}")


def split_files(paths: Iterable[str], split: str | None) -> set[str]:
    """The files of a dataset repository to fetch for `split`: those whose name or folder is the split's
    (`data/val-00000-of-00001.parquet`, `Art/validation-….parquet`, `test/0.parquet`, `test.parquet`) and
    the card (`*.md`); every file when no name shows the split."""
    paths = list(paths)
    if not split:
        return set(paths)
    pattern = re.compile(rf"(^|/){re.escape(split)}([-.][^/]*)?(/|$)")
    found = {p for p in paths if pattern.search(p)}
    if not found:
        return set(paths)
    return found | {p for p in paths if p.endswith(".md")}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


def say_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
