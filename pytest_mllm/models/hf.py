"""`HFModel`: any transformers image-text-to-text model, run with batched greedy decoding.

Imported only when a transformers model is requested: it needs torch and transformers
(the `hf` extra).
"""

from __future__ import annotations

import time
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

import torch
from transformers import AutoModelForImageTextToText

from pytest_mllm.models.hf_inputs import load_conventions, load_processor, model_inputs, too_many_images
from pytest_mllm.models.identity import hf_identity, looks_like_path
from pytest_mllm.models.model_args import ModelArgs, check_processor_keys, max_memory_map
from pytest_mllm.sample import Request, Response, Sample

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


def _placement(loading: dict[str, Any], device: torch.device, gpus_per_worker: int) -> dict[str, Any]:
    """Where the weights go: `device_map` (with max_memory, offload_folder) when asked for, or "auto"
    when the worker has several GPUs (--mllm-gpus-per-worker); empty for one device (moved with `.to`).
    Takes the placement keys out of `loading`; bitsandbytes shorthands become a quantization config."""
    placement = {key: loading.pop(key) for key in ("device_map", "max_memory", "offload_folder") if key in loading}
    if "max_memory" in placement:
        placement["max_memory"] = max_memory_map(placement["max_memory"])
    if "device_map" not in placement and device.type == "cuda" and gpus_per_worker > 1:
        placement["device_map"] = "auto"
    if ("max_memory" in placement or "offload_folder" in placement) and "device_map" not in placement:
        placement["device_map"] = "auto"
    bits = {key: loading.pop(key) for key in ("load_in_4bit", "load_in_8bit") if key in loading}
    if any(bits.values()):
        from transformers import BitsAndBytesConfig

        loading["quantization_config"] = BitsAndBytesConfig(**bits)
    return placement


def execution_device(model: Any) -> torch.device:
    """The device an accelerate-placed model takes its inputs on: the first accelerator in its device
    map, else the CPU (weights offloaded to disk run on the CPU)."""
    for where in getattr(model, "hf_device_map", {}).values():
        if where not in ("cpu", "disk"):
            return torch.device(where) if isinstance(where, str) else torch.device("cuda", where)
    return torch.device("cpu")


def accepted_processor_settings(processor: Any) -> set[str]:
    """Settings a processor takes at `from_pretrained`: its own constructor's and its image processor's."""
    import inspect

    accepted = set(inspect.signature(type(processor).__init__).parameters) - {"self", "args", "kwargs"}
    image_processor = getattr(processor, "image_processor", None)
    if image_processor is not None:
        accepted |= set(image_processor.to_dict())
        for klass in getattr(type(image_processor), "valid_kwargs", dict).__mro__:
            accepted |= set(getattr(klass, "__annotations__", {}))
    return accepted


PROBE_TOKENS = 16


class FamilyRefused(ValueError):
    """The checkpoint's family is one pytest-mllm does not run (models/families.py says why)."""


class ModelAnswersNothing(RuntimeError):
    """The model loaded but fails, or answers '', on a first test question."""


