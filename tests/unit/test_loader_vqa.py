"""The open-ended VQA loader: fields and aliases, bad rows, seeded per-dataset subsampling, capability groups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.engine.images import load_image
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, bundled_specs, load_spec
from pytest_mllm.loaders.tiny_lvlm_ehub import legacy_numpy_choice, load_vqa
from pytest_mllm.sample import BadSample, Sample

MINI = Path(__file__).resolve().parents[2] / "fixtures" / "judge" / "vqa_mini"


def spec(tmp_path: Path, data_file: str | None = "vqa.json", **options: Any) -> BenchmarkSpec:
    return BenchmarkSpec(path=tmp_path / "bench.yaml", name="vqa_mini", loader="vqa", data_file=data_file,
                         loader_options=options)


def write(root: Path, entries: Any) -> Path:
    shutil.copytree(MINI / "images", root / "images", dirs_exist_ok=True)
    (root / "vqa.json").write_text(json.dumps(entries), encoding="utf-8")
    return root


def entry(i: int, task: str = "colors", **fields: Any) -> dict[str, Any]:
    return {"id": f"q{i}", "dataset": task, "image": "images/red.png", "question": "What color?",
            "answer": "red", **fields}


def test_reads_every_field_and_alias(tmp_path: Path) -> None:
    samples = load_vqa(spec(tmp_path), MINI)
    assert all(isinstance(s, Sample) for s in samples)
    ok = [s for s in samples if isinstance(s, Sample)]
    assert [s.id for s in ok] == ["colors::c1", "colors::c2", "colors::c3", "colors::c4",
                                  "shapes::s1", "shapes::s2", "shapes::s3", "shapes::8"]
    first = ok[0]
    assert (first.benchmark, first.task, first.question, first.answer, first.answer_type, first.category) == (
        "vqa_mini", "colors", "What color is the square?", "red", "open", "color")
    assert first.metadata == {"references": ["red", "dark red"], "human_label": True, "source_id": "c1"}
    assert ok[2].images[0].value == "images/red.png" and ok[2].metadata["references"] == ["white"]  # image_path, gt_answers
    assert ok[3].task == "colors"  # "task" instead of "dataset"
    assert ok[5].metadata["references"] == ["triangle"] and ok[5].metadata["human_label"] is False
    assert ok[7].answer == "2" and ok[7].metadata["source_id"] == "8"  # numeric id and reference
    assert {load_image(s.images[0]).size for s in ok} == {(24, 24)}


def test_human_label_is_none_when_absent(tmp_path: Path) -> None:
    [sample] = load_vqa(spec(tmp_path), write(tmp_path, [entry(1)]))
    assert isinstance(sample, Sample) and sample.metadata["human_label"] is None
    assert sample.task == "colors" and sample.answer == "red"


def test_task_defaults_to_the_benchmark_and_id_to_the_row(tmp_path: Path) -> None:
    row = {"image": "images/red.png", "question": "What color?", "answers": ["red"]}
    [sample] = load_vqa(spec(tmp_path), write(tmp_path, [row]))
    assert isinstance(sample, Sample) and sample.id == "vqa_mini::row1"


@pytest.mark.parametrize(("bad", "message"), [
    (entry(9, image="../../etc/passwd"), "escapes the data root"),
    (entry(9, image="/etc/passwd"), "escapes the data root"),
    (entry(9, image=""), "field 'image'"),
    (entry(9, answer=None), "exactly one of"),
    (entry(9, answers=["red"]), "exactly one of 'answers', 'answer', 'gt_answers'; found answers, answer"),
    (entry(9, answer=None, answers=[{"text": "red"}]), "must be text"),
    (entry(9, answer=True), "must be text"),
    (entry(9, question=""), "missing field 'question'"),
    (entry(9, human_label="yes"), "'human_label' must be true or false"),
    (entry(9, category=3), "'category' must be text"),
    (entry(9, metadata=[1]), "'metadata' must be a mapping"),
    (entry(9, dataset=5), "'dataset' (or 'task') must be"),
    (entry(9, answr="red"), "unknown field 'answr'"),
    (["not", "an", "object"], "must be a JSON object"),
])
def test_a_bad_row_errors_alone(tmp_path: Path, bad: Any, message: str) -> None:
    samples = load_vqa(spec(tmp_path), write(tmp_path, [entry(1), bad, entry(2)]))
    assert isinstance(samples[0], Sample) and isinstance(samples[2], Sample)
    broken = samples[1]
    assert isinstance(broken, BadSample)
    assert message in broken.error and "vqa.json: entry 2" in broken.error
    if isinstance(bad, dict):
        assert broken.id == ("vqa_mini::q9" if bad["dataset"] == 5 else "colors::q9")


def _ids(samples: list[Sample | BadSample]) -> list[str]:
    return [s.id for s in samples]


def test_subsampling_is_seeded_per_dataset_and_keeps_file_order(tmp_path: Path) -> None:
    root = write(tmp_path, [entry(i, "colors" if i % 3 else "shapes") for i in range(30)])
    every = load_vqa(spec(tmp_path), root)
    assert len(every) == 30
    chosen = load_vqa(spec(tmp_path, per_dataset=4, seed=0), root)
    assert _ids(chosen) == _ids(load_vqa(spec(tmp_path, per_dataset=4, seed=0), root))  # deterministic
    assert [s.task for s in chosen].count("colors") == 4 and [s.task for s in chosen].count("shapes") == 4
    order = _ids(every)
    assert [order.index(i) for i in _ids(chosen)] == sorted(order.index(i) for i in _ids(chosen))
    # Tiny LVLM-eHub's sample_dataset: NumPy's legacy draw per dataset, its entries in file order
    np = pytest.importorskip("numpy")
    expected = []
    for task, ids in (("colors", [i for i in range(30) if i % 3]), ("shapes", [i for i in range(30) if not i % 3])):
        np.random.seed(0)
        expected += [f"{task}::q{ids[k]}" for k in np.random.choice(len(ids), 4, replace=False)]
    assert sorted(_ids(chosen)) == sorted(expected)
    assert _ids(load_vqa(spec(tmp_path, per_dataset=4, seed=1), root)) != _ids(chosen)
    assert _ids(load_vqa(spec(tmp_path, per_dataset=50), root)) == order  # fewer rows than asked: all
    assert _ids(load_vqa(spec(tmp_path, per_dataset=4), root)) == _ids(chosen)  # seed defaults to 0


def test_a_reference_left_empty_by_preparation_is_kept_for_the_scorer(tmp_path: Path) -> None:
    [sample] = load_vqa(spec(tmp_path), write(tmp_path, [entry(1, answer="  ")]))
    assert isinstance(sample, Sample) and sample.metadata["references"] == ["  "]  # VQAEval scores it


def test_no_reference_and_numbers_are_kept_for_the_scorer(tmp_path: Path) -> None:
    """VQAEval scores an empty list (never right) and stops at a number: where, the sample says."""
    none, number, later = load_vqa(spec(tmp_path), write(tmp_path, [
        entry(1, answer=None, gt_answers=[]), entry(2, answer=None, gt_answers=1999),
        entry(3, answer=None, gt_answers=["three", "three", 3, "3", "tres"])]))
    assert isinstance(none, Sample) and none.metadata["references"] == [] and "vqaeval_stops_at" not in none.metadata
    assert isinstance(number, Sample) and number.metadata["references"] == ["1999"]
    assert number.metadata["vqaeval_stops_at"] == 0
    assert isinstance(later, Sample) and later.metadata["references"] == ["three", "3", "tres"]
    assert later.metadata["vqaeval_stops_at"] == 1


def test_a_rows_chance_does_not_depend_on_other_datasets(tmp_path: Path) -> None:
    rows = [entry(i, "colors" if i % 2 else "shapes") for i in range(20)]
    before = load_vqa(spec(tmp_path, per_dataset=3, seed=7), write(tmp_path, rows))
    more = rows + [entry(i, "shapes") for i in range(100, 110)]
    after = load_vqa(spec(tmp_path, per_dataset=3, seed=7), write(tmp_path, more))
    assert [s.id for s in before if s.task == "colors"] == [s.id for s in after if s.task == "colors"]


def test_bad_rows_take_part_in_subsampling(tmp_path: Path) -> None:
    rows = [entry(i, image="../escape.png") if i == 2 else entry(i) for i in range(6)]
    every = load_vqa(spec(tmp_path, per_dataset=6), write(tmp_path, rows))
    assert isinstance(every[2], BadSample) and len(every) == 6
    seeds_picking_it = [seed for seed in range(20)
                        if "colors::q2" in _ids(load_vqa(spec(tmp_path, per_dataset=2, seed=seed), tmp_path))]
    assert seeds_picking_it  # a broken row is not silently skipped by the sampler


def test_picks_keep_positions_of_a_longer_draw(tmp_path: Path) -> None:
    """Tiny LVLM-eHub's draw for a dataset Bard answered: max + 1 drawn, the listed positions kept; a task
    with no more entries than that, or not listed, is drawn as usual."""
    root = write(tmp_path, [entry(i) for i in range(8)] + [entry(i, task="shapes") for i in range(8, 12)])
    picked = load_vqa(spec(tmp_path, per_dataset=3, seed=5, picks={"colors": [0, 2, 4], "shapes": [0, 5]}), root)
    drawn = legacy_numpy_choice(8, 5, 5)
    assert {s.id for s in picked if s.task == "colors"} == {f"colors::q{drawn[p]}" for p in (0, 2, 4)}
    plain = load_vqa(spec(tmp_path, per_dataset=3, seed=5), root)
    assert [s.id for s in picked if s.task == "shapes"] == [s.id for s in plain if s.task == "shapes"]


@pytest.mark.parametrize(("options", "message"), [
    ({"per_dataset": 0}, "loader_options.per_dataset"),
    ({"per_dataset": "50"}, "loader_options.per_dataset"),
    ({"picks": {"colors": [0, 1]}}, "picks' needs loader_options.per_dataset"),
    ({"per_dataset": 2, "picks": [0, 1]}, "must map task names"),
    ({"per_dataset": 2, "picks": {"colors": [1, 1]}}, "picks.colors' must be a list of distinct"),
    ({"per_dataset": 2, "picks": {"colors": [-1]}}, "picks.colors' must be a list of distinct"),
    ({"per_dataset": True}, "loader_options.per_dataset"),
    ({"seed": "zero"}, "loader_options.seed"),
    ({"per_task": 5}, "loader_options.per_task"),
])
def test_bad_loader_options_are_spec_errors(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        load_vqa(spec(tmp_path, **options), MINI)


def test_unusable_files_are_spec_errors(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="needs the file name"):
        load_vqa(spec(tmp_path, data_file=None), MINI)
    with pytest.raises(SpecError, match="not found"):
        load_vqa(spec(tmp_path, data_file="missing.json"), MINI)
    (tmp_path / "vqa.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SpecError, match="not valid JSON"):
        load_vqa(spec(tmp_path), tmp_path)
    (tmp_path / "vqa.json").write_text('{"data": []}', encoding="utf-8")
    with pytest.raises(SpecError, match="JSON list"):
        load_vqa(spec(tmp_path), tmp_path)


def test_capability_groups() -> None:
    groups = load_spec(bundled_specs()["tiny_lvlm_ehub"]).groups  # the authors' five groups, in the spec's groups
    assert set(groups) == {"visual_perception", "visual_knowledge_acquisition", "visual_reasoning",
                           "visual_commonsense", "object_hallucination"}
    names = [n for members in groups.values() for n in members]
    assert len(names) == len(set(names))  # no dataset in two groups

    def capability_group(dataset: str) -> str | None:
        return next((group for group, members in groups.items() if dataset in members), None)

    assert capability_group("ImageNet") == "visual_perception"
    assert capability_group("SROIE") == "visual_knowledge_acquisition"
    assert capability_group("GQA") == capability_group("ScienceQAIMG") == "visual_reasoning"
    assert capability_group("ImageNetVC_color") == "visual_commonsense"
    assert capability_group("MSCOCO_pope_adversarial") == "object_hallucination"
    assert capability_group("MetaWorld") is None and capability_group("NoCaps") is None
