"""The benchmark catalogue: its generator on a miniature source tree, the committed files well-formed, the
committed catalogue specs what the type templates give, and VLMEvalKit's names found (or refused with why)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_mllm.engine import catalogue
from pytest_mllm.engine.spec import SpecError, all_aliases, bundled_specs, find_spec, load_spec
from pytest_mllm.scoring.catalogue_templates import TEMPLATES

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "fixtures" / "catalogue_source"
SCRIPTS = REPO / "scripts" / "catalogue"
REASONS = ("LLM-graded", "video", "interleaved output", "no ground truth here", "scorer not reproduced yet",
           "data not a released TSV")
KINDS = {*TEMPLATES.names(), "mcq", "yes_no", "vqa", "llm_graded", "video", "interleaved", "other"}


def _script(name: str) -> ModuleType:
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(f"catalogue_{name}", SCRIPTS / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generate(vlmevalkit: Path = SOURCE / "vlmevalkit") -> dict[str, dict]:
    documents = _script("generate").documents(vlmevalkit, SOURCE / "lmms_eval", "0" * 40, "1" * 40,
                                              {"colors_val": "Shapes_DEV"})
    return {name: json.loads(text) for name, text in documents.items()}


# --- the generator, on fixtures/catalogue_source/ -------------------------------------------------------------

def test_the_generator_reads_names_files_and_scorers_from_the_source() -> None:
    entries = {e["name"]: e for e in _generate()["vlmevalkit.json"]["entries"]}
    shapes = entries["Shapes_DEV"]
    assert (shapes["url"], shapes["md5"], shapes["file"]) == (
        "https://example.org/data/Shapes_DEV.tsv", "0123456789abcdef0123456789abcdef", "Shapes_DEV.tsv")
    assert shapes["evaluate"] == "vlmeval/dataset/image_mcq.py:ImageMCQDataset.evaluate_heuristic"
    assert (shapes["kind"], shapes["supported"], shapes["lmms_eval"]) == ("mcq", True, ["colors_val"])
    assert entries["Shapes_dev_circular"]["url"] == "https://example.org/data/Shapes_dev_circular.tsv"  # .update()
    kinds = {name: (e["kind"], e["supported"]) for name, e in entries.items()}
    assert kinds == {
        "Shapes_DEV": ("mcq", True), "Shapes_TEST": ("mcq", False), "MMT-Shapes_VAL": ("mcq_mmt", True),
        "MMVP": ("mcq", False), "Colors": ("mcq", False), "Shapes_dev_circular": ("mcq_circular", True),
        "TextVQA_Shapes": ("vqa_score", True), "InfoVQA_Shapes": ("vqa_anls", True),
        "GQA_Shapes": ("vqa_exact_mean", True), "PlainVQA_Shapes": ("vqa", False), "YesShapes": ("yes_no", False),
        "OCRShapes": ("ocrbench", True), "Graded": ("llm_graded", False), "Hub": ("mcq", False),
        "td_rot0": ("mcq", True), "CCShapes_Scene": ("ccocr_ocr", True), "CCShapes_Kie": ("other", False),
        "ClipShapes": ("video", False)}
    reasons = {name: e["reason"].split(":")[0] for name, e in entries.items() if e["reason"]}
    assert reasons == {"Shapes_TEST": "no ground truth here", "MMVP": "scorer not reproduced yet",
                       "Colors": "data not a released TSV", "PlainVQA_Shapes": "scorer not reproduced yet",
                       "YesShapes": "scorer not reproduced yet", "Graded": "LLM-graded",
                       "Hub": "data not a released TSV", "CCShapes_Kie": "scorer not reproduced yet",
                       "ClipShapes": "video"}


def test_the_generator_reads_lmms_eval_tasks_with_their_includes() -> None:
    document = _generate()["lmms_eval.json"]
    assert document["source"] == {"repository": "EvolvingLMMs-Lab/lmms-eval", "commit": "1" * 40,
                                  "generator": "scripts/catalogue/generate.py"}
    assert document["entries"] == [{  # the video task is left out
        "task": "colors_val", "yaml": "lmms_eval/tasks/colors/colors_val.yaml", "dataset_path": "shapes-lab/Colors",
        "dataset_name": None, "revision": "0123abc", "split": "validation", "metrics": ["exact_match"],
        "modality": "image", "vlmevalkit": "Shapes_DEV"}]


def test_the_generator_stops_when_vlmevalkit_branches_otherwise(tmp_path: Path) -> None:
    changed = tmp_path / "vlmevalkit"
    shutil.copytree(SOURCE / "vlmevalkit", changed)
    mcq = changed / "vlmeval" / "dataset" / "image_mcq.py"
    mcq.write_text(mcq.read_text(encoding="utf-8").replace("'ccbench', ", ""), encoding="utf-8")
    with pytest.raises(SystemExit, match="circular names"):
        _generate(changed)


def test_the_check_mode_finds_a_stale_catalogue(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generate = _script("generate")
    argv = ["--vlmevalkit", str(SOURCE / "vlmevalkit"), "--lmms-eval", str(SOURCE / "lmms_eval"), "--out", str(tmp_path)]
    pairs = {"colors_val": "Shapes_DEV"}
    assert generate.main([*argv, "--check"], pairs) == 1  # nothing written yet
    generate.main(argv, pairs)
    assert generate.main([*argv, "--check"], pairs) == 0
    (tmp_path / "vlmevalkit.json").write_text("{}", encoding="utf-8")
    assert generate.main([*argv, "--check"], pairs) == 1
    assert "vlmevalkit.json is not what the generator writes" in capsys.readouterr().out


# --- the committed catalogue ----------------------------------------------------------------------------------

def test_the_committed_catalogue_is_well_formed() -> None:
    vlm, lmms = catalogue.vlmevalkit(), catalogue.lmms_eval()
    assert vlm.repository == "open-compass/VLMEvalKit" and re.fullmatch("[0-9a-f]{40}", vlm.commit)
    assert lmms.repository == "EvolvingLMMs-Lab/lmms-eval" and re.fullmatch("[0-9a-f]{40}", lmms.commit)
    for entry in vlm.entries.values():
        assert entry.file == f"{entry.name}.tsv"
        assert entry.url is None or entry.url.startswith(("https://", "http://")), entry.name
        # as VLMEvalKit writes it: LENS-CN-QA's in capitals (its lowercase hexdigest never equals it)
        assert entry.md5 is None or re.fullmatch("[0-9a-fA-F]{32}", entry.md5), entry.name
        assert entry.modality in ("IMAGE", "VIDEO") and entry.kind in KINDS, entry.name
        if entry.supported:
            assert entry.reason is None and entry.kind in TEMPLATES and entry.url, entry.name
        else:
            assert entry.reason and entry.reason.startswith(REASONS), entry.name
        for task in entry.lmms_eval:
            assert lmms.entries[task].vlmevalkit == entry.name
    for task in lmms.entries.values():
        assert task.dataset_path and task.modality == "image", task.task
        assert task.vlmevalkit is None or task.task in vlm.entries[task.vlmevalkit].lmms_eval


def test_at_least_a_hundred_image_benchmarks_run_by_their_vlmevalkit_name() -> None:
    held = {**all_aliases(), **{name: name for name in bundled_specs()}}
    runnable = [e for e in catalogue.vlmevalkit().entries.values() if e.supported and e.modality == "IMAGE"]
    assert len(runnable) >= 100
    for entry in runnable:
        path = find_spec(entry.name)
        spec = load_spec(path)
        if entry.name in held:  # the hand-written spec stays authoritative for its names
            assert path == bundled_specs()[all_aliases().get(entry.name, entry.name)]
            continue
        assert (spec.name, spec.data_file, spec.about.reference_commit) == (entry.name, entry.file, catalogue.vlmevalkit().commit)
        assert spec.about.reference_repository == "open-compass/VLMEvalKit"  # responses read as its .xlsx file hands them
        assert catalogue.entry_for_file(spec.data_file) == entry


def test_the_committed_specs_and_page_are_what_the_templates_give() -> None:
    specs = _script("specs")
    committed = {p.name: p.read_text(encoding="utf-8") for p in catalogue.specs_folder().glob("*.yaml")}
    assert committed == specs.expected()
    assert specs.PAGE.read_text(encoding="utf-8") == specs.page()  # docs/catalogue.md


def test_lmms_eval_names_find_the_benchmark_they_map_to() -> None:
    assert find_spec("seedbench_2_plus") == find_spec("SEEDBench2_Plus")
    assert load_spec(find_spec("infovqa_val")).name == "InfoVQA_VAL"
    assert find_spec("mmbench_en_dev") == bundled_specs()["mmbench"]  # an alias of a hand-written spec wins
    for names, spec in ((("MathVista_MINI", "mathvista_testmini", "mathvista_testmini_format"), "mathvista"),
                        (("MMVet", "mmvet"), "mmvet"), (("LLaVABench", "llava_in_the_wild"), "llavabench")):
        assert {find_spec(name) for name in names} == {bundled_specs()[spec]}  # the names its spec declares


@pytest.mark.parametrize(("name", "reason"), [
    ("MathVerse_MINI", "LLM-graded"), ("MMBench_TEST_EN", "no ground truth here"), ("Video-MME", "video"),
    ("MMVP", "scorer not reproduced yet")])
def test_a_catalogue_name_that_cannot_run_says_why(name: str, reason: str) -> None:
    with pytest.raises(SpecError, match=f"--mllm-bench={name}: {name} is in VLMEvalKit's catalogue but cannot run "
                                        f"here: {reason}"):
        find_spec(name)


def test_an_unknown_name_suggests_catalogue_names() -> None:
    with pytest.raises(SpecError, match="did you mean 'MMStar' or 'MMStar_KO'"):
        find_spec("MMStar_K0")


def test_the_listing_shows_types_scorers_peers_and_reasons() -> None:
    lines = catalogue.listing_lines(all_aliases())
    assert lines[0].startswith("VLMEvalKit's catalogue (open-compass/VLMEvalKit ")
    assert "SEEDBench2_Plus [seedbench_2_plus]: multiple choice; VLMEvalKit scorer: ImageMCQDataset.evaluate_heuristic (" \
        in "\n".join(lines)
    assert any(line.startswith("MMStar [mmstar]: multiple choice; spec mmstar (hand-written)") for line in lines)
    listed = [line for line in lines if "; VLMEvalKit scorer: " in line]
    assert len(listed) >= 100
    grouped = [line.strip().split(":")[0] for line in lines[lines.index("") + len(listed) + 2:] if line.startswith("  ")]
    assert {"LLM-graded", "video", "no ground truth here", "scorer not reproduced yet",
            "data not a released TSV"} <= set(grouped) <= set(REASONS)
