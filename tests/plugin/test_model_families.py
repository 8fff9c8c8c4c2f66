"""Every model family of the alias table through the plugin, end to end, on the tiny random models
of `models/tiny_families.py`: the bundled `shapes` benchmark (one image per question) and MMMU's
fixture (up to five images per question).

Each family's answers in the run (batch 8) equal its answers one request at a time and those of its documented
transformers usage (tests/plugin/family_reference.py: `processor.apply_chat_template(...,
tokenize=True, return_dict=True)`, or PaliGemma's `processor(text=..., images=...)`), run on the
same weights and inputs without pytest-mllm's model code. No torchvision is installed here, so
every processor with a video part is built without it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("pyarrow")

from family_reference import reference_answers  # noqa: E402

from pytest_mllm.engine.images import load_image  # noqa: E402
from pytest_mllm.engine.spec import find_spec, load_spec  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402
from pytest_mllm.models.families import conventions_for, folder_model_type  # noqa: E402
from pytest_mllm.models.hf import HFModel  # noqa: E402
from pytest_mllm.models.tiny_families import FAMILY_BUILDERS  # noqa: E402

MMMU = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu" / "data"
MAX_NEW_TOKENS = 6
SELECTION = "(img_000 and (existence or choice)) or Art"  # 3 shapes questions, 4 MMMU ones of 1 to 5 images


def _run(pytester: pytest.Pytester, folder: Path) -> list[dict]:
    """The run's records, at the default batch size (8): one batch of MMMU's questions, one of shapes'."""
    out = pytester.path / "out.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--mllm=hf:{folder}", "--mllm-bench=shapes", "--mllm-bench=mmmu",
        f"--mllm-data=mmmu={MMMU}", "-k", SELECTION,
        f"--mllm-max-new-tokens={MAX_NEW_TOKENS}", "--mllm-cache=off", f"--mllm-json={out}")
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), result.stdout.str()
    records = json.loads(out.read_text())["records"]
    assert [r["status"] for r in records if r["status"] == "error"] == [], records
    return records


def _inputs(records: list[dict]) -> list[tuple[str, list]]:
    """(prompt, images) of each record, read from the benchmarks' files as the run read them."""
    samples = {}
    for name, root in (("shapes", None), ("mmmu", str(MMMU))):
        spec = load_spec(find_spec(name))
        samples.update({(name, s.id): s for s in load_samples(spec, spec.resolve_data_root(root))})
    return [(r["prompt"], [load_image(ref) for ref in samples[r["benchmark"], r["id"]].images]) for r in records]


@pytest.mark.parametrize("family", [*FAMILY_BUILDERS, "llava"])
def test_family_answers_equal_batch_one_and_its_documented_usage(
        pytester: pytest.Pytester, family_folders: dict[str, Path], family: str) -> None:
    folder = family_folders[family]
    records = _run(pytester, folder)
    inputs = _inputs(records)
    assert len(records) == 7 and max(len(images) for _, images in inputs) == 5  # a five-image question ran
    answers = [r["response"] for r in records]
    model = HFModel(str(folder), device="cpu", num_threads=1)  # what the plugin runs at --mllm-batch-size=1
    sample = Sample(id="one", benchmark="unit", task="unit", question="", answer="")
    alone = [model.generate([Request(sample=sample, prompt=prompt, images=images, max_new_tokens=MAX_NEW_TOKENS)])[0]
             for prompt, images in inputs]
    assert [r.text for r in alone] == answers
    prefix = conventions_for(folder_model_type(folder)).prompt_prefix
    assert reference_answers(folder, inputs, max_new_tokens=MAX_NEW_TOKENS, prefix=prefix) == answers
