"""Property mode: per source sample, hypothesis draws visual-prompt variants and each must keep
the metamorphic relation: the answer is correct and equal to the un-intervened answer.

Runs are deterministic (derandomized, no example database) and skip shrinking, since every
example is a model call. A violating variant is reported with its attributes and the path of
its saved image.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.engine.images import ImageError, load_image
from pytest_mllm.vrp.expand import expand
from pytest_mllm.vrp.variants import Variant, variants

if TYPE_CHECKING:
    from pytest_mllm.harness.items import SampleItem
    from pytest_mllm.harness.session import MllmSession


class RelationViolated(AssertionError):
    """A variant changed the answer, or made it wrong."""


def check_relation(item: "SampleItem", mllm: "MllmSession") -> None:
    """Evaluate the un-intervened sample, then drawn variants; records go on `item.records`."""
    from hypothesis import HealthCheck, Phase, given, settings

    from pytest_mllm.harness.items import SampleFailure

    source, spec = item.sample, item.spec
    base = mllm.evaluator.evaluate([(expand(source, Variant("none")), spec)])[0]  # type: ignore[arg-type]
    base["order"] = item.order
    seen: dict[str, dict[str, Any]] = {base["id"]: base}  # hypothesis may draw a variant twice
    item.records = [base]
    if base["status"] == "error":
        raise SampleFailure(base["error"])

    @settings(max_examples=mllm.options.vrp_examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(variants(interventions=("partial", "full")))
    def relation_holds(variant: Variant) -> None:
        sample = expand(source, variant)  # type: ignore[arg-type]
        record = mllm.evaluator.evaluate([(sample, spec)])[0]
        record["order"] = item.order
        seen[record["id"]] = record
        item.records = list(seen.values())
        if record["status"] == "error":
            raise SampleFailure(record["error"])
        if not record["correct"] or record["parsed"] != base["parsed"]:
            saved = _save_variant_image(sample, mllm, variant)
            raise RelationViolated(
                f"variant {variant.id} ({_attributes(variant)}) answered {record['response']!r} → "
                f"{record['parsed']!r}; expected {record['answer']!r}, un-intervened answer {base['parsed']!r}; "
                f"variant image: {saved}")

    relation_holds()


def _attributes(variant: Variant) -> str:
    return (f"intervention={variant.intervention}, color={variant.color}, font={variant.font}, "
            f"shape={variant.shape}, position={variant.position}")


def _save_variant_image(sample: Any, mllm: "MllmSession", variant: Variant) -> Path | str:
    """Write the variant's image next to the response cache, for a person to look at."""
    folder = mllm.options.cache_path.parent / "vrp_failures"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{sample.benchmark}__{sample.id.replace('::', '__').replace('/', '_')}.png"
    try:
        load_image(sample.images[0], mllm.options.max_pixels).save(path)
    except (ImageError, OSError) as exc:
        return f"(not saved: {exc})"
    return path