def is_encoder_decoder(config: Any) -> bool:
    """True when `generate` returns decoder tokens only: the model, or the language model inside it, is an
    encoder-decoder."""
    if getattr(config, "is_encoder_decoder", False):
        return True
    text = getattr(config, "text_config", None)
    return bool(getattr(text, "is_encoder_decoder", False))


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
        model_args: ModelArgs | None = None,
        gpus_per_worker: int = 1,
    ) -> None:
        self.source = source
        self.name = name or source
        self.model_args = model_args or ModelArgs()
        loading = dict(self.model_args.loading)
        self.device = resolve_device(device)
        self.dtype = resolve_dtype(loading.pop("dtype", dtype), self.device)
        if num_threads is not None and self.device.type == "cpu":
            torch.set_num_threads(num_threads)
        location = Path(source).expanduser() if looks_like_path(source) else None
        if location is not None and not location.is_dir():
            raise FileNotFoundError(
                f"model folder {str(location)!r} does not exist: pass an existing local "
                "folder as hf:/path/to/folder, or a hub repo id as hf:owner/name"
            )
        target = str(location) if location is not None else source
        placement = _placement(loading, self.device, gpus_per_worker)
        try:
            self.conventions = load_conventions(target, trust_remote_code=trust_remote_code)
            if self.conventions.refused:
                raise FamilyRefused(f"{source!r} cannot be run on a benchmark: {self.conventions.refused}")
            files = {k: v for k, v in loading.items() if k in ("revision", "subfolder")}
            self.processor = load_processor(target, trust_remote_code=trust_remote_code, processor_kwargs={
                **self.conventions.processor_kwargs, **files, **self.model_args.processor})
            check_processor_keys(self.model_args.processor, accepted_processor_settings(self.processor),
                                 type(self.processor).__name__)
            self._check_chat_template(target)
            self.model = AutoModelForImageTextToText.from_pretrained(
                target, dtype=self.dtype, trust_remote_code=trust_remote_code, **loading, **placement
            )
        except OSError as e:
            hint = (
                "Is the folder a complete save_pretrained() output?"
                if location is not None
                else "Pass a local model folder with hf:/path/to/folder, or download it "
                f"first (e.g. `hf download {source}`)."
            )
            raise OSError(f"could not load model {source!r}: {e}\n{hint}") from e
        except Exception as e:
            if type(e).__name__ != "SafetensorError":
                raise
            where = repr(source) if target == source else f"{source!r} ({target})"
            raise OSError(f"could not read the weights of model {where}: {e}; a weights file is truncated or "
                          "corrupt: copy or download the model again") from None
        if "device_map" in placement:  # accelerate placed the weights: inputs go where the first layers are
            self.device = execution_device(self.model)
        else:
            self.model.to(self.device)
        self.model.eval()
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._folder = location
        self._generation = self._generation_arguments()
        self._probe()

    def _generation_arguments(self) -> dict[str, Any]:
        """`generate`'s arguments beyond greedy decoding: the family's extra stop tokens and banned tokens."""
        if self.model.generation_config.pad_token_id is None:  # some families' generate() passes it on itself
            self.model.generation_config.pad_token_id = self.tokenizer.pad_token_id
        arguments: dict[str, Any] = {}
        token_id = self.tokenizer.convert_tokens_to_ids
        if self.conventions.stop_tokens:
            eos = self.model.generation_config.eos_token_id
            eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
            arguments["eos_token_id"] = eos + [token_id(t) for t in self.conventions.stop_tokens]
        if self.conventions.banned_tokens:
            arguments["bad_words_ids"] = [[token_id(t)] for t in self.conventions.banned_tokens]
        return arguments

    def _probe(self) -> None:
        """Ask one question about a plain picture before any sample: a model that crashes on it, or answers
        nothing, would do the same on every sample, so it fails here, once, as a load failure."""
        from PIL import Image

        sample = Sample(id="probe", benchmark="load check", task="", question="", answer="")
        picture = Image.new("RGB", (64, 48), (200, 40, 40))
        request = Request(sample, "What colour is this picture? Describe it.", [picture], max_new_tokens=PROBE_TOKENS)
        try:
            response = self.generate([request])[0]
        except Exception as exc:
            raise ModelAnswersNothing(f"{self.name!r} loaded but failed on a first test question "
                                      f"({type(exc).__name__}: {exc}); it would fail the same way on every sample") from exc
        if not response.text.strip():
            raise ModelAnswersNothing(
                f"{self.name!r} loaded but answered '' to a first test question ({PROBE_TOKENS} new tokens allowed): "
                "it would answer nothing to every sample, so no score is computed. Its processor or its generation "
                "settings (generation_config.json) do not match what this family's documented usage expects")

    def _check_chat_template(self, target: str) -> None:
        """Refuse a processor without a chat template where the family needs one: prompts could not be rendered."""
        if self.conventions.chat_template and not getattr(self.processor, "chat_template", None):
            raise ValueError(
                f"the processor in {target!r} has no chat_template. Add a chat_template.jinja "
                "(or a chat_template entry in processor_config.json) to that folder, e.g. "
                "copy it from the base model's repository."
            )

    @property
    def placement(self) -> str:
        """Where the weights are: one device, or how many modules accelerate put on each."""
        device_map = getattr(self.model, "hf_device_map", None)
        if not device_map:
            return str(self.device)
        counts: dict[str, int] = {}
        for where in device_map.values():
            name = f"cuda:{where}" if isinstance(where, int) else str(where)
            counts[name] = counts.get(name, 0) + 1
        return ", ".join(f"{name}: {n} module{'s' if n != 1 else ''}" for name, n in counts.items())

    @cached_property
    def identity(self) -> str:
        """The model's name plus a content hash (local folder) or commit (hub id), and the family's conventions."""
        return hf_identity(str(self._folder) if self._folder is not None else self.source, self.name,
                           self.model_args.loading.get("revision"))

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Answer all requests in one left-padded, greedy `generate` call; a request with more images than
        the family takes is answered with an error instead."""
        refusals = [too_many_images(r, self.conventions) for r in requests]
        answerable = [r for r, why in zip(requests, refusals) if why is None]
        if self.conventions.one_at_a_time:
            answers = iter([a for r in answerable for a in self._answer([r])])
        else:
            answers = iter(self._answer(answerable) if answerable else [])
        return [Response(text="", error=why) if why else next(answers) for why in refusals]

    def _answer(self, requests: Sequence[Request]) -> list[Response]:
        start = time.perf_counter()
        inputs = model_inputs(self.processor, requests, self.conventions).to(self.device, dtype=self.dtype)
        with torch.inference_mode():
            output = self.model.generate(**inputs, do_sample=False, max_new_tokens=max(r.max_new_tokens for r in requests),
                                         **self._generation)
        answers = self.processor.batch_decode(self._new_tokens(output, inputs), skip_special_tokens=True)
        latency = (time.perf_counter() - start) / len(requests)
        return [Response(text=a.strip(), latency_s=latency) for a in answers]

    def _new_tokens(self, output: torch.Tensor, inputs: Any) -> torch.Tensor:
        """What `generate` added: a decoder-only model returns the prompt and then its answer; an
        encoder-decoder (T5Gemma 2, Florence-2, BLIP-2 with Flan-T5), or a model given no text, only the answer."""
        prompt = inputs.get("input_ids")
        if prompt is None or is_encoder_decoder(self.model.config):
            return output
        length = prompt.shape[1]
        if output.shape[1] < length or not torch.equal(output[:, :length], prompt.to(output.device)):
            raise RuntimeError(f"{self.name!r}: generate() returned sequences that do not begin with the prompt, so "
                               "the answer cannot be told apart from it; this family's output is not supported")
        return output[:, length:]
