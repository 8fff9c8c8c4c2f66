"""The bundled "shapes" benchmark: structure, determinism, and questions that match the pixels."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageChops, ImageDraw

from pytest_mllm.loaders.shapes import (
    BACKGROUND,
    COLORS,
    KINDS,
    SIZE,
    TASKS,
    Shape,
    build_samples,
    draw,
    image_key,
    parse_key,
    scene,
)
from pytest_mllm.sample import Sample

YES_NO_TASKS = ("existence", "count", "color", "position")
IMAGES = 30
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return build_samples(images_per_task=IMAGES)


def by_task(samples: list[Sample], task: str) -> list[Sample]:
    return [s for s in samples if s.task == task]


def pairs(samples: list[Sample]) -> list[tuple[Sample, Sample]]:
    return list(zip(samples[::2], samples[1::2]))


def shapes_of(sample: Sample) -> list[Shape]:
    return [Shape(d["shape"], d["color"], tuple(d["box"])) for d in sample.metadata["shapes"]]


def digest(key: str) -> str:
    return hashlib.sha256(draw(key).tobytes()).hexdigest()


# ---- structure ---------------------------------------------------------------------------


def test_sizes_per_task(samples: list[Sample]) -> None:
    counts = Counter(s.task for s in samples)
    assert tuple(counts) == TASKS
    assert all(counts[t] == 2 * IMAGES for t in YES_NO_TASKS)
    assert counts["choice"] == IMAGES
    assert len(build_samples()) == 40 * 9


def test_ids_unique_and_well_formed(samples: list[Sample]) -> None:
    ids = [s.id for s in samples]
    assert len(set(ids)) == len(ids)
    for s in samples:
        index = parse_key(s.images[0].value)[1]
        if s.task == "choice":
            assert s.id == f"choice::img_{index:03d}.png"
        else:
            assert s.id in (f"{s.task}::img_{index:03d}.png::q{n}" for n in (1, 2))


def test_benchmark_name_and_image_refs() -> None:
    for s in build_samples(benchmark="shapes_small", images_per_task=2, seed=5):
        assert s.benchmark == "shapes_small"
        (image,) = s.images
        assert image.kind == "generated" and image.generator is draw
        task, _, seed = parse_key(image.value)
        assert (task, seed) == (s.task, 5)
        assert s.image_name == s.id.split("::")[1]  # the file-like label, e.g. img_007.png


@pytest.mark.parametrize("task", YES_NO_TASKS)
def test_pairs_one_yes_then_one_no(samples: list[Sample], task: str) -> None:
    groups: dict[str, list[Sample]] = defaultdict(list)
    for s in by_task(samples, task):
        assert s.answer_type == "yes_no" and s.question.endswith(" Please answer yes or no.")
        assert s.pair_group is not None
        groups[s.pair_group].append(s)
    assert len(groups) == IMAGES
    for group, (first, second) in groups.items():
        assert group == f"{task}::img_{parse_key(first.images[0].value)[1]:03d}"
        assert (first.answer, second.answer) == ("Yes", "No")
        assert first.id.endswith("::q1") and second.id.endswith("::q2")
        assert first.images == second.images and first.question != second.question


def test_yes_no_balance(samples: list[Sample]) -> None:
    answers = Counter(s.answer for s in samples if s.answer_type == "yes_no")
    assert answers["Yes"] == answers["No"] == 4 * IMAGES


# ---- determinism -------------------------------------------------------------------------


def fingerprint(samples: list[Sample]) -> list[tuple[object, ...]]:
    return [
        (s.id, s.question, s.answer, s.choices, s.pair_group, s.target_region, s.category,
         s.images[0].value, json.dumps(s.metadata, sort_keys=True))
        for s in samples
    ]


def test_deterministic_across_calls() -> None:
    assert fingerprint(build_samples(seed=3)) == fingerprint(build_samples(seed=3))
    assert fingerprint(build_samples(seed=3)) != fingerprint(build_samples(seed=4))


def test_draw_is_pure_and_well_formed() -> None:
    key = image_key("existence", 7, 0)
    image = draw(key)
    assert image.size == (SIZE, SIZE) and image.mode == "RGB"
    assert image.tobytes() == draw(key).tobytes()
    assert image.getpixel((0, 0)) == BACKGROUND
    assert digest(key) != digest(image_key("existence", 7, 1))


KEYS = [image_key(task, i, seed) for task in TASKS for i, seed in ((0, 0), (7, 0), (3, 11))]

_CHILD = """
import hashlib, json, random, sys
random.seed(12345)  # global random state must not matter
from pytest_mllm.loaders.shapes import build_samples, draw
keys = json.loads(sys.argv[1])
samples = build_samples(images_per_task=5, seed=2)
print(json.dumps({
    "images": [hashlib.sha256(draw(k).tobytes()).hexdigest() for k in keys],
    "samples": [[s.id, s.question, s.answer, list(s.choices)] for s in samples],
}))
"""


@pytest.mark.parametrize("hash_seed", ["0", "987654"])
def test_deterministic_across_processes(hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps(KEYS)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout
    child = json.loads(out)
    assert child["images"] == [digest(k) for k in KEYS]
    here = build_samples(images_per_task=5, seed=2)
    expected = [[s.id, s.question, s.answer, [list(c) for c in s.choices]] for s in here]
    assert child["samples"] == expected


def test_bad_keys_are_rejected() -> None:
    for key in ("", "shapes/v1/existence/1", "shapes/v2/count/1/seed0", "shapes/v1/nope/1/seed0",
                "shapes/v1/color/x/seed0", "shapes/v1/color/1/0", "shapes/v1/color/1/seedz"):
        with pytest.raises(ValueError):
            draw(key)


# ---- questions agree with the scene, and the scene with the pixels -----------------------


def test_metadata_matches_scene_and_pixels(samples: list[Sample]) -> None:
    for s in samples:
        key = s.images[0].value
        shapes = shapes_of(s)
        assert shapes == list(scene(key))
        image = draw(key)
        for shape in shapes:
            assert image.getpixel(shape.center) == COLORS[shape.color], (s.id, shape)
        for corner in ((0, 0), (SIZE - 1, 0), (0, SIZE - 1), (SIZE - 1, SIZE - 1)):
            assert image.getpixel(corner) == BACKGROUND


def test_existence_questions(samples: list[Sample]) -> None:
    for yes, no in pairs(by_task(samples, "existence")):
        shapes = shapes_of(yes)
        kinds = [s.kind for s in shapes]
        assert 1 <= len(kinds) <= 3 and len(set(kinds)) == len(kinds)
        asked_yes, asked_no = yes.metadata["asked"]["shape"], no.metadata["asked"]["shape"]
        assert asked_yes in kinds and asked_no not in kinds and asked_no in KINDS
        assert yes.question == f"Is there a {asked_yes} in the image? Please answer yes or no."
        assert no.question == f"Is there a {asked_no} in the image? Please answer yes or no."
        assert yes.target_region == next(s.box for s in shapes if s.kind == asked_yes)
        assert no.target_region is None


def test_count_questions(samples: list[Sample]) -> None:
    words = {1: "one", 2: "two", 3: "three", 4: "four"}
    plurals = {k: k + ("es" if k == "cross" else "s") for k in KINDS}
    seen = set()
    for yes, no in pairs(by_task(samples, "count")):
        shapes = shapes_of(yes)
        kind = shapes[0].kind
        assert {s.kind for s in shapes} == {kind}
        assert yes.metadata["asked"] == {"shape": kind, "count": len(shapes)}
        wrong = no.metadata["asked"]["count"]
        assert wrong != len(shapes) and 1 <= wrong <= 4
        for sample, n in ((yes, len(shapes)), (no, wrong)):
            expected = f"Is there one {kind}" if n == 1 else f"Are there {words[n]} {plurals[kind]}"
            assert sample.question == expected + " in the image? Please answer yes or no."
        seen.add(len(shapes))
    assert seen == {1, 2, 3, 4}


def test_color_questions(samples: list[Sample]) -> None:
    for yes, no in pairs(by_task(samples, "color")):
        (shape,) = shapes_of(yes)
        wrong = no.metadata["asked"]["color"]
        assert wrong != shape.color and wrong in COLORS
        assert yes.question == f"Is the {shape.kind} {shape.color}? Please answer yes or no."
        assert no.question == f"Is the {shape.kind} {wrong}? Please answer yes or no."
        assert yes.target_region == no.target_region == shape.box


RELATIONS = ("to the left of", "to the right of", "above", "below")


def holds(a: Shape, relation: str, b: Shape) -> bool:
    return {
        "to the left of": a.box[2] <= b.box[0],
        "to the right of": b.box[2] <= a.box[0],
        "above": a.box[3] <= b.box[1],
        "below": b.box[3] <= a.box[1],
    }[relation]


def test_position_questions(samples: list[Sample]) -> None:
    relations: Counter[str] = Counter()
    for yes, no in pairs(by_task(samples, "position")):
        shapes = {s.kind: s for s in shapes_of(yes)}
        assert len(shapes) == 2
        for sample, truth in ((yes, True), (no, False)):
            asked = sample.metadata["asked"]
            a, b = shapes[asked["a"]], shapes[asked["b"]]
            assert holds(a, asked["relation"], b) is truth
            expected = f"Is the {a.kind} {asked['relation']} the {b.kind}?"
            assert sample.question == expected + " Please answer yes or no."
            assert sample.target_region == a.box
        relations[yes.metadata["asked"]["relation"]] += 1
    assert set(relations) == set(RELATIONS)


def test_choice_questions(samples: list[Sample]) -> None:
    choice = by_task(samples, "choice")
    for index, s in enumerate(choice):
        (shape,) = shapes_of(s)
        assert s.answer_type == "choice" and s.pair_group is None and s.l2_category == "perception"
        assert [letter for letter, _ in s.choices] == ["A", "B", "C", "D"]
        texts = [text for _, text in s.choices]
        assert len(set(texts)) == 4
        category = "shape" if index % 2 == 0 else "color"
        assert s.category == category
        if category == "shape":
            assert s.question == "Which shape is shown in the image?" and set(texts) == set(KINDS)
            assert dict(s.choices)[s.answer] == shape.kind
        else:
            assert s.question == "What colour is the shape?" and set(texts) <= set(COLORS)
            assert dict(s.choices)[s.answer] == shape.color
        assert s.target_region == shape.box


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("images", [30, 40])
def test_choice_letters_spread(seed: int, images: int) -> None:
    choice = by_task(build_samples(images_per_task=images, seed=seed), "choice")
    letters = Counter(s.answer for s in choice)
    assert all(letters[letter] >= 0.15 * len(choice) for letter in "ABCD"), letters
    for category in ("shape", "color"):
        assert len({s.answer for s in choice if s.category == category}) == 4


# ---- layout invariants over seeds --------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    task=st.sampled_from(TASKS),
    index=st.integers(min_value=0, max_value=999),
    seed=st.integers(min_value=-(2**40), max_value=2**40),
)
def test_shapes_inside_canvas_and_disjoint(task: str, index: int, seed: int) -> None:
    key = image_key(task, index, seed)
    shapes = scene(key)
    assert shapes
    for shape in shapes:
        x0, y0, x1, y1 = shape.box
        assert 0 <= x0 < x1 <= SIZE and 0 <= y0 < y1 <= SIZE
        assert x1 - x0 >= 56 and y1 - y0 >= 56
    for a, b in itertools.combinations(shapes, 2):
        assert any(holds(a, relation, b) for relation in RELATIONS)
    if task == "position":
        a, b = shapes
        assert [holds(a, relation, b) for relation in RELATIONS].count(True) == 1
    # every drawn pixel lies inside some shape's box, and each centre shows its colour
    image = draw(key)
    masked = image.copy()
    for shape in shapes:
        assert image.getpixel(shape.center) == COLORS[shape.color]
        x0, y0, x1, y1 = shape.box
        ImageDraw.Draw(masked).rectangle((x0, y0, x1 - 1, y1 - 1), fill=BACKGROUND)
    blank = Image.new("RGB", (SIZE, SIZE), BACKGROUND)
    assert ImageChops.difference(masked, blank).getbbox() is None
