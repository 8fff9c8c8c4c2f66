"""`HFModel`: any transformers image-text-to-text model, run with batched greedy decoding.

Imported only when a transformers model is requested: it needs torch and transformers
(the `hf` extra).
"""

from __future__ import annotations

import time
from functools import cached_property
from pathlib import Path
from typing import Sequence

import torch
from transformers import AutoModelForImageTextToText

from pytest_mllm.models.hf_inputs import load_conventions, load_processor, model_inputs
from pytest_mllm.models.identity import hf_identity, looks_like_path
from pytest_mllm.sample import Request, Response

_DTYPES: dict[str, torch.dtype] = {
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "fp32": torch.float32,
    "float32": torch.float32,
}


def resolve_device(device: str) -> torch.device:
    """"auto" is cuda when available, else cpu; anything else is passed to torch."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """"auto" is bfloat16 on CUDA and float32 elsewhere; also bf16/fp16/fp32 and long names."""
    if dtype == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    try:
        return _DTYPES[dtype.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}: use auto, {', '.join(_DTYPES)}") from None


class HFModel:
    """A transformers image-text-to-text model (local folder or hub repo id) as a `Model`."""

    needs_images = True

    def __init__(
        self,
        source: str,
        *,
        name: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        trust_remote_code: bool = False,
        num_threads: int | None = None,
    ) -> None:
        self.source = source
        self.name = name or source
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self.device)
        if num_threads is not None and self.device.type == "cpu":
            torch.set_num_threads(num_threads)
        location = Path(source).expanduser() if looks_like_path(source) else None
        if location is not None and not location.is_dir():
            raise FileNotFoundError(
                f"model folder {str(location)!r} does not exist: pass an existing local "
                "folder as hf:/path/to/folder, or a hub repo id as hf:owner/name"
            )
        target = str(location) if location is not None else source
        try:
            self.conventions = load_conventions(target, trust_remote_code=trust_remote_code)
            self.processor = load_processor(target, trust_remote_code=trust_remote_code,
                                            processor_kwargs=self.conventions.processor_kwargs)
            self._check_chat_template(target)
            self.model = AutoModelForImageTextToText.from_pretrained(
                target, dtype=self.dtype, trust_remote_code=trust_remote_code
            )
        except OSError as e:
            hint = (
                "Is the folder a complete save_pretrained() output?"
                if location is not None
                else "Pass a local model folder with hf:/path/to/folder, or download it "
                f"first (e.g. `hf download {source}`)."
            )
            raise OSError(f"could not load model {source!r}: {e}\n{hint}") from e
        self.model.to(self.device).eval()
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._folder = location

    def _check_chat_template(self, target: str) -> None:
        """Refuse a processor without a chat template where the family needs one: prompts could not be rendered."""
        if self.conventions.chat_template and not getattr(self.processor, "chat_template", None):
            raise ValueError(
                f"the processor in {target!r} has no chat_template. Add a chat_template.jinja "
                "(or a chat_template entry in processor_config.json) to that folder, e.g. "
                "copy it from the base model's repository."
            )

    @cached_property
    def identity(self) -> str:
        """The model's name plus a content hash (local folder) or commit (hub id), and the family's conventions."""
        return hf_identity(str(self._folder) if self._folder is not None else self.source, self.name)

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer all requests in one left-padded, greedy `generate` call."""
        if not requests:
            return []
        start = time.perf_counter()
        inputs = model_inputs(self.processor, requests, self.conventions).to(self.device, dtype=self.dtype)
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                do_sample=False,
                max_new_tokens=max(r.max_new_tokens for r in requests),
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        answers = self.processor.batch_decode(new_tokens, skip_special_tokens=True)
        latency = (time.perf_counter() - start) / len(requests)
        return [Response(text=a.strip(), latency_s=latency) for a in answers]
