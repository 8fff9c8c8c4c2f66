"""Sections: what a method or a metric family adds to a benchmark's results beside accuracy, and how
every output shows it.

A `Section` is one object per method (VRPTEST, the CEE judge, TP-Eval, …) or metric family. It
declares the metrics it shows (by their registered name), the values its metrics add to every scope
(`Column`: unit and header), the part of the benchmark's scopes it owns (`scopes[section.name]`), the
gate keys that part yields, its terminal tables, its part of the HTML report, its JUnit properties,
its Markdown lines, the files it writes and the parts it adds to each record (`record.RecordPart`).
A section may also derive its part once from a benchmark's records after the metrics (`derive`: values with
an uncertainty of their own, never recomputed on bootstrap resamples), stand in for measured values in the
gates (`stand_in`: an estimate of the full run from a subset, decided on its interval), and pair a run with a
baseline itself (`pair`). With its run settings (`read_options`), a section may also check a benchmark's samples
before their tests are collected (`check_samples`), keep samples out of the tests (`set_aside`), change how a batch
is answered (`wrap_answer`), make the run work per task instead of per sample (`task_job`), give the verdicts of the
parsers naming it (`verdict_step`) and take a second pass over every answered batch (`review_step`: an LLM revising
the verdicts the rules could not decide). The generic outputs (`report/`, `scoring/gates.py`, `harness/junit.py`)
and the core (`engine/evaluator.py`, `evaluation.py`) iterate over the registered sections and never name one.

A section registers itself where it is defined, by a top-level line `register_section("name", …)`
(in the package, a `section.py` of the method's package or a `<family>_section.py` beside the family's
module, which import nothing heavy). `SECTIONS` is a `pytest_mllm.registry.Registry` like the loaders',
parsers' and metrics': its index is read from those lines in the source, and `all_sections()` imports
the modules on first use, so a section added to the package is one module and no edit elsewhere. A
plugin or a conftest registers its own the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from pytest_mllm.record import RecordPart
from pytest_mllm.registry import Registry

Unit = Literal["rate", "points", "number"]


@dataclass(frozen=True)
class Column:
    """A value a section's metrics add to every scope (overall, groups, tasks), as tables show it.

    `unit`: "rate" (a fraction 0–1 in the JSON and in gates, shown in %), "points" (shown as is, said
    in `unit_note`), "number". `table`: None puts it in the score table; a title shows it in a terminal
    table of its own (the HTML report's score table shows it either way). `shown` False: a value with
    a unit only (the JSON and gates hold it, no table shows it, unless it is the headline).
    `categories`: also a column of the category table. `note`: a line said under a table showing it.
    """

    key: str
    header: str  # names its unit: "acc+ %", "score pts"
    unit: Unit = "rate"
    table: str | None = None
    shown: bool = True
    categories: bool = False
    unit_note: str = ""  # its unit in words, for tables and gates ("MME scores in points")
    note: str = ""
    chart_label: str = ""  # a rate drawn beside accuracy in the HTML report's per-task chart, under this name


@dataclass(frozen=True)
class OutputFile:
    """A file a section writes at the end of a run, asked for by a command-line option."""

    option: str  # "--mllm-…", as the option is declared
    folder: bool = False  # the option names a folder the section writes into
    suffix: str = ""  # the file's usual suffix (".png"), for the example path of an error message


@dataclass(frozen=True)
class HtmlPart:
    """A section's part of the HTML report; `body` is markup whose values are already escaped."""

    id: str
    title: str
    body: Any  # markupsafe.Markup


@dataclass(frozen=True)
class StandIn:
    """A value a section's part gives in place of a measured one (an estimate of the full run's value from a
    subset), with its interval: gates decide on the interval and say so (`note`)."""

    value: float
    low: float | None
    high: float | None
    level: float
    note: str  # what the value is, in words ("estimate from 72 of 360 samples, stratified by difficulty")


class HtmlPage(Protocol):
    """What the HTML report lends a section to build its part (`report/html.py`)."""

    @property
    def charts(self) -> bool:
        """Whether charts can be drawn (matplotlib is installed)."""

    @property
    def settings(self) -> Mapping[str, Any]:
        """The run's settings, as the results document holds them."""

    def render(self, template: str, **context: Any) -> Any:
        """A template of the report's folder, rendered with autoescaping, as markup."""

    def bar_chart(self, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], *,
                  axis_label: str, axis_max: float | None = None,
                  bar_groups: Sequence[str | None] | None = None) -> Any:
        """Horizontal bars as inline SVG: one row per label, one bar per (name, values) series; with one
        series, `bar_groups` colours each bar by its group."""


