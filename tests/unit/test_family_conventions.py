"""Family conventions and processors on the tiny family models (models/tiny_families.py): no video
part needed whatever its place among the processor's parts, one BOS where the chat template writes
it, prompt formats from the model cards, a system turn and image placement as data, refusals, and
the identity that keys cached answers."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from PIL import Image  # noqa: E402
from transformers import AutoProcessor, LlavaProcessor  # noqa: E402
from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES  # noqa: E402

from pytest_mllm.models import families  # noqa: E402
from pytest_mllm.models.families import DEFAULT, FAMILIES, Conventions, conventions_for, folder_model_type  # noqa: E402
from pytest_mllm.models.hf import HFModel  # noqa: E402
from pytest_mllm.models.hf_inputs import image_only, load_processor, model_inputs  # noqa: E402
from pytest_mllm.models.identity import hf_identity  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402

WITH_VIDEO = ["qwen2_vl", "llava_onevision", "smolvlm", "video_llava", "minicpmv4_6"]  # video_llava, minicpmv4_6:
# the video processor before the tokenizer
BOS_IN_TEMPLATE = ["idefics3", "smolvlm", "gemma3", "mllama"]  # the chat template writes the BOS itself


def _request(prompt: str, images: int = 1) -> Request:
    sample = Sample(id="s", benchmark="unit", task="unit", question="", answer="")
    return Request(sample=sample, prompt=prompt, images=[Image.new("RGB", (40, 30), "red")] * images,
                   max_new_tokens=3)


@pytest.mark.parametrize("family", WITH_VIDEO)
def test_processors_load_without_their_video_part(family_folder: Callable[[str], Path], family: str) -> None:
    folder = family_folder(family)
    with pytest.raises(OSError, match="video processor"):  # transformers' own loading needs one (and torchvision)
        AutoProcessor.from_pretrained(folder)
    processor = load_processor(str(folder))
    assert "video_processor" not in processor.get_attributes()
    assert type(processor).__name__ == type(processor).__mro__[1].__name__  # the family's class, its name
    assert "Tokenizer" in type(processor.tokenizer).__name__  # each part in its place, whatever the order
    assert "ImageProcessor" in type(processor.image_processor).__name__
    with pytest.raises(AttributeError, match="without its video part"):
        processor.video_processor.merge_size  # noqa: B018


def test_a_processor_without_video_is_left_as_it_is() -> None:
    assert image_only(LlavaProcessor) is LlavaProcessor


@pytest.mark.parametrize("family", BOS_IN_TEMPLATE)
def test_one_bos_where_the_template_writes_it(family_folder: Callable[[str], Path], family: str) -> None:
    folder = family_folder(family)
    processor = load_processor(str(folder))
    bos = processor.tokenizer.bos_token_id
    rendered = processor.apply_chat_template([[{"role": "user", "content": [{"type": "text", "text": "hi"}]}]],
                                             add_generation_prompt=True)
    assert rendered[0].startswith(processor.tokenizer.bos_token)  # the template writes it…
    inputs = model_inputs(processor, [_request("Is it red?"), _request("What colour is the shape? " * 3)],
                          conventions_for(folder_model_type(folder)))
    for row, mask in zip(inputs["input_ids"].tolist(), inputs["attention_mask"].tolist()):
        assert [t for t, m in zip(row, mask) if m].count(bos) == 1  # …and the tokenizer adds no second one


def test_paligemma_is_prompted_with_its_prefix(family_folder: Callable[[str], Path]) -> None:
    folder = family_folder("paligemma")
    model = HFModel(str(folder), device="cpu")  # no chat template, and none needed
    assert not model.processor.chat_template and model.conventions.prompt_format == "answer en {prompt}"
    inputs = model_inputs(model.processor, [_request("what colour?")], model.conventions)
    text = model.processor.tokenizer.decode(inputs["input_ids"][0], skip_special_tokens=True)
    assert text == "answer en what colour?\n"
    assert len(model.generate([_request("what colour?"), _request("what shape?", images=2)])) == 2


def test_a_family_that_needs_a_chat_template_still_gets_the_hint(family_folder: Callable[[str], Path],
                                                                  tmp_path: Path) -> None:
    folder = Path(shutil.copytree(family_folder("gemma3"), tmp_path / "gemma3"))
    (folder / "chat_template.jinja").unlink()
    with pytest.raises(ValueError, match="no chat_template"):
        HFModel(str(folder), device="cpu")


def test_system_prompt_and_image_placement_are_data(family_folder: Callable[[str], Path]) -> None:
    folder = family_folder("qwen2_vl")
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


def test_every_convention_names_its_source_and_every_family_its_model_type() -> None:
    from pytest_mllm.models.tiny_families import FAMILY_BUILDERS

    assert all(c.source for c in FAMILIES.values())
    assert conventions_for("not-a-family") == DEFAULT
    mapping = set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES)
    assert set(FAMILY_BUILDERS) <= mapping and set(FAMILIES) <= mapping  # keyed by the mapping's model_type
    assert not set(FAMILY_BUILDERS) & {t for t, c in FAMILIES.items() if c.refused}  # built or refused, not both


def test_the_tiny_models_carry_their_family(family_folder: Callable[[str], Path]) -> None:
    for model_type in ("paligemma", "blip-2", "florence2", "llava"):
        assert folder_model_type(family_folder(model_type)) == model_type


def test_the_identity_holds_the_conventions_that_change_answers(
        family_folder: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch) -> None:
    paligemma, original = str(family_folder("paligemma")), FAMILIES["paligemma"]
    first = hf_identity(paligemma, "p")
    assert "+conventions:" in first and "+conventions:" not in hf_identity(str(family_folder("gemma3")), "g")
    monkeypatch.setitem(families.FAMILIES, "paligemma",
                        dataclasses.replace(original, prompt_format="answer fr {prompt}"))
    assert hf_identity(paligemma, "p") != first
    monkeypatch.setitem(families.FAMILIES, "paligemma",
                        dataclasses.replace(original, source="another page, same settings", question="the same"))
    assert hf_identity(paligemma, "p") == first  # where a setting comes from changes no answer


def test_a_fingerprint_holds_only_the_settings_that_differ_from_the_default() -> None:
    assert Conventions(chat_template=False).fingerprint() == Conventions(chat_template=False, question="x").fingerprint()
    assert Conventions(stop_tokens=("<a>",)).fingerprint() != Conventions().fingerprint()
    assert Conventions(one_at_a_time=True).fingerprint() != Conventions().fingerprint()


def test_a_family_build_is_deterministic_and_small(family_folder: Callable[[str], Path], tmp_path: Path) -> None:
    from pytest_mllm.models.tiny_families import ensure_tiny_family

    built = family_folder("qwen2_vl")
    again = ensure_tiny_family("qwen2_vl", tmp_path / "again")
    names = sorted(p.name for p in built.iterdir())
    assert names == sorted(p.name for p in again.iterdir())
    for name in names:
        assert (again / name).read_bytes() == (built / name).read_bytes(), name
    for model_type in ("qwen2_vl", "blip-2", "florence2", "idefics", "chameleon"):
        assert sum(p.stat().st_size for p in family_folder(model_type).rglob("*") if p.is_file()) < 2_000_000


@pytest.mark.parametrize("model_type", ["evolla", "shieldgemma2", "pi0"])
def test_a_refused_family_is_refused_before_loading_with_its_reason(tmp_path: Path, model_type: str) -> None:
    from transformers import CONFIG_MAPPING

    from pytest_mllm.models.hf import FamilyRefused
    from pytest_mllm.models.preflight import ModelUnavailable, check_model
    from pytest_mllm.models.ref import ModelRef

    CONFIG_MAPPING[model_type]().save_pretrained(tmp_path)  # a config alone: no weights are needed to refuse
    reason = conventions_for(model_type).refused
    with pytest.raises(ModelUnavailable, match=f"its family \\({model_type}\\) cannot be run on a benchmark: "):
        check_model(ModelRef.parse(f"hf:{tmp_path}"), endpoint=None)  # type: ignore[arg-type]
    with pytest.raises(FamilyRefused) as refused:
        HFModel(str(tmp_path), device="cpu")
    assert reason is not None and reason in str(refused.value)


def test_a_task_prompt_replaces_the_question_and_a_one_image_family_refuses_more(
        family_folder: Callable[[str], Path]) -> None:
    model = HFModel(str(family_folder("florence2")), device="cpu")
    inputs = model_inputs(model.processor, [_request("what colour?")], model.conventions)
    assert "What does the image describe?" in model.processor.tokenizer.decode(inputs["input_ids"][0])  # <CAPTION>
    answers = model.generate([_request("what colour?"), _request("what shape?", images=2)])
    assert answers[0].error is None and answers[0].text  # an encoder-decoder's answer: all it generated
    assert answers[1].error is not None and "takes 1 image per prompt and the sample has 2" in answers[1].error
