"""Family conventions and processors on the tiny family models (models/tiny_families.py): no video
part needed, one BOS where the chat template writes it, PaliGemma's prefix prompt, a system turn
and image placement as data, and the identity that keys cached answers."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from PIL import Image  # noqa: E402
from transformers import AutoProcessor, LlavaProcessor  # noqa: E402
from transformers.utils import is_torchvision_available  # noqa: E402

from pytest_mllm.models import families  # noqa: E402
from pytest_mllm.models.families import DEFAULT, FAMILIES, Conventions, conventions_for, folder_model_type  # noqa: E402
from pytest_mllm.models.hf import HFModel  # noqa: E402
from pytest_mllm.models.hf_inputs import image_only, load_processor, model_inputs  # noqa: E402
from pytest_mllm.models.identity import hf_identity  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402

WITH_VIDEO = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl", "llava-onevision", "smolvlm", "internvl"]
BOS_IN_TEMPLATE = ["idefics3", "smolvlm", "gemma3", "mllama"]  # the chat template writes the BOS itself


def _request(prompt: str, images: int = 1) -> Request:
    sample = Sample(id="s", benchmark="unit", task="unit", question="", answer="")
    return Request(sample=sample, prompt=prompt, images=[Image.new("RGB", (40, 30), "red")] * images,
                   max_new_tokens=3)


@pytest.mark.parametrize("family", WITH_VIDEO)
def test_processors_load_without_their_video_part(family_folders: dict[str, Path], family: str) -> None:
    folder = family_folders[family]
    if not is_torchvision_available():
        with pytest.raises(OSError, match="video processor"):  # transformers' own loading needs torchvision for it
            AutoProcessor.from_pretrained(folder)
    processor = load_processor(str(folder))
    assert "video_processor" not in processor.get_attributes()
    assert type(processor).__name__ == type(processor).__mro__[1].__name__  # the family's class, its name
    with pytest.raises(AttributeError, match="without its video part"):
        processor.video_processor.merge_size  # noqa: B018


def test_a_processor_without_video_is_left_as_it_is() -> None:
    assert image_only(LlavaProcessor) is LlavaProcessor


@pytest.mark.parametrize("family", BOS_IN_TEMPLATE)
def test_one_bos_where_the_template_writes_it(family_folders: dict[str, Path], family: str) -> None:
    folder = family_folders[family]
    processor = load_processor(str(folder))
    bos = processor.tokenizer.bos_token_id
    rendered = processor.apply_chat_template([[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]],
                                             add_generation_prompt=True)
    assert rendered[0].startswith(processor.tokenizer.bos_token)  # the template writes it…
    inputs = model_inputs(processor, [_request("Is it red?"), _request("What colour is the shape? " * 3)],
                          conventions_for(folder_model_type(folder)))
    for row, mask in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist()):
        assert [t for t, m in zip(row, mask) if m].count(bos) == 1  # …and the tokenizer adds no second one


def test_paligemma_is_prompted_with_its_prefix(family_folders: dict[str, Path]) -> None:
    folder = family_folders["paligemma"]
    model = HFModel(str(folder), device="cpu")  # no chat template, and none needed
    assert not model.processor.chat_template and model.conventions.prompt_prefix == "answer en "
    inputs = model_inputs(model.processor, [_request("what colour?")], model.conventions)
    text = model.processor.tokenizer.decode(inputs["input_ids"][0], skip_special_tokens=True)
    assert text == "answer en what colour?\n"
    assert len(model.generate([_request("what colour?"), _request("what shape?", images=2)])) == 2


def test_a_family_that_needs_a_chat_template_still_gets_the_hint(family_folders: dict[str, Path],
                                                                  tmp_path: Path) -> None:
    folder = Path(shutil.copytree(family_folders["gemma3"], tmp_path / "gemma3"))
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match="no chat_template"):
        HFModel(str(folder), device="cpu")


def test_system_prompt_and_image_placement_are_data(family_folders: dict[str, Path]) -> None:
    folder = family_folders["qwen2-vl"]
    processor = load_processor(str(folder))
    decode = processor.tokenizer.decode

    def rendered(conventions: Conventions) -> str:
        return decode(model_inputs(processor, [_request("Is it red?")], conventions)["input_ids"][0])

    default = rendered(DEFAULT)
    assert default.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")  # the template's own
    assert default.index("<|vision_start|>") < default.index("Is it red?")
    assert rendered(Conventions(system_prompt="Be brief.")).startswith("<|im_start|>system\nBe brief.<|im_end|>")
    after = rendered(Conventions(images_before_text=False))
    assert after.index("Is it red?") < after.index("<|vision_start|>")


def test_every_family_has_its_conventions_and_their_source(family_folders: dict[str, Path]) -> None:
    for folder in family_folders.values():
        assert folder_model_type(folder) in FAMILIES
    assert all(c.source for c in FAMILIES.values())
    assert conventions_for("not-a-family") == DEFAULT


def test_the_identity_holds_the_conventions_that_change_answers(
        family_folders: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    paligemma, original = str(family_folders["paligemma"]), FAMILIES["paligemma"]
    first = hf_identity(paligemma, "p")
    assert "+conventions:" in first and "+conventions:" not in hf_identity(str(family_folders["gemma3"]), "g")
    monkeypatch.setitem(families.FAMILIES, "paligemma",
                        dataclasses.replace(original, prompt_prefix="answer fr "))
    assert hf_identity(paligemma, "p") != first
    monkeypatch.setitem(families.FAMILIES, "paligemma",
                        dataclasses.replace(original, source="another page, same settings"))
    assert hf_identity(paligemma, "p") == first  # where a setting comes from changes no answer


def test_a_family_build_is_deterministic_and_small(family_folders: dict[str, Path], tmp_path: Path) -> None:
    from pytest_mllm.models.tiny_families import ensure_tiny_family

    built = family_folders["qwen2-vl"]
    again = ensure_tiny_family("qwen2-vl", tmp_path / "again")
    names = sorted(p.name for p in built.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (again / name).read_bytes() == (built / name).read_bytes(), name
    assert all(sum(p.stat().st_size for p in f.iterdir()) < 1_000_000 for f in family_folders.values())
