"""The trained demo models `shapes-llava` and `shapes-llava@stage1..5`: shipped, offline, really trained.

The thresholds sit a little below what the shipped checkpoints score (measured with
`pytest --mllm=shapes-llava@stageK --mllm-bench=shapes --mllm-json=out.json`; the numbers are
in each stage's card.json and in docs/reference.md's "Trained demo models" table).
"""

from __future__ import annotations

import hashlib
import json

import pytest

from pytest_mllm.models.registry import known_names, recognizes
from pytest_mllm.models.shapes_llava import NAME, STAGES, WEIGHTS_DIR, model_names, shapes_llava_folder

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

# Least accuracy per task of the final stage on the bundled `shapes` suite (chance: 0.5, choice 0.25).
FINAL_SHAPES_FLOOR = {"existence": 0.90, "count": 0.90, "color": 0.90, "position": 0.90, "choice": 0.70}
FINAL_VRP_NONE_FLOOR = 0.50  # vrp_shapes, the un-intervened (location in words) questions; chance 0.375
ALLOWED_SUFFIXES = {".json", ".safetensors", ".jinja", ".md"}


def run_json(pytester: pytest.Pytester, model: str, bench: str, *args: str) -> dict:
    out = pytester.path / f"{model.replace('@', '_')}-{bench}.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm={model}", f"--mllm-bench={bench}",
                                           "--mllm-cache=off", f"--mllm-json={out}", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    return json.loads(out.read_text())


def task_accuracy(data: dict, bench: str) -> dict[str, float]:
    metrics = data["benchmarks"][bench]["metrics"]
    return {key.removesuffix(".accuracy"): value for key, value in metrics.items()
            if key.endswith(".accuracy") and key.count(".") == 1}


# -- what is shipped ---------------------------------------------------------------------------


def test_every_stage_is_registered_and_shipped() -> None:
    assert model_names() == [NAME] + [f"{NAME}@{stage}" for stage in STAGES]
    for name in model_names():
        assert recognizes(name) and name in known_names()
    assert not recognizes(f"{NAME}@stage9")
    assert shapes_llava_folder(NAME) == WEIGHTS_DIR / STAGES[-1]
    for stage in STAGES:
        folder = shapes_llava_folder(f"{NAME}@{stage}")
        files = {p.name for p in folder.iterdir()}
        assert {"config.json", "model.safetensors", "tokenizer.json", "card.json", "README.md"} <= files
        assert {p.suffix for p in folder.iterdir()} <= ALLOWED_SUFFIXES, files  # no pickles
        weights = (folder / "model.safetensors").stat().st_size
        assert weights < 1_500_000, weights  # well under 2 MB
        card = json.loads((folder / "card.json").read_text())
        assert card["stage"] == stage and card["name"] == (NAME if stage == STAGES[-1] else f"{NAME}@{stage}")
        assert set(card["scores"]) == {"shapes", "vrp_shapes"}


def test_stages_are_steps_of_one_training_run() -> None:
    cards = [json.loads((WEIGHTS_DIR / stage / "card.json").read_text()) for stage in STAGES]
    steps = [card["training"]["steps"] for card in cards]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert steps[-1] == cards[-1]["training"]["total_steps"]
    assert len({json.dumps(card["data"], sort_keys=True) for card in cards}) == 1


def test_weights_load_offline_with_auto_classes() -> None:
    transformers = pytest.importorskip("transformers")
    folder = shapes_llava_folder(NAME)
    processor = transformers.AutoProcessor.from_pretrained(folder)
    model = transformers.AutoModelForImageTextToText.from_pretrained(folder)
    assert processor.chat_template and type(model).__name__ == "LlavaForConditionalGeneration"
    card = json.loads((folder / "card.json").read_text())
    assert sum(p.numel() for p in model.parameters()) == card["model"]["parameters"]


# -- training data never shows a benchmark image -------------------------------------------------


