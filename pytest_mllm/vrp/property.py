"""Property mode: per source sample, hypothesis draws visual-prompt variants and each must keep
the metamorphic relation: the answer is correct and equal to the un-intervened answer.

Runs are deterministic (derandomized, no example database) and skip shrinking, since every
example is a model call. A violating variant is reported with its attributes and the path of
its saved image.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_mllm.engine.images import ImageError, load_image
from pytest_mllm.engine.spec import BenchmarkSpec
from pytest_mllm.record import MessageOnly, Record, SampleError
from pytest_mllm.sample import Sample
from pytest_mllm.vrp.expand import expand
from pytest_mllm.vrp.variants import Variant, variants


class RelationViolated(MessageOnly, AssertionError):
    """A variant changed the answer, or made it wrong."""


def check_relation(source: Sample, spec: BenchmarkSpec, answer: Callable[[Sample, BenchmarkSpec], Record], *,
                   examples: int, keep: Callable[[list[Record]], None], failures: Path, max_pixels: int) -> None:
    """Answer the un-intervened sample, then `examples` drawn variants; `keep` receives the records so far
    (the test's records survive a violation), a violating variant's image is saved under `failures`."""
    from hypothesis import HealthCheck, Phase, given, settings

    base = answer(expand(source, Variant("none")), spec)
    seen: dict[str, Record] = {base["id"]: base}  # hypothesis may draw a variant twice
    keep([base])
    if base["status"] == "error":
        raise SampleError(base["error"])

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(variants(interventions=("partial", "full")))
    def relation_holds(variant: Variant) -> None:
        sample = expand(source, variant)
        record = answer(sample, spec)
        seen[record["id"]] = record
        keep(list(seen.values()))
        if record["status"] == "error":
            raise SampleError(record["error"])
        if not record["correct"] or record["parsed"] != base["parsed"]:
            saved = _save_variant_image(sample, failures, max_pixels)
            raise RelationViolated(
                f"variant {variant.id} ({_attributes(variant)}) answered {record['response']!r} → "
                f"{record['parsed']!r}; expected {record['answer']!r}, un-intervened answer {base['parsed']!r}; "
                f"variant image: {saved}")

    relation_holds()


def _attributes(variant: Variant) -> str:
    return (f"intervention={variant.intervention}, color={variant.color}, font={variant.font}, "
            f"shape={variant.shape}, position={variant.position}")


def _save_variant_image(sample: Any, folder: Path, max_pixels: int) -> Path | str:
    """Write the variant's image for a person to look at."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sample.benchmark}__{sample.id.replace('::', '__').replace('/', '_')}.png"
    try:
        load_image(sample.images[0], max_pixels).save(path)
    except (ImageError, OSError) as exc:
        return f"(not saved: {exc})"
    return path
