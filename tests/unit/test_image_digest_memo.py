"""Image digests are memoised per (path, size, mtime_ns): a shared image is read once, a changed one again."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pytest_mllm.engine import cache
from pytest_mllm.engine.cache import cache_key, image_digest
from pytest_mllm.sample import ImageRef, Sample


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files `image_digest` actually reads, in order (the memo starts empty)."""
    seen: list[Path] = []
    real = cache._hash_file

    def counting(path: Path) -> str:
        seen.append(path)
        return real(path)

    monkeypatch.setattr(cache, "_hash_file", counting)
    monkeypatch.setattr(cache, "_digests", {})
    return seen


def test_unchanged_file_is_hashed_once_changed_file_again(tmp_path: Path, reads: list[Path]) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(b"first content")
    ref = ImageRef("path", "a.png", root=tmp_path)
    first = image_digest(ref)
    assert first == hashlib.sha256(b"first content").hexdigest()
    assert image_digest(ref) == first and image_digest(ImageRef("path", "a.png", root=tmp_path)) == first
    assert len(reads) == 1  # unchanged: not read again

    image.write_bytes(b"second, longer content")  # new size (and mtime)
    second = image_digest(ref)
    assert second == hashlib.sha256(b"second, longer content").hexdigest() and len(reads) == 2

    stat = image.stat()
    image.write_bytes(b"second, LONGER content")  # same size ...
    os.utime(image, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # ... new mtime
    assert image_digest(ref) == hashlib.sha256(b"second, LONGER content").hexdigest()
    assert len(reads) == 3
    assert image_digest(ref) and len(reads) == 3


def test_samples_sharing_an_image_read_it_once(tmp_path: Path, reads: list[Path]) -> None:
    (tmp_path / "shared.png").write_bytes(b"pixels")
    ref = ImageRef("path", "shared.png", root=tmp_path)
    samples = [Sample(id=f"t::q{i}", benchmark="b", task="t", question=f"Q{i}?", answer="yes", images=(ref,))
               for i in range(20)]
    keys = {cache_key("m", {"max_new_tokens": 8}, s.question, s) for s in samples}
    assert len(keys) == 20 and len(reads) == 1


def test_missing_file_is_still_an_image_error(tmp_path: Path, reads: list[Path]) -> None:
    from pytest_mllm.engine.images import ImageError

    with pytest.raises(ImageError, match="not readable"):
        image_digest(ImageRef("path", "gone.png", root=tmp_path))


def test_a_parquet_cell_is_keyed_by_its_files_content(tmp_path: Path) -> None:
    """A parquet image's key names its cell within the file's content hash: rewrite the file, new key."""
    pytest.importorskip("pyarrow")
    from pytest_mllm.loaders import load_samples
    from pytest_mllm.engine.spec import load_spec

    spec = load_spec(Path(__file__).resolve().parents[2] / "benchmarks" / "lime.yaml")
    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "hf_parquet" / "lime"
    import shutil

    data = tmp_path / "lime"
    shutil.copytree(fixture, data)
    first = next(s for s in load_samples(spec, data) if isinstance(s, Sample))
    key = image_digest(first.images[0])
    assert key.startswith("parquet:") and key.endswith("#" + first.images[0].value.partition("#")[2])
    parquet = data / first.images[0].value.partition("#")[0]
    payload = parquet.read_bytes()
    parquet.write_bytes(payload)  # same content, new mtime: same key
    assert image_digest(first.images[0]) == key
    parquet.write_bytes(payload + b"\0")  # other content: another key
    assert image_digest(first.images[0]) != key
