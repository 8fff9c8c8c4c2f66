"""GPU lists, groups and worker specs."""

from __future__ import annotations

import pytest

from pytest_mllm.harness.gpus import GpuSpecError, gpu_groups, parse_gpu_list, visible_gpus, worker_specs


def test_gpu_list_and_groups() -> None:
    assert parse_gpu_list("0, 1,3") == ["0", "1", "3"]
    assert gpu_groups(["0", "1", "2", "3"], 2) == ["0,1", "2,3"]
    assert worker_specs(["0,1", "2,3"], 2) == ["popen//env:CUDA_VISIBLE_DEVICES=0,1",
                                               "popen//env:CUDA_VISIBLE_DEVICES=2,3"]


@pytest.mark.parametrize("text", ["0,a", "", "0,,1", "-1", "0,0"])
def test_invalid_gpu_lists_name_the_option(text: str) -> None:
    with pytest.raises(GpuSpecError, match="invalid --mllm-gpus"):
        parse_gpu_list(text)


def test_groups_must_divide_and_workers_must_fit() -> None:
    with pytest.raises(GpuSpecError, match="do not split into groups of --mllm-gpus-per-worker=2"):
        gpu_groups(["0", "1", "2"], 2)
    with pytest.raises(GpuSpecError, match="-n 3 asks for more workers than GPU groups"):
        worker_specs(["0", "1"], 3)


def test_visible_gpus_follow_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5")
    assert visible_gpus() == ["2", "5"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []
