"""Where a worker runs: one xdist worker per GPU (or group of GPUs), bound through its environment.

The binding lives in the worker's spec (`popen//env:CUDA_VISIBLE_DEVICES=…`), so a worker that
xdist restarts after a crash comes back on the same GPU. Nothing here imports torch.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_GPU_LIST = re.compile(r"^\d+(,\d+)*$")


class GpuSpecError(ValueError):
    """An unusable --mllm-gpus / --mllm-gpus-per-worker / -n combination."""


def visible_gpus() -> list[str]:
    """GPU indices this process may use: CUDA_VISIBLE_DEVICES if set, else the driver's list."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [g.strip() for g in visible.split(",") if g.strip() and g.strip() != "-1"]
    driver = Path("/proc/driver/nvidia/gpus")
    count = len(list(driver.iterdir())) if driver.is_dir() else 0
    return [str(i) for i in range(count)]


def parse_gpu_list(text: str) -> list[str]:
    """"0,1,3" → ["0", "1", "3"]; anything else is a GpuSpecError naming the option."""
    text = text.replace(" ", "")
    if not _GPU_LIST.match(text):
        raise GpuSpecError(f"invalid --mllm-gpus {text!r}: expected GPU indices separated by commas, e.g. 0,1,2,3")
    gpus = text.split(",")
    if len(set(gpus)) != len(gpus):
        raise GpuSpecError(f"invalid --mllm-gpus {text!r}: a GPU is listed twice")
    return gpus


def gpu_groups(gpus: list[str], per_worker: int) -> list[str]:
    """Consecutive groups of `per_worker` GPUs, one group per worker ("0,1", "2,3")."""
    if per_worker < 1:
        raise GpuSpecError(f"--mllm-gpus-per-worker must be at least 1, got {per_worker}")
    if len(gpus) % per_worker:
        raise GpuSpecError(f"{len(gpus)} GPU(s) ({','.join(gpus)}) do not split into groups of "
                           f"--mllm-gpus-per-worker={per_worker}")
    return [",".join(gpus[i:i + per_worker]) for i in range(0, len(gpus), per_worker)]


def worker_specs(groups: list[str], workers: int) -> list[str]:
    """xdist worker specs binding worker k to GPU group k."""
    if workers > len(groups):
        raise GpuSpecError(f"-n {workers} asks for more workers than GPU groups ({len(groups)}: "
                           f"{' | '.join(groups)}); use -n {len(groups)} or -n auto")
    return [f"popen//env:CUDA_VISIBLE_DEVICES={group}" for group in groups[:workers]]


def configured_groups(listed: str | None, per_worker: int) -> list[str]:
    """GPU groups for workers: from --mllm-gpus, else every visible GPU (none on a CPU machine)."""
    gpus = parse_gpu_list(listed) if listed else visible_gpus()
    return gpu_groups(gpus, per_worker) if gpus else []
