"""The tiny offline LLaVA and `HFModel` (needs torch + transformers: the `hf` extra)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from PIL import Image  # noqa: E402

from pytest_mllm.models import tiny  # noqa: E402
from pytest_mllm.models.hf import HFModel, resolve_dtype  # noqa: E402
from pytest_mllm.models.tiny import (  # noqa: E402
    TINY_LLAVA_VERSION,
    default_tiny_llava_dir,
    ensure_tiny_llava,
    is_complete,
)
from pytest_mllm.sample import Request, Sample  # noqa: E402

COLORS = ["red", "blue", "green", "yellow"]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tiny LLaVA build shared by the whole session."""
    torch.set_num_threads(1)
    return ensure_tiny_llava(tmp_path_factory.mktemp("tiny") / "tiny-llava")


@pytest.fixture(scope="session")
def tiny_model(tiny_dir: Path) -> HFModel:
    """The tiny LLaVA loaded on CPU."""
    return HFModel(str(tiny_dir), name="tiny", device="cpu")


def _requests(n: int = 4) -> list[Request]:
    """Requests with different prompt lengths and image sizes, so a batch needs padding."""
    requests = []
    for i in range(n):
        color = COLORS[i % len(COLORS)]
        sample = Sample(id=f"s{i}", benchmark="unit", task="shapes", question="q", answer="yes")
        prompt = f"Is there a {color} circle in the image?" + " Answer yes or no." * i
        image = Image.new("RGB", (24 + 9 * i, 40 - 5 * i), color)
        requests.append(Request(sample=sample, prompt=prompt, images=[image], max_new_tokens=6))
    return requests


def test_build_is_deterministic(tiny_dir: Path, tmp_path: Path) -> None:
    again = ensure_tiny_llava(tmp_path / "again")
    assert (again / "model.safetensors").read_bytes() == (tiny_dir / "model.safetensors").read_bytes()
    names = sorted(p.name for p in tiny_dir.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (again / name).read_bytes() == (tiny_dir / name).read_bytes(), name


def test_build_is_small_and_complete(tiny_dir: Path) -> None:
    assert is_complete(tiny_dir)
    assert sum(p.stat().st_size for p in tiny_dir.iterdir()) < 2_000_000
    assert not [p for p in tiny_dir.parent.iterdir() if p.name.startswith(".")]  # no temp left


def test_ensure_does_not_rebuild_a_complete_folder(tiny_dir: Path) -> None:
    weights = tiny_dir / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert ensure_tiny_llava(tiny_dir) == tiny_dir
    assert weights.stat().st_mtime_ns == before


def test_ensure_replaces_an_incomplete_folder(tmp_path: Path) -> None:
    dest = tmp_path / "tiny"
    dest.mkdir()
    (dest / "junk.txt").write_text("half a build")
    assert ensure_tiny_llava(dest) == dest
    assert is_complete(dest)
    assert not (dest / "junk.txt").exists()


def test_losing_a_build_race_uses_the_winner(
    tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dest = tmp_path / "tiny"
    real_build = tiny._build

    def build_while_another_process_finishes(folder: Path) -> None:
        real_build(folder)
        shutil.copytree(tiny_dir, dest)  # the other process renames its build in first
        (dest / "winner").touch()

    monkeypatch.setattr(tiny, "_build", build_while_another_process_finishes)
    assert ensure_tiny_llava(dest) == dest
    assert (dest / "winner").exists() and is_complete(dest)
    assert [p.name for p in tmp_path.iterdir()] == ["tiny"]  # our temp build is gone


def test_tiny_module_imports_without_torch() -> None:
    code = (
        "import sys; sys.modules.update(torch=None, transformers=None, tokenizers=None); "
        "from pytest_mllm.models.tiny import default_tiny_llava_dir; default_tiny_llava_dir()"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_default_dir_respects_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    name = f"tiny-llava-v{TINY_LLAVA_VERSION}"
    monkeypatch.setenv("PYTEST_MLLM_CACHE_DIR", str(tmp_path / "c"))
    assert default_tiny_llava_dir() == tmp_path / "c" / name
    monkeypatch.delenv("PYTEST_MLLM_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_tiny_llava_dir() == tmp_path / "x" / "pytest-mllm" / name
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_tiny_llava_dir() == Path.home() / ".cache" / "pytest-mllm" / name


def test_dtype_names() -> None:
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert resolve_dtype("auto", cpu) == torch.float32
    assert resolve_dtype("auto", cuda) == torch.bfloat16
    assert resolve_dtype("bf16", cpu) == torch.bfloat16
    assert resolve_dtype("float16", cpu) == torch.float16
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("int3", cpu)


def test_generate_returns_one_string_per_request(tiny_model: HFModel) -> None:
    responses = tiny_model.generate(_requests(4))
    assert len(responses) == 4
    assert all(isinstance(r.text, str) for r in responses)
    assert all(r.latency_s > 0 for r in responses)
    assert tiny_model.generate([]) == []


def test_batch_matches_single_requests(tiny_model: HFModel) -> None:
    requests = _requests(4)
    batched = [r.text for r in tiny_model.generate(requests)]
    alone = [tiny_model.generate([r])[0].text for r in requests]
    assert batched == alone
    assert len(set(batched)) > 1  # the answers do depend on the input


def test_generate_without_images(tiny_model: HFModel) -> None:
    sample = Sample(id="t", benchmark="unit", task="text", question="q", answer="A")
    responses = tiny_model.generate([Request(sample=sample, prompt="A or B?", images=[], max_new_tokens=3)])
    assert len(responses) == 1


def test_missing_chat_template_is_explained(tiny_dir: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(tiny_dir, tmp_path / "no-template"))
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match="chat_template") as info:
        HFModel(str(folder), device="cpu")
    assert str(folder) in str(info.value)


def test_missing_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model"
    with pytest.raises(OSError, match="nowhere"):
        HFModel(str(missing), device="cpu")


def test_missing_hub_model_is_explained(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)  # read at import
    with pytest.raises(OSError, match="hf:/path") as info:
        HFModel("pytest-mllm/not-a-model", device="cpu")
    assert "pytest-mllm/not-a-model" in str(info.value)


def test_identity_follows_weights(tiny_dir: Path, tmp_path: Path) -> None:
    folder = Path(shutil.copytree(tiny_dir, tmp_path / "tiny"))
    first = HFModel(str(folder), name="tiny", device="cpu").identity
    assert first.startswith("tiny@")
    assert HFModel(str(folder), name="tiny", device="cpu").identity == first
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0x01  # one bit of one weight, same size
    weights.write_bytes(bytes(data))
    assert HFModel(str(folder), name="tiny", device="cpu").identity != first
