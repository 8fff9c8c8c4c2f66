"""What a model *is*, cheaply and without loading it: the key its cached answers live under."""

from __future__ import annotations

import hashlib
from pathlib import Path

_WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.gguf")
_CONFIG_PATTERNS = ("*.json", "*.jinja")  # small files that change what the model answers
_EDGE_BYTES = 1 << 20  # how much of each end of a weights file the identity hashes


def folder_digest(folder: Path) -> str:
    """A content hash of a model folder, cheap even for many-GB weights.

    Covers the full text of its *.json/*.jinja files, and for each weights file its
    name, size and first and last MiB.
    """
    digest = hashlib.sha256()
    for pattern in _CONFIG_PATTERNS:
        for path in sorted(folder.glob(pattern)):
            digest.update(f"{path.name}\0".encode())
            digest.update(path.read_bytes())
    for pattern in _WEIGHT_PATTERNS:
        for path in sorted(folder.glob(pattern)):
            size = path.stat().st_size
            digest.update(f"{path.name}\0{size}\0".encode())
            with path.open("rb") as f:
                digest.update(f.read(_EDGE_BYTES))
                if size > _EDGE_BYTES:
                    f.seek(max(_EDGE_BYTES, size - _EDGE_BYTES))
                    digest.update(f.read())
    return digest.hexdigest()


def hub_commit(repo_id: str, revision: str | None = None) -> str | None:
    """The commit of the cached snapshot `repo_id` (at `revision`, default main) resolves to, if cached."""
    cached = try_cached(repo_id, "config.json", revision)
    if not isinstance(cached, str):
        return None
    snapshot = Path(cached).parent
    return snapshot.name if snapshot.parent.name == "snapshots" else None


def looks_like_path(source: str) -> bool:
    """True for sources meant as local folders rather than hub repo ids."""
    return source.startswith(("/", ".", "~")) or source.count("/") > 1 or Path(source).exists()


def hf_identity(source: str, name: str, revision: str | None = None) -> str:
    """`name@sha256:…` for a local folder, `name@<commit>` for a cached hub snapshot (at `revision`), else
    the source (with its revision); `+conventions:…` after it when the family is prompted other than by
    default (models/families.py)."""
    if looks_like_path(source):
        folder = Path(source).expanduser()
        return f"{name}@sha256:{folder_digest(folder)[:16]}{_conventions_tag(folder)}"
    commit = hub_commit(source, revision)
    if not commit:
        return f"{source}@{revision}" if revision else source
    snapshot = Path(str(try_cached(source, "config.json", revision))).parent
    return f"{name}@{commit}{_conventions_tag(snapshot)}"


def try_cached(repo_id: str, filename: str, revision: str | None = None) -> object:
    """The hub cache's answer for one file of `repo_id` at `revision` (a path string when it is cached)."""
    from huggingface_hub import try_to_load_from_cache

    return try_to_load_from_cache(repo_id, filename, revision=revision)


def _conventions_tag(folder: Path) -> str:
    """The fingerprint of the conventions a folder's family is prompted with, when they are not the default."""
    from pytest_mllm.models.families import DEFAULT, conventions_for, folder_model_type

    conventions = conventions_for(folder_model_type(folder))
    fingerprint = conventions.fingerprint()
    return "" if fingerprint == DEFAULT.fingerprint() else f"+conventions:{fingerprint}"
