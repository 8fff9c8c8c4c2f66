"""Before any sample: can the model under test be had at all? Cheap checks, no weights loaded.

A missing package, a model folder that is not there or holds no model, a hub model that is not
downloaded on an offline machine, an endpoint no replica of which accepts a connection: each is one
`ModelUnavailable` whose message says what is wrong and how to fix it, instead of an error per
sample. What only loading can show (a corrupt weights file) stops the run at the first load
(`engine/evaluator.py`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_mllm.models.ref import ModelRef

if TYPE_CHECKING:
    from pytest_mllm.engine.endpoint import Endpoint
    from pytest_mllm.models.model_args import ModelArgs

HF_PACKAGES = ("torch", "transformers")
CONNECT_TIMEOUT_S = 3.0


class ModelUnavailable(Exception):
    """The model under test cannot be loaded or reached; the message holds the reason and the fix."""


def transformers_source(ref: ModelRef) -> str | None:
    """The folder or hub id a transformers model loads from ("": built or shipped by the package; None: not
    a transformers model)."""
    entry = ref.entry
    return entry.source(ref) if entry is not None and entry.source is not None else None


def check_model(ref: ModelRef, endpoint: Endpoint, model_args: ModelArgs | None = None) -> None:
    """Raise `ModelUnavailable` when the model `ref` names surely cannot be used."""
    spec = ref.raw
    source = transformers_source(ref)
    if source is not None:
        _check_packages(spec, HF_PACKAGES, "pip install 'pytest-mllm[hf]' (on a GPU machine, install your CUDA "
                                           "build of torch first)")
        if source:
            _check_transformers_source(spec, source, model_args)
        return
    if model_args:
        raise ModelUnavailable(f"--mllm-model-args applies to transformers models (an alias, hf:…, tiny-llava, "
                               f"shapes-llava), not to --mllm={spec}")
    if ref.served:
        _check_endpoint(spec, endpoint)


def _check_packages(spec: str, packages: tuple[str, ...], fix: str) -> None:
    missing = [name for name in packages if importlib.util.find_spec(name) is None]
    if missing:
        raise ModelUnavailable(f"--mllm={spec} needs {' and '.join(missing)}, which {'is' if len(missing) == 1 else 'are'}"
                               f" not installed in this Python ({sys.executable}): {fix}")


def _check_transformers_source(spec: str, source: str, model_args: ModelArgs | None) -> None:
    from pytest_mllm.models.identity import looks_like_path

    if looks_like_path(source):
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise ModelUnavailable(f"--mllm={spec}: the model folder {folder} does not exist; pass the folder that "
                                   "save_pretrained() wrote (hf:/path/to/folder), or a hub repo id (hf:owner/name)")
        subfolder = (model_args.loading.get("subfolder") if model_args else None) or ""
        if not (folder / subfolder / "config.json").is_file():
            raise ModelUnavailable(f"--mllm={spec}: {folder / subfolder} holds no config.json, so it is not a "
                                   "transformers model folder; pass the folder that save_pretrained() wrote")
        for weights in sorted((folder / subfolder).glob("*.safetensors")):
            problem = safetensors_problem(weights)
            if problem is not None:
                raise ModelUnavailable(f"--mllm={spec}: the weights file {weights.name} in {folder / subfolder} {problem}; "
                                       "copy or download the model again")
        _check_family(spec, folder / subfolder)
        return
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        from pytest_mllm.models.identity import hub_commit

        revision = model_args.loading.get("revision") if model_args else None
        if hub_commit(source, revision) is None:
            raise ModelUnavailable(f"--mllm={spec}: {source} is not in the Hugging Face cache and HF_HUB_OFFLINE is "
                                   f"set; download it first (`hf download {source}`), or pass a local folder "
                                   "with hf:/path/to/folder")
    revision = model_args.loading.get("revision") if model_args else None
    from pytest_mllm.models.identity import try_cached

    cached = try_cached(source, "config.json", revision)
    if isinstance(cached, str):
        _check_family(spec, Path(cached).parent)


def _check_family(spec: str, folder: Path) -> None:
    """A family pytest-mllm does not run (models/families.py) is refused with its reason, before loading."""
    from pytest_mllm.models.families import conventions_for, folder_model_type

    model_type = folder_model_type(folder)
    refused = conventions_for(model_type).refused
    if refused:
        raise ModelUnavailable(f"--mllm={spec}: its family ({model_type}) cannot be run on a benchmark: {refused}")


_LONGEST_HEADER = 100_000_000  # bytes; safetensors itself refuses longer headers


def safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file cannot be whole (its header unreadable, or the file shorter than the tensors
    its header places), without reading the tensors; None when it looks whole."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as handle:
            length = int.from_bytes(handle.read(8), "little")
            if size < 8 or length > min(size - 8, _LONGEST_HEADER):
                return f"is truncated or no safetensors file ({size} bytes, too short for the header it announces)"
            header = json.loads(handle.read(length))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except (ValueError, RecursionError):
        return "has a header that is not valid JSON (the file is truncated or corrupt)"
    ends = [entry["data_offsets"][1] for name, entry in (header.items() if isinstance(header, dict) else ())
            if name != "__metadata__" and isinstance(entry, dict) and isinstance(entry.get("data_offsets"), list)
            and len(entry["data_offsets"]) == 2 and isinstance(entry["data_offsets"][1], int)]
    needed = 8 + length + max(ends, default=0)
    if size < needed:
        return f"is truncated: {size} bytes, where its header places tensors up to byte {needed}"
    return None


def _check_endpoint(spec: str, endpoint: Endpoint) -> None:
    """At least one replica must accept a TCP connection (what it answers is the client's business)."""
    failures = []
    for url in endpoint.urls:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((parts.hostname, port), timeout=CONNECT_TIMEOUT_S):
                return
        except OSError as exc:
            failures.append(f"{url}: {exc.strerror or exc}")
    raise ModelUnavailable(f"--mllm={spec}: cannot reach the endpoint ({'; '.join(failures)}); start the server, "
                           "or point --mllm-base-url (or $OPENAI_BASE_URL) at it")