class RunSettings(Protocol):
    """A section's settings for one run (`Section.read_options`)."""

    def describe(self) -> dict[str, Any]:
        """The settings as the results file records them (beside the run's own)."""

    def inputs(self) -> dict[str, Path | None]:
        """The files the run reads for it, by what they are ("the --mllm-… file"): no output may overwrite them."""


# records of (sample, spec) pairs, one per pair in order (`evaluation.Answer` of a batch)
BatchAnswer = Callable[[Sequence[tuple[Any, Any]]], list[Any]]
# (record, sample, read through VLMEvalKit's .xlsx?) triples whose verdict is the step's, set in place
VerdictStep = Callable[[Sequence[tuple[Any, Any, bool]]], None]
# every (record, sample) pair of an answered batch, once every verdict is given: the step may revise them in place
ReviewStep = Callable[[Sequence[tuple[Any, Any]]], None]


class Section:
    """One method's or metric family's results beside accuracy. Subclass it (or, for declarations
    alone, pass them as keywords: `Section(title=…, columns=…)`), set what applies, and register an
    instance with `register_section`; every method has a default that adds nothing."""

    name: str = ""  # unique, set by `register_section`; the key of its part of a benchmark's scopes, when it has one
    title: str = ""  # in words, for headings
    metrics: tuple[str, ...] = ()  # the registered metrics (by name) whose results it shows
    columns: tuple[Column, ...] = ()
    gate_values: tuple[str, ...] = ()  # numbers of its part a gate may name as `<name>.<value>`
    gate_patterns: tuple[str, ...] = ()  # regular expressions of further gate keys its data names
    outputs: tuple[OutputFile, ...] = ()
    record_parts: tuple[RecordPart[Any], ...] = ()
    derived: bool = False  # its part comes from `derive`, once per result, never from resampled records

    def __init__(self, **declared: Any) -> None:
        for attribute, value in declared.items():
            if attribute not in _DECLARED:
                raise TypeError(f"Section() got {attribute!r}; declared attributes: {', '.join(_DECLARED)}")
            setattr(self, attribute, value)

    def fills(self, spec: Any) -> bool:
        """Whether its part is in this benchmark's results (a `BenchmarkSpec`) whatever the run's options:
        `--mllm-list` shows its gate keys among the benchmark's gate paths."""
        return False

    def expand(self, settings: Any, spec: Any, samples: list[Any]) -> list[Any]:
        """A benchmark's samples (of a `BenchmarkSpec`) with those the method adds to them (variants of each),
        from its `read_options` settings (None: it has none for this run); by default as they are."""
        return samples

    def sample_check(self, settings: Any, spec: Any, run: Any) -> Callable[..., None] | None:
        """What a sample's test checks instead of its one answer (`evaluation.SampleCheck`), from its settings and
        the run's `evaluation.EvaluationSettings`; None: a sample's test checks its answer."""
        return None

    def sample_unit(self, sample: Any) -> str | None:
        """The unit a `Sample` is kept with when the method ties samples together (a variant with its
        source): every sample of a unit runs on one shard (`harness/shard.py`); None: not the method's."""
        return None

    def gate_keys(self) -> tuple[str, ...]:
        """The flat keys of its part known by name before a run (`vrp.consistency`)."""
        return tuple(f"{self.name}.{value}" for value in self.gate_values)

    def flat(self, part: Mapping[str, Any]) -> dict[str, float]:
        """Its part of a benchmark's scopes as flat keys: the namespace of gates and comparisons."""
        return {f"{self.name}.{value}": part[value] for value in self.gate_values if part.get(value) is not None}

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        """Rich renderables for the terminal summary, from its part of one benchmark's scopes."""
        return []

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart | None:
        """Its part of the HTML report over {benchmark: its part}, or None."""
        return None

    def html_task_chart(self, tasks: Mapping[str, Mapping[str, Any]], group_of: Mapping[str, str | None],
                        page: HtmlPage) -> tuple[str, Any] | None:
        """(caption, svg): the HTML report's per-task chart of a benchmark whose task scopes it fills, drawn
        instead of accuracy per task; None leaves that chart to the report."""
        return None

    def junit(self, benchmark: str, flat: Mapping[str, float], part: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Suite properties of one benchmark: by default every flat key of its part."""
        prefix = f"{self.name}."
        return {f"{benchmark}.{key}": value for key, value in flat.items() if key.startswith(prefix)}

    def derive(self, records: Sequence[Any], setup: Any) -> dict[str, Any] | None:
        """With `derived`: its part of a benchmark's results from the benchmark's records (in collection order)
        and metric setup (`scoring.uncertainty.MetricSetup`), or None when it has none there."""
        return None

    def stand_in(self, flat: Mapping[str, float], key: str) -> StandIn | None:
        """What stands in for the measured value of a flat `key` of a benchmark whose flat metrics are `flat`
        (a gate then decides on its interval), or None: the measured value stands."""
        return None

    def pair(self, base: Sequence[Any], head: Sequence[Any], setup: Any) -> Any | None:
        """This run's records (`head`) compared with a baseline's (`base`) for the regression limits, when this
        section's records need their own comparison (a `scoring.significance.PairedComparison`'s `drop_test`),
        else None."""
        return None

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        """Lines for the Markdown summary, from its part of one benchmark's scopes."""
        return []

    def comparable(self, before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
        """Why a benchmark's two runs, holding these parts (empty where a run has none), cannot be compared: a
        difference between them would be no regression (graded by different judges); None when they can."""
        return None

    def read_options(self, option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> RunSettings | None:
        """Its settings for a run, from its command-line options (`option("mllm_…")`, declared in `plugin.py`)
        and the run's benchmarks ({name: the answer parsers its spec names}); ValueError names the option and
        the fix, before anything runs. None: it has none."""
        return None

    def uses_cache(self, settings: Any) -> bool:
        """Whether, with its `read_options` settings, the run makes calls of its own that the response cache keeps
        (an LLM's replies besides the model's answers): the cache is then opened even for a model answering without
        work."""
        return False

    def run_outputs(self, settings: Any) -> dict[str, Path]:
        """{option: file} of the files the run writes as it goes, from its settings (a file written task by task):
        checked before anything runs like the output files, never one of the run's inputs."""
        return {}

    def check_samples(self, settings: Any, spec: Any, samples: Sequence[Any], run: Any) -> None:
        """Check a benchmark's samples (of a `BenchmarkSpec`, as `expand` left them) against its settings and the
        run's `evaluation.EvaluationSettings`, once per benchmark before their tests are collected; ValueError names
        the file or option and the fix."""

    def set_aside(self, settings: Any, sample: Any) -> bool:
        """Whether the run keeps a `Sample` out of its tests (its answer could not be scored fairly: the sample
        served to tune how the benchmark is asked); asked of every sample, only where the section has settings for
        the run (`read_options`); False by default."""
        return False

    def wrap_answer(self, settings: Any, answer: BatchAnswer) -> BatchAnswer:
        """How the run answers a batch of (sample, spec) pairs, given `answer`, the evaluator's (or the sections'
        before it): by default `answer` itself; a section may ask under another spec, keep a second answer in each
        record (a `RecordPart`), or make a record an error. One record per pair, in order. Called once, when the
        evaluation starts: a file the section needs is read then (a `record.MessageOnly` error stops the run)."""
        return answer

    def task_job(self, settings: Any, run: Any, answer: BatchAnswer, cache: Any) -> Any | None:
        """The job the run does per task instead of answering samples (an `evaluation.TaskJob`: one test per
        task), built once per process from its settings, the run's `evaluation.EvaluationSettings`, the evaluator's
        `answer` and the response cache (None when off); None: the run answers samples."""
        return None

    def verdict_step(self, settings: Any, run: Any, cache: Any) -> VerdictStep:
        """The step giving the verdicts of the parsers naming it (`scoring.score.Parser.verdict_by`), built once
        per run from its `read_options` settings, the run's `evaluation.EvaluationSettings` and the response
        cache (None when off)."""
        raise NotImplementedError(f"section {self.name!r} gives no verdicts")

    def review_step(self, settings: Any, run: Any, cache: Any) -> ReviewStep | None:
        """A second pass over every answered batch, after the parsers' and the sections' verdicts: it gets the
        batch's (record, sample) pairs and may revise a verdict in place (an LLM reading the answers the rules
        could not decide). Built once per run from its `read_options` settings, the run's
        `evaluation.EvaluationSettings` and the response cache (None when off); None: no second pass."""
        return None

    def describe(self, settings: Any) -> dict[str, Any]:
        """Its settings as the results file records them (beside the run's own), from its `read_options` settings
        (None: it has none this run): by default theirs, else nothing."""
        return settings.describe() if settings is not None else {}

    def write(self, option: str, path: Path, results: Mapping[str, Any]) -> str | None:
        """Write the file `option` asks for, from {benchmark: `report.results.BenchmarkResult`}; what was
        written ("radar chart"), or None when nothing is said about it."""
        raise NotImplementedError(f"section {self.name!r} declares {option} but does not write it")


_DECLARED = ("name", "title", "metrics", "columns", "gate_values", "gate_patterns", "outputs", "record_parts",
             "derived")


def percent(value: Any) -> str:
    """A rate as tables show it: in % with two decimals; a missing one as a dash."""
    if value is None:
        return "–"
    return f"{100 * value:.2f}" if isinstance(value, float) else str(value)


SECTIONS: Registry[Section] = Registry("section", "register_section")


@dataclass(frozen=True)
class OptionRange:
    """A numeric option's bounds, checked where its settings are read (`check_ranges`)."""

    name: str  # its dest, "mllm_…"
    lowest: float
    highest: float | None  # None: no upper bound
    wanted: str  # what it must be, in words ("at least 1")
    above: bool = False  # `lowest` itself is refused


def check_ranges(option: Callable[[str], Any], ranges: Sequence[OptionRange]) -> None:
    """Each option of `ranges` that is set is a number (not nan, not inf) within its bounds; ValueError names the
    option, what it must be and the value given."""
    for bound in ranges:
        value = option(bound.name)
        if value is None:
            continue
        flag = f"--{bound.name.replace('_', '-')}"
        if not math.isfinite(value) or value < bound.lowest or (bound.above and value == bound.lowest):
            raise ValueError(f"{flag} must be {bound.wanted}, got {value}")
        if bound.highest is not None and value > bound.highest:
            raise ValueError(f"{flag} must be at most {bound.highest}, got {value}")


def register_section(name: str, section: Section) -> Section:
    """Register `section` as `name`, the key of its part of a benchmark's scopes: a top-level line of the
    module defining it (the registry's index reads it there). Its columns' keys may not be another's."""
    if section.name and section.name != name:
        raise ValueError(f"{type(section).__name__} is named {section.name!r}, not {name!r}")
    section.name = name
    owners = {c.key: other for other, s in SECTIONS.loaded().items() if other != name for c in s.columns}
    clash = next((c.key for c in section.columns if c.key in owners), None)
    if clash is not None:
        raise ValueError(f"section {name!r}: column {clash!r} is another section's ({owners[clash]!r})")
    return SECTIONS.declare(name, section)


def all_sections() -> tuple[Section, ...]:
    """The registered sections (each defining module imported): the package's in the order of their modules'
    names, then those registered at run time."""
    return tuple(SECTIONS.entries().values())


def with_parts(scopes: Mapping[str, Any]) -> Iterator[tuple[Section, Mapping[str, Any]]]:
    """(section, its part) for each section whose part a benchmark's scopes hold (a non-empty mapping), in
    the scopes' order (that of the metrics computing them); called for every bootstrap resample."""
    registered = SECTIONS.entries()
    for key, part in scopes.items():
        section = registered.get(key)
        if section is not None and part and isinstance(part, Mapping):
            yield section, part


def derived_parts(records: Sequence[Any], setup: Any) -> dict[str, Any]:
    """{section name: its part} of the derived sections that have one for these records."""
    found = {}
    for section in all_sections():
        if section.derived:
            part = section.derive(records, setup)
            if part is not None:
                found[section.name] = part
    return found


def is_derived_key(key: str) -> bool:
    """Whether a flat key belongs to a derived section's part (its values carry their own uncertainty)."""
    section = SECTIONS.entries().get(key.split(".")[0])
    return section is not None and section.derived


def stand_in(flat: Mapping[str, float], key: str) -> StandIn | None:
    """What some section gives in place of the measured `key` (see `Section.stand_in`), or None."""
    for section in all_sections():
        found = section.stand_in(flat, key)
        if found is not None:
            return found
    return None


def stands_in(scopes: Mapping[str, Any]) -> bool:
    """Whether a benchmark's scopes hold a derived part (values that stand in for the measured ones)."""
    return any(section.derived for section, _ in with_parts(scopes))


def paired(base: Sequence[Any], head: Sequence[Any], setup: Any) -> Any | None:
    """A section's own comparison of `head` with `base` (see `Section.pair`), or None."""
    for section in all_sections():
        found = section.pair(base, head, setup)
        if found is not None:
            return found
    return None


def columns() -> tuple[Column, ...]:
    """Every registered column, in the sections' order."""
    return tuple(column for section in all_sections() for column in section.columns)


def column(key: str) -> Column | None:
    """The column of a value key (the last part of a flat key), or None."""
    return _by_key().get(key)


def _by_key() -> dict[str, Column]:
    return {c.key: c for c in columns()}


def is_rate_key(key: str) -> bool:
    """Whether a value key (`accuracy`, `f1`, …) is a 0–1 rate, shown in %."""
    found = column(key)
    return key == "accuracy" or (found is not None and found.unit == "rate")


def is_points_key(key: str) -> bool:
    """Whether a value key is in points (MME's task scores and their sums)."""
    found = column(key)
    return found is not None and found.unit == "points"


def units_notes() -> list[str]:
    """What each unit other than rates and counts is ("… in points"), for tables of any benchmark."""
    return list(dict.fromkeys(c.unit_note for c in columns() if c.unit_note))


def gate_units() -> str:
    """The units of gate values in words: rates as fractions, then what the sections' own units are."""
    return "; ".join(["rates as fractions 0–1, not %", *units_notes()])


def gate_keys() -> tuple[str, ...]:
    """Every section's flat keys known by name before a run."""
    return tuple(key for section in all_sections() for key in section.gate_keys())


def gate_pattern() -> re.Pattern[str] | None:
    """One expression matching the flat keys that sections name by data (VRPTEST's levels and axes)."""
    patterns = [p for section in all_sections() for p in section.gate_patterns]
    return re.compile("|".join(f"(?:{p})" for p in patterns)) if patterns else None


def output_files() -> dict[str, tuple[Section, OutputFile]]:
    """{option: (section, file)} of every file a section writes."""
    return {out.option: (section, out) for section in all_sections() for out in section.outputs}


def record_parts() -> tuple[RecordPart[Any], ...]:
    """Every registered part a record may carry beside the core fields."""
    return tuple(part for section in all_sections() for part in section.record_parts)


def run_metadata_keys() -> frozenset[str]:
    """The sample metadata keys that say how a run chose a sample, not what it asks (`RecordPart.of_the_run`)."""
    return frozenset(part.from_metadata for part in record_parts() if part.of_the_run and part.from_metadata)


def incomparable(before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
    """Why a benchmark's two runs (their scopes, as results files hold them) cannot be compared, from the first
    section that says so; None when they can."""
    for section in all_sections():
        parts = [scopes.get(section.name) for scopes in (before, now)]
        if any(parts):
            why = section.comparable(*(p if isinstance(p, Mapping) else {} for p in parts))
            if why is not None:
                return why
    return None


def run_settings(option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> dict[str, RunSettings]:
    """{section: its settings} of the sections with settings for this run (`Section.read_options`)."""
    found = {section.name: section.read_options(option, benchmarks) for section in all_sections()}
    return {name: settings for name, settings in found.items() if settings is not None}


def uses_cache(settings: Mapping[str, Any]) -> bool:
    """Whether a section with settings for the run ({section: its settings}) keeps calls in the response cache."""
    return any(SECTIONS.get(name).uses_cache(value) for name, value in settings.items())


def review_steps(settings: Mapping[str, Any], run: Any, cache: Any) -> list[ReviewStep]:
    """The second passes over every answered batch (`Section.review_step`), in the sections' order, from their
    settings ({section: its run settings}), the run's settings and the response cache."""
    steps = [section.review_step(settings.get(section.name), run, cache) for section in all_sections()]
    return [step for step in steps if step is not None]


def described(settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every section's settings as the results file records them (`Section.describe`), in the sections' order."""
    return {key: value for section in all_sections()
            for key, value in section.describe(settings.get(section.name)).items()}


def run_outputs(settings: Mapping[str, Any]) -> dict[str, Path]:
    """{option: file} of the files the sections with settings for the run write as it goes (`Section.run_outputs`)."""
    return {option: path for name, value in settings.items()
            for option, path in SECTIONS.get(name).run_outputs(value).items()}


def parts_from_sample(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The parts a new record holds, as record fields: those in every record (null), and those a sample's
    metadata fills (a part's `from_metadata` key)."""
    return {part.key: metadata.get(part.from_metadata) if part.from_metadata else None for part in record_parts()
            if part.in_every_record or (part.from_metadata and part.from_metadata in metadata)}
