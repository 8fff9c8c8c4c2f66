"""MMMU's Hugging Face release through the parquet loader and benchmarks/mmmu*.yaml: every subject
config read (`config: "*"`), the split chosen, image_1 … image_7 as the sample's images in order,
options from a list's text, prompts with `<image N>` kept, and bad rows as BadSamples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from pytest_mllm.engine.evaluator import render_prompt  # noqa: E402
from pytest_mllm.engine.images import load_image  # noqa: E402
from pytest_mllm.engine.spec import SpecError, find_spec, load_spec  # noqa: E402
from pytest_mllm.loaders import load_samples  # noqa: E402
from pytest_mllm.sample import BadSample, Sample  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu" / "data"
SUBJECTS = ["Accounting", "Art", "Math", "Clinical_Medicine", "History"]  # the card's order


def by_id(samples: list) -> dict[str, Sample]:
    assert all(isinstance(s, Sample) for s in samples), [s for s in samples if isinstance(s, BadSample)]
    return {s.id: s for s in samples}


def test_validation_split_every_subject_as_a_task() -> None:
    spec = load_spec(find_spec("mmmu"))
    samples = load_samples(spec, DATA)
    assert len(samples) == 18 and list(dict.fromkeys(s.task for s in samples)) == SUBJECTS
    found = by_id(samples)
    two = found["Accounting::validation_Accounting_2"]
    assert two.choices[2] == ("C", "$3,000") and two.answer == "C" and two.answer_type == "choice"
    assert [ref.cell for ref in two.images] == [(0, 1, "image_1", -1), (0, 1, "image_2", -1)]
    art = found["Art::validation_Art_1"]
    assert [ref.cell[2] for ref in art.images] == [f"image_{n}" for n in range(1, 6)]  # image_6, image_7 empty
    assert art.choices[0] == ("A", "<image 2>")
    assert load_image(art.images[4]).size == (24, 16)
    listed = found["Math::validation_Math_1"]
    assert listed.answer_type == "open" and listed.choices == () and listed.answer == "['24/7', '3.429']"
    assert spec.group_of("Clinical_Medicine") == "Health_and_Medicine"


def test_dev_split_through_its_own_spec() -> None:
    samples = load_samples(load_spec(find_spec("mmmu_dev")), DATA)
    assert len(samples) == 10 and all(s.id.split("::")[1].startswith("dev_") for s in samples)


def test_prompts_keep_image_placeholders_and_open_questions_take_open_prompt() -> None:
    spec = load_spec(find_spec("mmmu"))
    found = by_id(load_samples(spec, DATA))
    choice, open_question = found["Art::validation_Art_1"], found["Accounting::validation_Accounting_3"]
    assert render_prompt(spec.prompt_template(choice.task, bool(choice.choices)), choice) == (
        "Which painting shares the palette of <image 1>?\nA. <image 2>\nB. <image 3>\nC. <image 4>\nD. <image 5>"
        "\n\nAnswer with the option's letter from the given choices directly.")
    assert render_prompt(spec.prompt_template(open_question.task, False), open_question) == (
        "From <image 1>, what is the total of the ledger in dollars?\n\n"
        "Answer the question using a single word or phrase.")


def test_subfolders_are_the_configs_without_a_card(tmp_path: Path) -> None:
    shutil.copytree(DATA, tmp_path / "mmmu", ignore=shutil.ignore_patterns("README.md"))
    samples = load_samples(load_spec(find_spec("mmmu")), tmp_path / "mmmu")
    assert list(dict.fromkeys(s.task for s in samples)) == sorted(SUBJECTS)


def test_no_configs_at_all_is_a_spec_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SpecError, match="loader_options.config '\\*' needs configs"):
        load_samples(load_spec(find_spec("mmmu")), tmp_path / "empty")


def test_bad_rows_are_bad_samples_naming_file_row_and_field(tmp_path: Path) -> None:
    root = tmp_path / "mmmu"
    shutil.copytree(DATA, root)
    path = root / "History" / "validation-00000-of-00001.parquet"
    table = pq.read_table(path).to_pylist()
    table[0]["image_1"] = None  # no image left in the row
    table[1]["image_1"], table[1]["image_2"] = None, table[1]["image_1"]  # a gap before image_2: skipped
    table[2]["options"] = "['1648', '1713'"  # not a list's text
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(path)), path)
    samples = {s.id: s for s in load_samples(load_spec(find_spec("mmmu")), root)}
    first, second, third = (samples[f"History::validation_History_{n}"] for n in (1, 2, 3))
    assert isinstance(first, BadSample) and first.error.startswith(f"{path}: row 0: fields 'image_1', 'image_2'")
    assert "every image cell is empty" in first.error
    assert isinstance(second, Sample) and [ref.cell[2] for ref in second.images] == ["image_2"]
    assert isinstance(third, BadSample) and f"{path}: row 2: field 'options'" in third.error
    assert sum(isinstance(s, Sample) for s in samples.values()) == 16  # the other rows are kept


def test_open_prompt_placeholders_are_checked(tmp_path: Path) -> None:
    spec = tmp_path / "bench.yaml"
    spec.write_text("name: b\nloader: jsonl\nopen_prompt: '{question} {answer}'\n", encoding="utf-8")
    with pytest.raises(SpecError, match="field 'open_prompt': unknown placeholder \\{answer\\}"):
        load_spec(spec)
