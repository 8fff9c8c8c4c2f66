"""Turning any sample with a target region into its VRP variant samples.

The variant's question depends on the intervention:

* none: the sample's own question (which locates the target in words); the image is the
  source image, untouched.
* partial: the *marked question*, naming the pointer instead of the location; the prompt.
* full: the marked question is drawn on the image; the prompt is `FULL_PROMPT`.

The marked question, for a marker phrase such as "the red box" (see `marker_phrase`):

1. `metadata["marked_question"]`, with "{marker}" replaced by the marker phrase;
2. else the question with the first occurrence of `metadata["location"]` (the locating
   words, e.g. "in the upper left") replaced by "marked by <marker>", so "Is the object
   in the upper left red?" becomes "Is the object marked by the red box red?";
3. else "Look at the region marked by <marker>. " followed by the question.

The target region is in the first image's pixels; only that image is drawn on.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from PIL import Image

from pytest_mllm.engine.cache import image_digest
from pytest_mllm.engine.images import ImageError, load_image
from pytest_mllm.sample import BadSample, ImageRef, Sample, SkippedSample
from pytest_mllm.vrp.fonts import PILLOW_DEFAULT, find_font_file
from pytest_mllm.vrp.render import COLOR_WORDS, FULL_PROMPT, render
from pytest_mllm.vrp.variants import Variant, default_grid, full_grid

KEY_PREFIX = "vrp-variant/v1"


class NoTargetRegion(ValueError):
    """A sample cannot be varied: it has no target region (or no image to mark)."""


def marker_phrase(variant: Variant) -> str:
    """How a question names the pointer, e.g. "the red box" or "the black ellipse"."""
    return f"the {COLOR_WORDS[variant.color]} {variant.shape}"


def marked_question(sample: Sample, variant: Variant) -> str:
    """The question that refers to the target by its marker (rules in the module docstring)."""
    marker = marker_phrase(variant)
    template = sample.metadata.get("marked_question")
    if isinstance(template, str) and template:
        return template.replace("{marker}", marker)
    location = sample.metadata.get("location")
    if isinstance(location, str) and location and location in sample.question:
        return sample.question.replace(location, f"marked by {marker}", 1)
    return f"Look at the region marked by {marker}. {sample.question}"


@dataclass(frozen=True)
class VariantDrawer:
    """The generator of a variant's image: renders `variant` over the source image.

    Errors (an unreadable source, a region outside it) surface as `ImageError`, which the
    runner confines to the one sample.
    """

    key: str
    source: ImageRef
    region: tuple[float, float, float, float]
    text: str
    variant: Variant

    def __call__(self, key: str) -> Image.Image:
        if key != self.key:
            raise ImageError(f"VRP drawer for {self.key!r} was asked for {key!r}")
        image = load_image(self.source)
        try:
            return render(image, self.region, self.text, self.variant).image
        except ValueError as exc:
            raise ImageError(f"cannot draw VRP variant {self.variant.id}: {exc}") from None


def expand(sample: Sample, variant: Variant) -> Sample:
    """The `variant` of `sample`; `NoTargetRegion` when the sample has no target region.

    The variant keeps the answer, choices and task; its id is "<source id>::<variant id>",
    its metadata gains a "vrp" entry, and its target region moves to
    `metadata["vrp"]["source_region"]` (drawing text may shift the image). The new first
    image is a generated ImageRef whose key names the variant, the font file for the text,
    the region, a digest of the drawn text and the source image's content digest, so equal
    keys mean equal pixels (on one Pillow/FreeType build).
    """
    if sample.target_region is None:
        raise NoTargetRegion(f"sample {sample.id!r} has no target_region to mark")
    if not sample.images:
        raise NoTargetRegion(f"sample {sample.id!r} has no image to mark its target region on")
    region = (
        float(sample.target_region[0]), float(sample.target_region[1]),
        float(sample.target_region[2]), float(sample.target_region[3]),
    )
    question, images, image_text, font_used = sample.question, sample.images, None, None
    if variant.intervention != "none":
        question = marked_question(sample, variant)
        if variant.intervention == "full":
            image_text, question = question, FULL_PROMPT
            path = find_font_file(variant.font)
            font_used = str(path) if path else PILLOW_DEFAULT
        images = (_variant_ref(images[0], region, image_text or "", variant, font_used), *images[1:])
    vrp = {
        "source": sample.id, "variant": variant.id, "intervention": variant.intervention,
        "color": variant.color, "font": variant.font, "shape": variant.shape, "position": variant.position,
        "font_used": font_used, "axes": list(variant.radar_axes), "source_region": list(region),
        "image_text": image_text,
    }
    return dataclasses.replace(
        sample,
        id=f"{sample.id}::{variant.id}",
        question=question,
        images=images,
        pair_group=f"{sample.pair_group}::{variant.id}" if sample.pair_group else None,
        target_region=None,
        metadata={**sample.metadata, "vrp": vrp},
    )


def _variant_ref(
    source: ImageRef, region: tuple[float, float, float, float], text: str, variant: Variant, font_used: str | None
) -> ImageRef:
    """The generated ImageRef that draws `variant` over `source`."""
    key = "/".join((
        KEY_PREFIX,
        variant.id,
        Path(font_used).name if font_used else "-",
        ",".join(f"{v:g}" for v in region),
        hashlib.sha256(text.encode()).hexdigest()[:16],
        _source_identity(source),
    ))
    return ImageRef(
        kind="generated",
        value=key,
        generator=VariantDrawer(key, source, region, text, variant),
        label=f"{Path(source.name).stem}__{variant.id}.png",
    )


def _source_identity(ref: ImageRef) -> str:
    """The source image's content digest (as the response cache computes it).

    An unreadable image gets a placeholder; its variant then errors when drawn, and an
    error is never cached.
    """
    try:
        return image_digest(ref)
    except ImageError:
        return "unreadable:" + hashlib.sha256(f"{ref.kind}:{ref.value}".encode()).hexdigest()[:16]


def with_variants(samples: Sequence[Sample | BadSample | SkippedSample], mode: str,
                  ) -> list[Sample | BadSample | SkippedSample]:
    """Every sample's variants for a VRP run, source by source.

    "grid": the un-intervened sample plus VRPTEST's default grid; "full": every valid
    variant; "property": the sources themselves (hypothesis draws variants at run time).
    A sample without a target region becomes a SkippedSample that says why.
    """
    grid = {"grid": default_grid, "full": full_grid}.get(mode)
    out: list[Sample | BadSample | SkippedSample] = []
    for sample in samples:
        if not isinstance(sample, Sample):
            out.append(sample)
        elif sample.target_region is None or not sample.images:
            out.append(SkippedSample(sample.id, sample.benchmark, sample.task,
                                     "no target region to point at: add target_region to this sample for VRP runs"))
        elif grid is None:
            out.append(sample)
        else:
            out.extend(expand(sample, variant) for variant in grid())
    return out
