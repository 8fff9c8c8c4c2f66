"""The response cache: SQLite on disk, shared by xdist workers, never pickled.

A key covers everything that changes an answer: the model's identity (name plus a hash
of its weights or its revision), the generation settings, the prompt, and the content
hashes of the images. Each batch is written in one transaction, so a run killed with
SIGKILL leaves only whole entries behind; a re-run picks up where it stopped.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_mllm.engine.chat import scrub
from pytest_mllm.engine.images import ImageError, resolve_inside, tsv_image_bytes
from pytest_mllm.sample import ImageRef, Sample

SCHEMA_VERSION = 2  # 2 added latency_s (a version-1 file is migrated in place)
_COLUMNS = ("key", "response", "model", "created", "latency_s")


class CacheWarning(UserWarning):
    """The cache file could not be used as it was and was set aside."""


_digests: dict[tuple[str, int, int], str] = {}  # (path, size, mtime_ns) → sha256, for this process
_digests_lock = threading.Lock()
_MAX_DIGESTS = 1_000_000
_resolved: dict[tuple[Path, str], Path] = {}  # (data root, image path) → the checked file, for this process


def _hash_file(path: Path) -> str:
    """The sha256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """The content hash of a file, memoised per (path, size, mtime_ns) in this process: an image several
    samples share is read once, and a file that changed (new size or modification time) is read again."""
    stat = os.stat(path)
    memo = (str(path), stat.st_size, stat.st_mtime_ns)
    found = _digests.get(memo)
    if found is not None:
        return found
    digest = _hash_file(path)
    with _digests_lock:
        if len(_digests) >= _MAX_DIGESTS:
            _digests.clear()
        _digests[memo] = digest
    return digest


def _resolved_image(root: Path, relative: str) -> Path:
    """`resolve_inside(root, relative)`, memoised: resolving walks every component of both paths, and a
    benchmark's samples name the same images again and again. Only hashing uses it; decoding an image
    (`load_image`) checks its path afresh."""
    key = (root, relative)
    found = _resolved.get(key)
    if found is None:
        found = resolve_inside(root, relative)
        with _digests_lock:
            if len(_resolved) >= _MAX_DIGESTS:
                _resolved.clear()
            _resolved[key] = found
    return found


def image_digest(ref: ImageRef) -> str:
    """A content hash of an image without decoding it (files: memoised, see `file_digest`)."""
    if ref.kind == "path":
        if ref.root is None:
            raise ImageError(f"image {ref.value!r} has no data root")
        path = _resolved_image(ref.root, ref.value)
        try:
            return file_digest(path)
        except OSError as exc:
            raise ImageError(f"image not readable: {path}: {exc}") from None
    if ref.kind == "base64":
        return hashlib.sha256(base64.b64decode(ref.value, validate=False)).hexdigest()
    if ref.kind == "tsv":  # the same digest as the image's base64 text held in memory
        return hashlib.sha256(tsv_image_bytes(ref)[0]).hexdigest()
    if ref.kind == "parquet":  # the cell's place in a file known by its content: a changed file asks again
        if ref.root is None:
            raise ImageError(f"image {ref.value!r} has no data root")
        relative, _, cell = ref.value.partition("#")
        path = _resolved_image(ref.root, relative)
        try:
            return f"parquet:{file_digest(path)}#{cell}"
        except OSError as exc:
            raise ImageError(f"image not readable: {path}: {exc}") from None
    return "generated:" + ref.value  # the key fully determines the drawing


def cache_key(identity: str, settings: Mapping[str, Any], prompt: str, sample: Sample) -> str:
    """The key one answer is stored under."""
    payload = {
        "model": identity,
        "settings": dict(sorted(settings.items())),
        "prompt": prompt,
        "images": [image_digest(ref) for ref in sample.images],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


class ResponseCache:
    """key → response text, in one SQLite file (WAL mode, safe for concurrent workers)."""

    def __init__(self, path: Path, *, read: bool = True) -> None:
        self.path = path
        self.read = read
        path.parent.mkdir(parents=True, exist_ok=True)
        self._failed = False  # a read or a write failed during the run (a full disk): the cache is off
        try:
            self._db = self._open()
        except sqlite3.DatabaseError as exc:
            aside = path.with_name(f"{path.name}.unusable-{int(time.time())}")
            path.replace(aside)
            for suffix in ("-wal", "-shm"):  # its journal belongs to the old file
                path.with_name(path.name + suffix).unlink(missing_ok=True)
            self._warn(f"response cache {path} was unusable ({exc}); moved to {aside.name} and started afresh")
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        # check_same_thread off: a served model's answers run on the thread running the served loop (engine/pipeline.py)
        db = sqlite3.connect(self.path, timeout=60, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if version == 1 and "responses" in tables:
            db.execute("ALTER TABLE responses ADD COLUMN latency_s REAL")
        elif version != SCHEMA_VERSION and tables:
            db.close()
            raise sqlite3.DatabaseError(f"schema version {version}, expected {SCHEMA_VERSION}")
        db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, "
                   "model TEXT NOT NULL, created REAL NOT NULL, latency_s REAL)")
        columns = [row[1] for row in db.execute("PRAGMA table_info(responses)")]
        if columns != list(_COLUMNS):
            db.close()
            raise sqlite3.DatabaseError(f"its responses table has the columns {', '.join(columns)}, expected "
                                        f"{', '.join(_COLUMNS)}")
        db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        return db

    def get_many(self, keys: Iterable[str]) -> dict[str, str]:
        """The cached responses among `keys` (nothing when reading is off)."""
        return {key: text for key, (text, _) in self.get_entries(keys).items()}

    def get_entries(self, keys: Iterable[str]) -> dict[str, tuple[str, float | None]]:
        """The cached responses among `keys` with the time each took to generate (None: not recorded)."""
        keys = list(keys)
        if not self.read or not keys or self._failed:
            return {}
        found: dict[str, tuple[str, float | None]] = {}
        try:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for key, text, took in self._db.execute(
                        f"SELECT key, response, latency_s FROM responses WHERE key IN ({marks})", chunk):
                    found[key] = (text, took)
        except sqlite3.Error as exc:
            self._turn_off("read", exc)
            return {}
        return found

    def put_many(self, entries: Mapping[str, str], model: str,
                 latencies: Mapping[str, float | None] | None = None) -> None:
        """Store responses (and how long each took), all in one transaction; scrubbed of any API key
        (`chat.scrub`: replies from endpoints already are, this holds for every writer)."""
        if not entries or self._failed:
            return
        now = time.time()
        took = latencies or {}
        try:
            with self._db:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?)",
                                     [(key, scrub(text), model, now, took.get(key)) for key, text in entries.items()])
        except sqlite3.Error as exc:
            self._turn_off("write", exc)

    def _turn_off(self, what: str, exc: sqlite3.Error) -> None:
        """A read or write failed mid-run (a full disk, a file changed under us): warn once, and answer
        the rest of the run without the cache; the answers already given stand."""
        self._failed = True
        self._warn(f"response cache {self.path}: a {what} failed ({exc}); the cache is off for the rest of this run "
                   "(answers are still scored; free space or pass --mllm-cache-dir=DIR)")

    def _warn(self, message: str) -> None:
        """A CacheWarning located at the cache file (not at a line of this module)."""
        warnings.warn_explicit(CacheWarning(message), CacheWarning, str(self.path), 0)

    def __len__(self) -> int:
        count: int = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
        return count

    def close(self) -> None:
        self._db.close()
