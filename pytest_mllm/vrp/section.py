"""VRPTEST's section: accuracy per intervention level and radar axis, the metamorphic relation, the
radar chart (terminal, HTML, `--mllm-vrp-radar`), and the variant each record was asked under."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_mllm.sections import (HtmlPage, HtmlPart, OptionRange, OutputFile, Section, check_ranges, percent,
                                  register_section)
from pytest_mllm.vrp.metrics import VARIANT

_RELATION = ("consistency", "relation_holds", "sensitivity")
MAX_EXAMPLES = 1 << 20


@dataclass(frozen=True)
class VrpSettings:
    """A run's variant settings: --mllm-vrp (None: each spec's `variants`) and --mllm-vrp-examples."""

    mode: str | None = None
    examples: int = 8  # variants drawn per source in property mode

    def describe(self) -> dict[str, Any]:
        return {}  # the variants are in every record

    def inputs(self) -> dict[str, Path | None]:
        return {}

    def mode_of(self, spec: Any) -> str:
        """How variants apply to a benchmark: the run's setting, else its spec's `variants`."""
        return self.mode or spec.variants


class VrpSection(Section):
    title = "Visual referring prompts (VRPTEST)"
    metrics = ("vrp",)
    gate_values = _RELATION
    gate_patterns = (r"vrp\.(?:level|axis)\.[^.]+\.accuracy",)
    outputs = (OutputFile("--mllm-vrp-radar", suffix=".png"),)
    record_parts = (VARIANT,)

    def read_options(self, option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> VrpSettings:
        """--mllm-vrp and --mllm-vrp-examples (at least 1)."""
        check_ranges(option, (OptionRange("mllm_vrp_examples", 1, MAX_EXAMPLES, "at least 1"),))
        return VrpSettings(option("mllm_vrp"), option("mllm_vrp_examples"))

    def expand(self, settings: VrpSettings | None, spec: Any, samples: list[Any]) -> list[Any]:
        """Every sample's variants in grid and full mode (`vrp/expand.py`); the sources in property mode."""
        mode = (settings or VrpSettings()).mode_of(spec)
        if mode == "none":
            return samples
        from pytest_mllm.vrp.expand import with_variants

        return with_variants(samples, mode)

    def sample_check(self, settings: VrpSettings | None, spec: Any, run: Any) -> Callable[..., None] | None:
        """Property mode: drawn variants of each source must keep the metamorphic relation."""
        settings = settings or VrpSettings()
        if settings.mode_of(spec) != "property":
            return None
        from pytest_mllm.vrp.property import check_relation

        def check(sample: Any, answer: Any, keep: Callable[[list[Any]], None]) -> None:
            check_relation(sample, spec, answer, examples=settings.examples, keep=keep, max_pixels=run.max_pixels,
                           failures=run.cache_path.parent / "vrp_failures")

        return check

    def fills(self, spec: Any) -> bool:
        """A benchmark asked with variants, or the generated scenes."""
        return bool(spec.variants != "none" or spec.loader == "vrp_shapes")

    def sample_unit(self, sample: Any) -> str | None:
        """A variant's unit: its pair group less the variant (the pair of questions on one source image), else
        its source image."""
        vrp = sample.metadata.get("vrp") if isinstance(sample.metadata, dict) else None
        if not isinstance(vrp, dict):
            return None
        group, suffix = sample.pair_group, f"::{vrp.get('variant')}"
        if group:
            return f"pair:{group.removesuffix(suffix) if vrp.get('variant') else group}"
        return f"source:{vrp['source']}" if vrp.get("source") else None

    def flat(self, part: Mapping[str, Any]) -> dict[str, float]:
        """The relation's values, then `vrp.level.<level>.accuracy` and `vrp.axis.<axis>.accuracy`."""
        flat = super().flat(part)
        for kind, prefix in (("levels", "vrp.level"), ("axes", "vrp.axis")):
            for name, scope in part.get(kind, {}).items():
                flat[f"{prefix}.{name}.accuracy"] = scope["accuracy"]
        return flat

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        """Accuracy per intervention level and radar axis, consistency, sensitivity."""
        from rich.table import Table

        table = Table(title=f"{benchmark} · visual referring prompts", title_justify="left", show_edge=False)
        for col, justify in (("kind", "left"), ("name", "left"), ("n", "right"), ("acc %", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for level, scope in part["levels"].items():
            table.add_row("level", level, str(scope["count"]), percent(scope["accuracy"]))
        for axis, scope in part["axes"].items():
            table.add_row("axis", axis, str(scope["count"]), percent(scope["accuracy"]))
        for name in _RELATION:
            table.add_row("relation", name.replace("_", " "), "", percent(part.get(name)), style="bold")
        return [table]

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        return [f"- {benchmark}, visual referring prompts: relation holds {percent(part.get('relation_holds'))} %, "
                f"consistency {percent(part.get('consistency'))} %, sensitivity {percent(part.get('sensitivity'))} pp"]

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        """Accuracy per level and radar axis, the relation, and the radar chart."""
        radar = None
        if page.charts:
            from markupsafe import Markup

            from pytest_mllm.vrp.radar import radar_svg

            radar = Markup(radar_svg(parts))
        return HtmlPart(self.name, self.title, page.render("vrp.html.j2", benchmarks=parts, radar=radar))

    def write(self, option: str, path: Path, results: Mapping[str, Any]) -> str | None:
        """The radar chart over every benchmark of the run."""
        from pytest_mllm.vrp.radar import write_radar

        write_radar({name: r.scopes.get(self.name) or {} for name, r in results.items()}, path)
        return None


register_section("vrp", VrpSection())
