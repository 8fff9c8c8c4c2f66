"""The team's own assertions about MyVLM, next to the benchmark scores.

The `mllm_bench`-marked tests run once per benchmark sample when a model is given
(`pytest tests --mllm=my-vlm`) and are skipped otherwise; the plain unit test always runs.
"""

from __future__ import annotations

from typing import Any

import pytest
from PIL import Image, ImageDraw

from my_vlm import MyVLM


@pytest.mark.mllm_bench("shapes", task="color")
def test_colour_answers_are_a_clean_yes_or_no(mllm: Any, mllm_sample: Any) -> None:
    """Downstream parsers rely on a bare "Yes"/"No": no hedging, no explanations."""
    record = mllm.answer(mllm_sample)
    assert record["response"] in ("Yes", "No"), record["response"]
    assert record["parsed"] in ("yes", "no")


@pytest.mark.mllm_bench("shapes", task="color")
def test_never_confirms_a_wrong_colour(mllm: Any, mllm_sample: Any) -> None:
    """Hallucination check: asked about a colour the shape does not have, the model says no."""
    if mllm_sample.answer != "No":
        pytest.skip("the question names the shape's true colour")
    record = mllm.answer(mllm_sample)
    assert record["parsed"] == "no", f"{mllm_sample.question!r} → {record['response']!r}"


def test_sees_shapes_and_colours_in_a_drawn_image() -> None:
    """A plain unit test (no --mllm needed): a red square left, a blue circle right."""
    image = Image.new("RGB", (200, 100), "white")
    canvas = ImageDraw.Draw(image)
    canvas.rectangle((10, 20, 69, 79), fill=(210, 20, 20), outline=(20, 20, 20), width=2)
    canvas.ellipse((120, 20, 179, 79), fill=(20, 60, 210), outline=(20, 20, 20), width=2)
    model = MyVLM()

    seen = model.see(image)

    assert [(o.shape, o.colour) for o in seen] == [("square", "red"), ("circle", "blue")]
    assert model.answer("Is there a circle in the image? Please answer yes or no.", image) == "Yes"
    assert model.answer("Is there a triangle in the image? Please answer yes or no.", image) == "No"
    assert model.answer("Are there two squares in the image? Please answer yes or no.", image) == "No"
    assert model.answer("Is the circle blue? Please answer yes or no.", image) == "Yes"
    assert model.answer("Which shape is shown in the image?\nA. cross\nB. square\nC. circle\n"
                        "Answer with the option's letter from the given choices directly.", image) == "B"
