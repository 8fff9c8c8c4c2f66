"""The estimate's section: a subset run's estimates of the full benchmark, labelled as estimates in every
output (terminal, JSON, JUnit, Markdown, HTML), standing in for the measured values in the gates, and its
own pairing with a full baseline for the regression limits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_mllm.estimate.parts import DRAW
from pytest_mllm.estimate.summary import LABEL, shown_keys
from pytest_mllm.record import Record
from pytest_mllm.scoring.uncertainty import LEVEL
from pytest_mllm.sections import HtmlPage, HtmlPart, Section, StandIn, is_points_key, register_section

_LOW, _HIGH = "ci_low", "ci_high"


def number(key: str, value: float | None) -> str:
    """A value as tables show it: a rate in % (two decimals), points as they are."""
    if value is None:
        return "–"
    return f"{value:.2f}" if is_points_key(key.split(".")[-1]) else f"{100 * value:.2f}"


def unit_of_key(key: str) -> str:
    return "pts" if is_points_key(key.split(".")[-1]) else "%"


def about(part: Mapping[str, Any]) -> str:
    """The subset and its design in one line."""
    return (f"{LABEL} from {part['samples_run']} of {part['samples']} samples ({part['units_run']} of {part['units']} "
            f"units), {part['method_text']}, size {part['size']}, seed {part['seed']}, panel {part['panel']}")


class EstimateSection(Section):
    title = "Estimated full-benchmark scores (a subset run)"
    gate_patterns = (r"estimate\..+",)
    record_parts = (DRAW,)
    derived = True

    def derive(self, records: Sequence[Record], setup: Any) -> dict[str, Any] | None:
        from pytest_mllm.estimate.summary import estimate_part

        if not any(DRAW.get(r) is not None for r in records):
            return None
        return estimate_part(records, setup)

    def flat(self, part: Mapping[str, Any]) -> dict[str, float]:
        """`estimate.<key>` for each estimated key, with `.ci_low` and `.ci_high`; the samples run and in all."""
        flat: dict[str, float] = {"estimate.samples_run": part["samples_run"], "estimate.samples": part["samples"]}
        for key, found in part["values"].items():
            flat[f"estimate.{key}"] = found["value"]
            if found["ci"]:
                flat[f"estimate.{key}.{_LOW}"], flat[f"estimate.{key}.{_HIGH}"] = found["ci"]
        return flat

    def stand_in(self, flat: Mapping[str, float], key: str) -> StandIn | None:
        if key.endswith((f".{_LOW}", f".{_HIGH}")) or "estimate.samples" not in flat:
            return None
        base = key.removeprefix("estimate.")
        value = flat.get(f"estimate.{base}")
        subset = f"{flat['estimate.samples_run']:g} of {flat['estimate.samples']:g} samples"
        if value is None:  # a subset run's value that is not estimated: never taken for the full run's
            measured = flat.get(key)
            return None if measured is None else StandIn(
                measured, None, None, LEVEL, f"not estimated ({base} is not a ratio of counts): the subset's own value, "
                                             f"{subset}")
        return StandIn(value, flat.get(f"estimate.{base}.{_LOW}"), flat.get(f"estimate.{base}.{_HIGH}"), LEVEL,
                       f"{LABEL} from {subset}")

    def pair(self, base: Sequence[Record], head: Sequence[Record], setup: Any) -> Any | None:
        if not any(DRAW.get(r) is not None for r in head):
            return None
        from pytest_mllm.estimate.comparison import EstimatedComparison

        return EstimatedComparison(base, head, setup)

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        """The estimates per scope with their intervals, beside the subset's own values; what they rest on."""
        from rich.table import Table
        from rich.text import Text

        table = Table(title=f"{benchmark} · ESTIMATE of the full benchmark (not a full run): {about(part)}",
                      title_justify="left", show_edge=False)
        level = f"{part['level']:.0%}"
        for col, justify in (("scope", "left"), ("value", "left"), ("estimate", "right"), (f"{level} interval", "right"),
                             ("±", "right"), ("subset's own", "right")):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        for label, key in shown_keys(part):
            found = part["values"][key]
            low, high = found["ci"] or (None, None)
            half = (high - low) / 2 if low is not None else None
            table.add_row(label, f"{key.split('.')[-1]} ({unit_of_key(key)})", f"{number(key, found['value'])} est.",
                          f"{number(key, low)}–{number(key, high)}" if low is not None else "–",
                          number(key, half), number(key, found["measured"]))
        lines = [f"{benchmark}: the score table above holds the subset's own scores; the estimates are of the whole "
                 f"benchmark's. Assumption: {part['assumption']}.", *(f"{benchmark}: {n}" for n in part["notes"])]
        return [table, *(Text(line) for line in lines)]

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        values = part["values"]
        head = part["headline"] if part["headline"] in values else "accuracy"
        if head not in values:
            return [f"- {benchmark}: **{LABEL}** (not a full run) — none computed ({'; '.join(part['notes'])})"]
        found = values[head]
        low, high = found["ci"] or (None, None)
        interval = (f"{part['level']:.0%} interval {number(head, low)}–{number(head, high)} {unit_of_key(head)}"
                    if low is not None else "no interval")
        return [f"- {benchmark}: **{LABEL}** (not a full run) {head} **{number(head, found['value'])} "
                f"{unit_of_key(head)}** ({interval}; the subset's own {number(head, found['measured'])}) — "
                f"{about(part)}"]

    def junit(self, benchmark: str, flat: Mapping[str, float], part: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """`<benchmark>.estimate`: what the estimates are; each shown estimate with its interval."""
        if part is None:
            return super().junit(benchmark, flat)
        properties: dict[str, Any] = {
            f"{benchmark}.estimate": about(part),
            f"{benchmark}.subset": f"not a full run: the plain {benchmark}.<metric> properties are the subset's own "
                                   f"({part['samples_run']} of {part['samples']} samples); {benchmark}.estimate.<metric> "
                                   "estimate the whole benchmark's"}
        for _, key in shown_keys(part):
            found = part["values"][key]
            properties[f"{benchmark}.estimate.{key}"] = found["value"]
            if found["ci"]:
                properties[f"{benchmark}.estimate.{key}.ci95"] = "[{:.6g}, {:.6g}]".format(*found["ci"])
        return properties

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        rows = {name: [(label, key, part["values"][key]) for label, key in shown_keys(part)]
                for name, part in parts.items()}
        body = page.render("estimate.html.j2", parts=parts, rows=rows, about={n: about(p) for n, p in parts.items()},
                           number=number, unit_of_key=unit_of_key)
        return HtmlPart(self.name, self.title, body)


register_section("estimate", EstimateSection())
