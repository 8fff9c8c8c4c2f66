"""`--mllm-model-args=key=value,…`: loading arguments for a transformers model and its processor.

Written as lmms-eval's `--model_args` are (`revision=main,attn_implementation=sdpa,max_pixels=802816`).
A value is JSON where it parses as JSON (numbers, true/false, `{"0": "20GiB", "cpu": "60GiB"}`), else
text; commas inside brackets, braces or quotes do not split. Keys that `from_pretrained` takes for the
model (`LOADING_KEYS`) go there; every other key is a processor setting, checked against what the
model's processor accepts once it is loaded (`check_processor_keys`). Nothing here imports torch.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# from_pretrained arguments for the model, with what each value must be
LOADING_KEYS: dict[str, str] = {
    "revision": "text: a branch, tag or commit of a hub repository",
    "attn_implementation": "text: eager, sdpa, flash_attention_2, …",
    "dtype": "text: auto, bf16, fp16 or fp32 (as --mllm-dtype)",
    "device_map": "auto, balanced, balanced_low_0, sequential, or a {module: device} mapping",
    "max_memory": "a {device: size} mapping, e.g. {\"0\": \"20GiB\", \"1\": \"20GiB\", \"cpu\": \"60GiB\"}",
    "offload_folder": "text: a folder for weights that fit in no device's max_memory",
    "quantization_config": "a mapping with quant_method, e.g. {\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}",
    "load_in_4bit": "true or false (bitsandbytes)",
    "load_in_8bit": "true or false (bitsandbytes)",
    "low_cpu_mem_usage": "true or false",
    "subfolder": "text: the model's folder inside the repository",
    "variant": "text: a weights variant such as fp16",
    "use_safetensors": "true or false",
}
# keys whose value changes the answers (part of the cache key); the others only place the weights
ANSWER_KEYS = frozenset({"revision", "attn_implementation", "dtype", "quantization_config", "load_in_4bit",
                         "load_in_8bit", "subfolder", "variant"})
DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


class ModelArgsError(ValueError):
    """An unusable --mllm-model-args value; the message names the key and the fix."""


@dataclass(frozen=True)
class ModelArgs:
    """The model's `from_pretrained` arguments and its processor's settings, kept apart."""

    loading: Mapping[str, Any] = field(default_factory=dict)
    processor: Mapping[str, Any] = field(default_factory=dict)

    @property
    def answer_settings(self) -> dict[str, Any]:
        """What changes the model's answers, for the cache key and the results' settings."""
        settings = {k: v for k, v in self.loading.items() if k in ANSWER_KEYS}
        return {**settings, **self.processor}

    def __bool__(self) -> bool:
        return bool(self.loading or self.processor)


def split_pairs(text: str) -> list[str]:
    """`a=1,b={"x": 1, "y": 2}` → ["a=1", 'b={"x": 1, "y": 2}']: commas inside brackets or quotes stay."""
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _value(key: str, text: str, source: str) -> Any:
    """The value of `key=text`: its JSON value, else the text; a value JSON cannot hold in memory (thousands
    of nested brackets, a number of more digits than Python converts) is a ModelArgsError naming the key."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ModelArgsError(f"{source}: the value of {key!r} is nested too deeply to read (thousands of brackets); "
                             "give a flat value") from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # Python's limit on the digits of an integer
            raise ModelArgsError(f"{source}: the value of {key!r} holds a number of more than "
                                 f"{sys.get_int_max_str_digits()} digits; give a smaller number") from None
        return text


def parse_model_args(texts: Iterable[str], source: str = "--mllm-model-args") -> ModelArgs:
    """Every `key=value` of `texts` (each comma-separated), checked for form; a later key wins."""
    values: dict[str, Any] = {}
    for text in texts:
        for pair in split_pairs(text):
            key, sep, raw = pair.partition("=")
            key = key.strip()
            if not sep or not key or not key.isidentifier():
                raise ModelArgsError(f"{source}: {pair[:80]!r} is not key=value (e.g. {source}=revision=main,"
                                     "max_pixels=802816)")
            values[key] = _value(key, raw.strip(), source)
    for forbidden, instead in (("trust_remote_code", "--mllm-trust-remote-code"), ("device", "--mllm-device")):
        if forbidden in values:
            raise ModelArgsError(f"{source}: {forbidden!r} is set by {instead}, not here")
    loading = {k: v for k, v in values.items() if k in LOADING_KEYS}
    for key, value in loading.items():
        _check_loading_value(key, value, source)
    return ModelArgs(loading=loading, processor={k: v for k, v in values.items() if k not in LOADING_KEYS})


def _check_loading_value(key: str, value: Any, source: str) -> None:
    wanted = LOADING_KEYS[key]
    if key == "device_map":
        ok = value in DEVICE_MAPS or (isinstance(value, dict) and bool(value))
    elif key in ("max_memory", "quantization_config"):
        ok = isinstance(value, dict) and bool(value)
    elif wanted.startswith("true or false"):
        ok = isinstance(value, bool)
    else:
        ok = isinstance(value, str) and bool(value)
    if not ok:
        raise ModelArgsError(f"{source}: {key}={json.dumps(value)[:80]} is not {wanted}")
    if key == "max_memory":
        for device, size in value.items():
            if not _is_size(size):
                raise ModelArgsError(f"{source}: max_memory[{json.dumps(device)}]={json.dumps(size)[:40]} is not a size: "
                                     "give a whole number of bytes (0 or more) or a number with a unit, GiB, MiB, KiB, "
                                     'GB, MB or KB, e.g. {"0": "20GiB", "cpu": "60GiB"}')


_SIZE = re.compile(r"(?i)\s*\d+(?:\.\d*)?\s*(?:gib|mib|kib|gb|mb|kb)\s*")


def _is_size(size: Any) -> bool:
    """A size accelerate reads for max_memory: bytes (an integer, 0 or more) or "<number><unit>"."""
    if isinstance(size, bool):
        return False
    if isinstance(size, int):
        return size >= 0
    return isinstance(size, str) and _SIZE.fullmatch(size) is not None


def max_memory_map(value: Mapping[str, Any]) -> dict[int | str, Any]:
    """accelerate's form of max_memory: GPU indices as integers ("0" → 0), "cpu" and "disk" as they are."""
    return {int(k) if str(k).isdigit() else str(k): v for k, v in value.items()}


def check_processor_keys(keys: Iterable[str], accepted: Iterable[str], processor_name: str,
                         source: str = "--mllm-model-args") -> None:
    """Refuse a key that is neither a loading argument nor a setting the processor accepts."""
    accepted = set(accepted)
    for key in keys:
        if key in accepted:
            continue
        close = difflib.get_close_matches(key, [*accepted, *LOADING_KEYS], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelArgsError(f"{source}: {key!r} is neither a loading argument nor a setting of {processor_name}"
                             f"{hint} (loading arguments: {', '.join(LOADING_KEYS)})")
