"""What a user can run without reading the source: the bundled benchmarks for `--mllm-list`, and their
markers: every bundled benchmark's for `pytest --markers` (reading every spec is not free), a run's
own benchmarks' when it starts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pytest

from pytest_mllm.engine.catalogue import listing_lines
from pytest_mllm.engine.fetch import describe
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, all_aliases, bundled_specs, load_spec
from pytest_mllm.harness.items import marker_name
from pytest_mllm.scoring.gates import MetricSpace
from pytest_mllm.sections import all_sections


def bundled() -> Iterator[tuple[str, BenchmarkSpec]]:
    """(name --mllm-bench takes, spec) of every bundled benchmark that can be read, by name."""
    for key, path in sorted(bundled_specs().items()):
        try:
            yield key, load_spec(path)
        except SpecError:
            continue  # a broken bundled spec fails the tests; listing the others still helps


def markers(spec: BenchmarkSpec) -> list[tuple[str, str]]:
    """(marker, what it names) for the benchmark (by each name it answers to), its groups and the tasks its
    spec names."""
    found = [*((marker_name(name), "benchmark") for name in spec.names),
             *((marker_name(group), "group") for group in spec.groups),
             *((marker_name(task), "task") for task in spec.task_order)]
    return list(dict.fromkeys((marker, kind) for marker, kind in found if marker))


def register_markers(config: pytest.Config, specs: Iterable[BenchmarkSpec] | None = None) -> None:
    """The markers of `specs` (default: every bundled benchmark), so that `pytest --markers` lists them and
    --strict-markers accepts them."""
    named: dict[str, dict[str, list[str]]] = {}  # marker → kind → benchmarks
    for spec in (spec for _, spec in bundled()) if specs is None else specs:
        for marker, kind in markers(spec):
            benchmarks = named.setdefault(marker, {}).setdefault(kind, [])
            if spec.name not in benchmarks:
                benchmarks.append(spec.name)
    for marker, kinds in named.items():
        text = "; ".join(kind if kind == "benchmark" and benchmarks == [marker] else f"{kind} of {', '.join(benchmarks)}"
                         for kind, benchmarks in kinds.items())
        config.addinivalue_line("markers", f"{marker}: pytest-mllm {text}")


def gate_paths(spec: BenchmarkSpec) -> str:
    """The metric paths a gate on this benchmark can name, in one line."""
    space = MetricSpace.of(spec.metrics, ())
    if space.values is None:
        return f"{spec.name}.<metric> (a metric of a plugin: its names are not declared)"
    paths = [f"{spec.name}.<metric>", f"{spec.name}.<task or group> (its {spec.headline})",
             f"{spec.name}.<task or group>.<metric>"]
    if space.categories:
        paths.append(f"{spec.name}.category.<name>.<metric>, {spec.name}.l2_category.<name>.<metric>")
    for section in all_sections():
        keys = section.gate_keys() if section.fills(spec) else ()
        if keys:
            paths.append(", ".join([f"{spec.name}.{keys[0]}", *(f".{key}" for key in keys[1:])]))
    shadowed = [name for name in (*spec.task_order, *spec.groups) if name in space.values]
    return "; ".join(paths) + "; metrics: " + ", ".join(sorted(space.values)) + "".join(
        f"; {spec.name}.{name} is that metric, the {name} task's {spec.headline} is {spec.name}.{name}.{spec.headline}"
        for name in shadowed)


def listing() -> str:
    """The text of `pytest --mllm-list`."""
    others: dict[str, list[str]] = {}
    for alias, name in all_aliases().items():
        others.setdefault(name, []).append(alias)
    lines = ["Bundled benchmarks (--mllm-bench=NAME; other tools' names in brackets are accepted too)", ""]
    for key, spec in bundled():
        aliases = f" [{', '.join(others[key])}]" if key in others else ""
        version = f" (version {spec.version})" if spec.version else ""
        lines.append(f"{key}{aliases}: {spec.name}{version}, {spec.description or spec.loader}")
        tasks = ", ".join(spec.task_order) if spec.task_order else "named by the data"
        lines.append(f"  tasks: {tasks}")
        lines.append(f"  groups: {', '.join(spec.groups) or 'none'}; headline: {spec.headline}")
        lines.append(f"  markers (-m): {', '.join(marker for marker, _ in markers(spec))}")
        lines.append(f"  gate paths: {gate_paths(spec)}")
        if not spec.needs_data:
            lines.append("  data: none (drawn on the spot)")
        elif spec.download is not None:
            lines.append(f"  data: {describe(spec.download)}, fetched on first use into the data cache (for an offline "
                         f"machine: pytest-mllm-data fetch {spec.name}); or pass --mllm-data={spec.name}=DIR or set "
                         f"{spec.env_var}")
        else:
            lines.append(f"  data: {spec.about.source or 'see the spec'}; pass --mllm-data={spec.name}=DIR or set "
                         f"{spec.env_var}")
        lines.append("")
    return "\n".join([*lines, *registered(), *listing_lines(all_aliases())])


def registered() -> list[str]:
    """What a spec and --mllm can name, read from the registries."""
    from pytest_mllm.engine.spec import LOADERS
    from pytest_mllm.models.registry import known_names
    from pytest_mllm.scoring.metrics import known_metrics
    from pytest_mllm.scoring.score import PARSERS

    return [f"Loaders (a spec's loader:): {', '.join(sorted(LOADERS.names()))}",
            f"Answer parsers (parser:): {', '.join(sorted(PARSERS.names()))}",
            f"Metrics (metrics:): {', '.join(sorted(known_metrics()))}",
            f"Models (--mllm): {', '.join(known_names())}", ""]
