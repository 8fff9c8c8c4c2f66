"""Loaders on fixtures in the real formats: MME release folder (both layouts), MME results,
VLMEvalKit TSV with base64 images, and the plain JSONL format."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.engine.images import load_image
from pytest_mllm.engine.spec import SpecError, find_spec, load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.sample import BadSample, Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
MME_ROOT = FIXTURES / "mme" / "MME_Benchmark_release_version"


def _spec(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_mme_folder_reads_both_layouts_in_official_order() -> None:
    spec = load_spec(find_spec("mme"))
    samples = load_samples(spec, MME_ROOT)
    assert all(isinstance(s, Sample) for s in samples)
    tasks = list(dict.fromkeys(s.task for s in samples))
    assert tasks == ["existence", "count", "celebrity", "artwork", "OCR", "code_reasoning"]
    by_task = {t: [s for s in samples if s.task == t] for t in tasks}
    assert len(by_task["existence"]) == 6 and len(by_task["artwork"]) == 6
    first = by_task["existence"][0]
    assert first.id == f"existence::{first.image_name}::q1"
    assert first.question.endswith("Please answer yes or no.")
    # layout 2: the image lives under images/, the questions under questions_answers_YN/
    art = by_task["artwork"][0]
    assert art.images[0].value.startswith("artwork/images/")
    assert load_image(art.images[0]).size == (24, 24)
    # both questions of an image share one pair group; answers are the file's Yes/No
    assert {s.pair_group for s in by_task["count"]} == {f"count::{s.image_name}" for s in by_task["count"]}
    assert sorted(s.answer for s in by_task["count"]) == ["No", "No", "Yes", "Yes"]
    assert any("  Please answer" in s.question for s in samples)  # double space kept as released


def test_mme_folder_png_images_are_found(tmp_path: Path) -> None:
    spec = load_spec(find_spec("mme"))
    code = [s for s in load_samples(spec, MME_ROOT) if s.task == "code_reasoning"]
    assert all(s.image_name.endswith(".png") for s in code)


def test_malformed_mme_line_errors_alone(tmp_path: Path) -> None:
    task = tmp_path / "existence"
    task.mkdir()
    (task / "a.jpg").write_bytes((MME_ROOT / "existence" / "000000006040.jpg").read_bytes())
    (task / "a.txt").write_text("Is there a dog?\tYes\nIs there a cat? Maybe\n", encoding="utf-8")
    samples = load_samples(load_spec(find_spec("mme")), tmp_path)
    assert isinstance(samples[0], Sample)
    assert isinstance(samples[1], BadSample) and "a.txt:2" in samples[1].error


def test_tsv_resolves_image_cells_that_name_another_row(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, f"name: mmb\nloader: tsv\nparser: choice\nmetrics: [accuracy, category]\n"
                                      f"data: {{root: {FIXTURES / 'tsv'}, file: mmbench_mini.tsv}}\n"))
    samples = load_samples(spec, spec.resolve_data_root(None))
    assert len(samples) == 8 and all(isinstance(s, Sample) for s in samples)
    refs = [s for s in samples if s.images[0].kind == "tsv"]  # read from the file by byte span when used
    assert len(refs) == 8
    sizes = {load_image(s.images[0]).size for s in samples}
    assert sizes == {(24, 24)}
    assert {len(s.choices) for s in samples} >= {2, 3, 4}
    assert all(s.answer in dict(s.choices) for s in samples)
    assert {s.category for s in samples} and {s.l2_category for s in samples}
    # rows whose image cell is another row's index share that row's image bytes
    by_index = {s.metadata["source_id"]: s for s in samples}
    shared = [s for s in samples if sum(t.images[0].value == s.images[0].value for t in samples) > 1]
    assert len(shared) >= 2, by_index


def test_tsv_pope_tasks_from_category_column(tmp_path: Path) -> None:
    spec = load_spec(find_spec("pope"))
    samples = load_samples(spec, _pope_root(tmp_path))
    assert {s.task for s in samples} == {"adversarial", "popular", "random"}
    assert {s.answer for s in samples} == {"yes", "no"} and all(s.answer_type == "yes_no" for s in samples)


def _pope_root(tmp_path: Path) -> Path:
    root = tmp_path / "pope"
    root.mkdir()
    (root / "POPE.tsv").write_bytes((FIXTURES / "tsv" / "pope_mini.tsv").read_bytes())
    return root


def test_jsonl_reads_paths_pairs_and_choices() -> None:
    spec_path = FIXTURES / "jsonl" / "bench.yaml"
    spec = load_spec(spec_path)
    samples = load_samples(spec, spec.resolve_data_root(None))
    assert all(isinstance(s, Sample) for s in samples)
    yes_no = [s for s in samples if s.answer_type == "yes_no"]
    choice = [s for s in samples if s.answer_type == "choice"]
    assert yes_no and choice
    assert all(s.pair_group and s.pair_group.startswith(f"{s.task}::") for s in yes_no)
    assert all(load_image(s.images[0]).mode == "RGB" for s in samples)


def test_jsonl_path_escaping_the_root_is_a_bad_sample(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, f"name: esc\nloader: jsonl\ndata: {{root: {FIXTURES / 'bad'}, file: escape.jsonl}}\n"))
    [bad] = load_samples(spec, spec.resolve_data_root(None))
    assert isinstance(bad, BadSample) and "escapes the data root" in bad.error


def test_duplicate_ids_are_an_error_naming_the_id(tmp_path: Path) -> None:
    spec = load_spec(_spec(tmp_path, f"name: dup\nloader: jsonl\ndata: {{root: {FIXTURES / 'bad'}, file: dup_ids.jsonl}}\n"))
    with pytest.raises(SpecError, match="duplicate sample id 'colors::q1'"):
        load_samples(spec, spec.resolve_data_root(None))


def _subset_spec(tmp_path: Path, ids: str) -> Path:
    (tmp_path / "ids.txt").write_text(ids, encoding="utf-8")
    return _spec(tmp_path, f"name: sub\nloader: jsonl\ndata: {{root: {FIXTURES / 'jsonl'}, file: my_bench.jsonl}}\n"
                           "subset: ids.txt\n")


def test_subset_keeps_listed_samples_in_benchmark_order(tmp_path: Path) -> None:
    spec = load_spec(_subset_spec(tmp_path, "# picked by hand\nshapes::q5   # the circle\n\ncolors::q2\n"
                                            "  colors::q1\n"))
    assert [s.id for s in load_samples(spec, spec.resolve_data_root(None))] == ["colors::q1", "colors::q2",
                                                                               "shapes::q5"]


def test_subset_id_the_benchmark_lacks_names_file_line_and_id(tmp_path: Path) -> None:
    spec = load_spec(_subset_spec(tmp_path, "colors::q1\n# comment\ncolors::q99\n"))
    with pytest.raises(SpecError) as info:
        load_samples(spec, spec.resolve_data_root(None))
    assert f"{tmp_path / 'ids.txt'}:3: sample id 'colors::q99' is not in benchmark 'sub'" in str(info.value)


@pytest.mark.parametrize("ids, message", [
    ("colors::q1\ncolors::q1\n", r"ids.txt:2: sample id 'colors::q1' is listed twice \(first on line 1\)"),
    ("# nothing\n\n", "lists no sample id"),
])
def test_subset_with_repeats_or_no_ids_is_an_error(tmp_path: Path, ids: str, message: str) -> None:
    spec = load_spec(_subset_spec(tmp_path, ids))
    with pytest.raises(SpecError, match=message):
        load_samples(spec, spec.resolve_data_root(None))


def test_subset_of_a_generated_benchmark(tmp_path: Path) -> None:
    spec = load_spec(find_spec("shapes"))
    wanted = [s.id for s in load_samples(spec, None)][::90]
    (tmp_path / "ids.txt").write_text("\n".join(reversed(wanted)), encoding="utf-8")
    body = spec.path.read_text(encoding="utf-8").replace("name: shapes", "name: shapes_subset") + "subset: ids.txt\n"
    subset = load_spec(_spec(tmp_path, body))
    assert [s.id for s in load_samples(subset, None)] == wanted
