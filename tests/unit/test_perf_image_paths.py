"""Cache keys resolve each image path once per process; a path leaving its data root is refused every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.engine import cache
from pytest_mllm.engine.cache import cache_key, image_digest
from pytest_mllm.engine.images import ImageError, resolve_inside
from pytest_mllm.sample import ImageRef, Sample


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, str]]:
    """The (root, path) pairs the digest actually resolves, in order (both memos start empty)."""
    seen: list[tuple[Path, str]] = []

    def counting(root: Path, relative: str) -> Path:
        seen.append((root, relative))
        return resolve_inside(root, relative)

    monkeypatch.setattr(cache, "resolve_inside", counting)
    monkeypatch.setattr(cache, "_resolved", {})
    monkeypatch.setattr(cache, "_digests", {})
    return seen


def test_samples_sharing_an_image_resolve_its_path_once(tmp_path: Path,
                                                        resolutions: list[tuple[Path, str]]) -> None:
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "a.png").write_bytes(b"a")
    (tmp_path / "img" / "b.png").write_bytes(b"b")
    samples = [Sample(id=f"t::q{i}", benchmark="b", task="t", question="Q?", answer="yes",
                      images=(ImageRef("path", f"img/{'ab'[i % 2]}.png", root=tmp_path),)) for i in range(50)]
    keys = [cache_key("m", {"max_new_tokens": 8}, "Q?", s) for s in samples]
    assert len(set(keys)) == 2 and keys[0] == keys[2] != keys[1]
    assert resolutions == [(tmp_path, "img/a.png"), (tmp_path, "img/b.png")]


def test_a_file_changed_after_its_path_was_resolved_gets_a_new_digest(tmp_path: Path,
                                                                      resolutions: list[tuple[Path, str]]) -> None:
    image = tmp_path / "a.png"
    image.write_bytes(b"first")
    ref = ImageRef("path", "a.png", root=tmp_path)
    first = image_digest(ref)
    image.write_bytes(b"second, longer")
    assert image_digest(ref) != first and len(resolutions) == 1


def test_a_path_escaping_its_root_is_refused_every_time(tmp_path: Path,
                                                       resolutions: list[tuple[Path, str]]) -> None:
    root = tmp_path / "data"
    root.mkdir()
    (tmp_path / "secret.png").write_bytes(b"outside")
    (root / "link.png").symlink_to(tmp_path / "secret.png")
    for _ in range(2):
        for relative in ("../secret.png", "link.png"):
            with pytest.raises(ImageError, match="escapes the data root"):
                image_digest(ImageRef("path", relative, root=root))
    assert len(resolutions) == 4  # a refusal is never memoised


def test_a_missing_image_is_an_image_error_naming_the_file(tmp_path: Path,
                                                          resolutions: list[tuple[Path, str]]) -> None:
    with pytest.raises(ImageError, match=r"not readable: .*gone\.png"):
        image_digest(ImageRef("path", "gone.png", root=tmp_path))