def _digest(image) -> str:
    return hashlib.sha256(image.convert("RGB").tobytes()).hexdigest()


def test_training_scenes_are_disjoint_from_the_benchmarks() -> None:
    from pytest_mllm.engine.images import load_image
    from pytest_mllm.engine.spec import find_spec, load_spec
    from pytest_mllm.loaders.shapes import TASKS, _image_samples, build_samples
    from pytest_mllm.loaders.vrp_shapes import build_vrp_samples, draw, image_key

    data = json.loads((WEIGHTS_DIR / STAGES[-1] / "card.json").read_text())["data"]
    shapes_seed, vrp_seed = data["shapes"]["seed"], data["vrp_shapes"]["seed"]
    bundled = {name: load_spec(find_spec(name)).loader_options.get("seed", 0) for name in ("shapes", "vrp_shapes")}
    assert data["bundled_benchmark_seed"] == bundled["shapes"] == bundled["vrp_shapes"]
    # other seeds, so other image keys: the keys name the images
    assert shapes_seed not in bundled.values() and vrp_seed not in bundled.values()
    assert data["hash_collisions_dropped"] == 0
    # and other pixels: the first training scenes of every task against every benchmark scene
    benchmark = {_digest(load_image(s.images[0])) for s in build_samples("shapes", seed=bundled["shapes"])}
    benchmark |= {_digest(load_image(s.images[0])) for s in build_vrp_samples("vrp_shapes", seed=bundled["vrp_shapes"])}
    training = {_digest(load_image(_image_samples("shapes", task, index, shapes_seed)[0].images[0]))
                for task in TASKS for index in range(min(40, data["shapes"]["images_per_task"][task]))}
    training |= {_digest(draw(image_key(index, vrp_seed))) for index in range(min(48, data["vrp_shapes"]["sources"]))}
    assert len(training) > 200 and not training & benchmark


# -- it really answers -------------------------------------------------------------------------


def test_final_stage_scores_well_above_chance_on_shapes(pytester: pytest.Pytester) -> None:
    pytest.importorskip("transformers")
    data = run_json(pytester, NAME, "shapes")
    assert {r["model"] for r in data["records"]} == {NAME} and len(data["records"]) == 360
    assert all(r["status"] != "error" for r in data["records"])
    accuracy = task_accuracy(data, "shapes")
    for task, floor in FINAL_SHAPES_FLOOR.items():
        assert accuracy[task] >= floor, (task, accuracy)
    # the same numbers as its model card
    card = json.loads((shapes_llava_folder(NAME) / "card.json").read_text())
    for task in FINAL_SHAPES_FLOOR:
        assert accuracy[task] == pytest.approx(card["scores"]["shapes"][task], abs=0.02)


def test_final_stage_finds_the_object_a_vrp_question_locates(pytester: pytest.Pytester) -> None:
    pytest.importorskip("transformers")
    data = run_json(pytester, NAME, "vrp_shapes", "-k", "none")
    assert len(data["records"]) == 24
    accuracy = sum(r["status"] == "correct" for r in data["records"]) / len(data["records"])
    assert accuracy >= FINAL_VRP_NONE_FLOOR


def test_stages_load_by_name_and_a_late_stage_beats_an_early_one(pytester: pytest.Pytester) -> None:
    pytest.importorskip("transformers")
    overall = {}
    for stage in ("stage1", "stage3"):
        name = f"{NAME}@{stage}"
        data = run_json(pytester, name, "shapes", "-k", "img_00 or img_01")
        assert {r["model"] for r in data["records"]} == {name}
        overall[stage] = data["benchmarks"]["shapes"]["metrics"]["accuracy"]
    final = run_json(pytester, NAME, "shapes", "-k", "img_00 or img_01")["benchmarks"]["shapes"]["metrics"]["accuracy"]
    assert overall["stage1"] < overall["stage3"] < final, (overall, final)
