"""Benchmark spec files (YAML): loading, validation, lookup by name, data-root resolution, and the
registry of the loaders a spec names.

A spec file is validated by a pydantic model (built on first use, with the loader, parser and metric
names registered then) whose errors are told in the spec's words: file, dotted field, problem, fix. The
same model gives the JSON Schema committed as benchmarks/spec.schema.json, for editors; regenerate
it with `python -m pytest_mllm.engine.spec --write-schema benchmarks/spec.schema.json`.

A loader registers itself in its module (`loaders/`) with `@loader`, which this module never imports:

    @loader("jsonl", about="JSON Lines: one sample per line", data_file="")
    def load_jsonl(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]: ...
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Sequence

from pytest_mllm.echo import excerpt
from pytest_mllm.registry import Registry

if TYPE_CHECKING:
    from pytest_mllm.engine.fetch import DataCache, Source

VARIANT_MODES = ("none", "grid", "full", "property")
# Readings that differ from the reference's, each off unless a spec lists it in `deviations`.
DEVIATIONS = {
    "keep_na_words": "an option, answer or category cell holding one of pandas' missing-value words (\"None\", "
                     "\"NA\", \"nan\", \"null\", …) is that text, not a missing cell",
    "strip_cells": "spaces, tabs and line breaks around option, answer and category cells (and around a results "
                   "file's ground truth) are removed, and no column is read as numbers",
    "answer_option_text": "(parquet) an answer cell holding an option's text is that option's letter, not an "
                          "answer no response can match",
    "responses_as_given": "(VLMEvalKit's benchmarks) a response is scored as the model gave it, not as VLMEvalKit's "
                          ".xlsx prediction file hands it to its scorer (\"None\", \"NA\", an empty response read "
                          "as \"nan\"; a carriage return as \"_x000D_\"; cut at 32,767 characters)",
}
VLMEVALKIT = "open-compass/VLMEvalKit"
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*$")
_COMMENT = re.compile(r"\s#")  # a comment in a subset file: '#' at a line's start or after white space


class SpecError(Exception):
    """A benchmark spec or its data cannot be used; the message says where and how to fix it."""


@dataclass(frozen=True)
class TaskSettings:
    """Per-task overrides of the spec's defaults."""

    parser: str
    prompt: str


@dataclass(frozen=True)
class About:
    """What the benchmarks page (docs/benchmarks.md) says of a benchmark beyond its settings."""

    source: str = ""  # where users get the files the spec reads
    reference: str = ""  # the implementation whose scores this spec reproduces
    reference_repository: str = ""  # where that implementation lives ("open-compass/VLMEvalKit")
    reference_commit: str = ""  # the commit of it whose scores the spec matches
    samples: int | None = None  # questions in the released split(s) the spec reads


@dataclass(frozen=True)
class BenchmarkSpec:
    """A parsed, validated benchmark spec file."""

    path: Path
    name: str
    loader: str
    version: str = ""
    description: str = ""
    data_root: str | None = None
    data_file: str | None = None
    parser: str = "exact"
    prompt: str = "{question}"
    open_prompt: str | None = None  # the template of questions without options, in every task (None: prompt)
    max_new_tokens: int = 16
    metrics: tuple[str, ...] = ("accuracy",)
    headline: str = "accuracy"
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tasks: Mapping[str, TaskSettings] = field(default_factory=dict)
    loader_options: Mapping[str, Any] = field(default_factory=dict)
    variants: str = "none"  # visual-prompt variants of samples with a target region: none, grid, full, property
    subset: str | None = None  # a file of sample ids (relative to the spec's folder): run only those
    deviations: tuple[str, ...] = ()  # readings switched on that differ from the reference's (DEVIATIONS)
    about: About = field(default_factory=About)
    download: Source | None = None  # where the data is fetched from when no data root is given (engine/fetch.py)
    aliases: tuple[str, ...] = ()  # other tools' names for a bundled spec, as it declares them (`all_aliases`)

    @property
    def subset_path(self) -> Path | None:
        """The subset file, inside the spec's folder (checked when the spec was read)."""
        return None if self.subset is None else self.path.parent / self.subset

    @property
    def env_var(self) -> str:
        """The environment variable that can point at this benchmark's data root."""
        return data_variable(self.name)

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the benchmark answers to: its own, then other tools' names for it (`all_aliases` for a bundled
        spec, lmms-eval's tasks for a catalogue spec); --mllm-bench, --mllm-data, MLLM_DATA_*, gates and -m
        markers take each of them."""
        bundled = bundled_specs()
        key = self.path.stem
        if bundled.get(key) == self.path:
            return tuple(dict.fromkeys([self.name, key, *(alias for alias, target in all_aliases().items()
                                                          if target == key and alias not in bundled)]))
        from pytest_mllm.engine.catalogue import specs_folder, vlmevalkit_entry

        if self.path.parent == specs_folder():  # a VLMEvalKit dataset: lmms-eval's names for it too
            entry = vlmevalkit_entry(self.name)
            others = entry.lmms_eval if entry is not None else ()
            return tuple(dict.fromkeys([self.name, *(n for n in others if n not in bundled and n not in all_aliases())]))
        return (self.name,)

    @property
    def env_vars(self) -> tuple[str, ...]:
        """The environment variables that can point at the data root, one per name, the first set winning."""
        return tuple(dict.fromkeys(data_variable(name) for name in self.names))

    @property
    def task_order(self) -> tuple[str, ...]:
        """Tasks in the spec's order: listed tasks first, then group members."""
        seen = dict.fromkeys(self.tasks)
        for members in self.groups.values():
            seen.update(dict.fromkeys(members))
        return tuple(seen)

    def task_settings(self, task: str) -> TaskSettings:
        """The parser and prompt template that apply to `task`."""
        return self.tasks.get(task) or TaskSettings(parser=self.parser, prompt=self.prompt)

    def prompt_template(self, task: str, has_choices: bool) -> str:
        """The template of one question: `open_prompt` for one without options when set, else the task's."""
        if not has_choices and self.open_prompt:
            return self.open_prompt
        return self.task_settings(task).prompt

    @property
    def responses_through_xlsx(self) -> bool:
        """Whether responses are scored as VLMEvalKit's .xlsx prediction file hands them to its scorer
        (`scoring/prediction_cells.py`): a spec whose reference is VLMEvalKit, unless `responses_as_given`."""
        return self.about.reference_repository == VLMEVALKIT and "responses_as_given" not in self.deviations

    def group_of(self, task: str) -> str | None:
        """The first group that lists `task`, if any."""
        for group, members in self.groups.items():
            if task in members:
                return group
        return None

    @property
    def needs_data(self) -> bool:
        """Whether its loader reads files (a data root), rather than drawing its samples on the spot."""
        return not LOADERS.get(self.loader).generated

    def data_override(self, data: Mapping[str, str]) -> str | None:
        """The --mllm-data root given for this benchmark under any of its names, else one given for any."""
        return next((data[name] for name in self.names if name in data), data.get(""))

    def needs_fetch(self, override: str | None) -> bool:
        """True when the data comes from the data cache: no option, variable or `data.root` names a root,
        and the spec says where its data is released (`data.url` or `data.hub`)."""
        return (self.download is not None and self.needs_data and override is None
                and self.data_root is None and not any(os.environ.get(v) for v in self.env_vars))

    def resolve_data_root(self, override: str | None, cache: DataCache | None = None) -> Path | None:
        """The data root: the option, else an environment variable, else the spec's `data.root`, else the
        data cache's copy of the released data (fetched and verified first if need be: `engine/fetch.py`).

        Returns None for loaders that need no data (the bundled generated benchmarks).
        """
        if not self.needs_data:
            return None
        if self.needs_fetch(override):
            from pytest_mllm.engine.fetch import DataCache, FetchError

            try:
                return (cache or DataCache()).fetch(self.download)  # type: ignore[arg-type]
            except FetchError as exc:
                raise SpecError(str(exc)) from None
        source, raw = "--mllm-data", override
        variable = next((v for v in self.env_vars if os.environ.get(v)), None)
        if raw is None and variable is not None:
            source, raw = variable, os.environ[variable]
        if raw is None and self.data_root is not None:
            source, raw = f"field data.root of {self.path}", self.data_root
            root = (self.path.parent / raw).resolve()
        elif raw is not None:
            root = Path(raw).expanduser().resolve()
        else:
            raise SpecError(
                f"benchmark {self.name!r} needs its data: pass --mllm-data={self.name}=/path/to/data "
                f"or set {self.env_var}=/path/to/data (spec: {self.path})"
            )
        if not root.exists():
            raise SpecError(
                f"data root for benchmark {self.name!r} does not exist: {root} (from {source}); "
                f"pass --mllm-data={self.name}=/path/to/data or set {self.env_var}"
            )
        return root


def data_variable(name: str) -> str:
    """The environment variable naming a benchmark's data root: MLLM_DATA_<NAME>."""
    return "MLLM_DATA_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


# --- the loaders: each data format registers itself where it is defined ---------------------------

Samples = list[Any]  # `Sample`s, and `BadSample`s for entries that could not be read


@dataclass(frozen=True)
class Loader:
    """A registered loader: one data format read into samples."""

    name: str
    load: Callable[[BenchmarkSpec, Path | None], Samples]  # (spec, data root or None) → samples
    about: str  # what it reads, in a few words (the schema, --mllm-list)
    options: Mapping[str, str] = field(default_factory=dict)  # the `loader_options` keys it reads → a note or ""
    data_file: str | None = None  # what `data.file` names for it ("": a file inside the root); None: not read
    generated: bool = False  # its samples are drawn on the spot: no data root


LOADERS: Registry[Loader] = Registry("loader", "loader")


def loader(name: str, *, about: str, options: Mapping[str, str] | None = None, data_file: str | None = None,
           generated: bool = False) -> Callable[[Callable[..., Samples]], Callable[..., Samples]]:
    """Register the decorated (spec, root) → samples function as loader `name` (see `Loader`)."""
    def register(load: Callable[..., Samples]) -> Callable[..., Samples]:
        LOADERS.add(name, Loader(name, load, about, dict(options or {}), data_file, generated), load.__module__)
        return load

    return register


def bundled_specs() -> dict[str, Path]:
    """Benchmark specs shipped with the package, by name."""
    folder = resources.files("pytest_mllm.benchmarks")
    return {Path(p.name).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")}


# a spec's top-level `aliases:` line and the lines that continue it (indented, blank or comments)
_ALIASES_ENTRY = re.compile(r"^aliases:[^\n]*(?:\n(?=[ \t#\n]|$)[^\n]*)*", re.MULTILINE)


@functools.cache
def all_aliases() -> dict[str, str]:
    """Other tools' names for the bundled specs → the spec's key, as each bundled spec declares them in its
    `aliases:` (lmms-eval's task names, whose data is the Hugging Face parquet release our parquet specs read;
    VLMEvalKit's dataset names, whose data is the LMUData TSV files our TSV specs read); read from the files
    once, without validating them."""
    found: dict[str, str] = {}
    for key, path in sorted(bundled_specs().items()):
        found.update({alias: key for alias in declared_aliases(path.read_text(encoding="utf-8")) if alias not in found})
    return found


def declared_aliases(text: str) -> list[str]:
    """The names a spec's text declares in its top-level `aliases:`, that entry read alone: every run reads
    all bundled specs' aliases, and the whole files would take ten times as long to parse."""
    from pytest_mllm.safe_yaml import load_yaml

    entry = _ALIASES_ENTRY.search(text)
    data = load_yaml(entry.group(0)) if entry else None
    declared = data.get("aliases") if isinstance(data, dict) else None
    return [str(alias) for alias in declared or ()]


def find_spec(name_or_path: str) -> Path:
    """A spec path from a bundled benchmark name, another tool's name for one (`all_aliases`), a path to a YAML
    file, or a dataset name of VLMEvalKit's catalogue (`engine/catalogue.py`; lmms-eval's task names for them)."""
    bundled = bundled_specs()
    if name_or_path in bundled:
        return bundled[name_or_path]
    aliases = all_aliases()
    if name_or_path in aliases:
        return bundled[aliases[name_or_path]]
    path = Path(name_or_path).expanduser()
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path.resolve()
    import difflib

    # VLMEvalKit's datasets by their names (and lmms-eval's for them)
    from pytest_mllm.engine.catalogue import known_names, spec_path, why_not

    found = spec_path(name_or_path)
    if found is not None:
        return found
    if (reason := why_not(name_or_path)) is not None:
        raise SpecError(f"--mllm-bench={name_or_path}: {reason} (pytest --mllm-list shows the benchmarks that run)")
    close = [*dict.fromkeys([*difflib.get_close_matches(name_or_path, [*bundled, *aliases], n=3, cutoff=0.7),
                             *difflib.get_close_matches(name_or_path, known_names(), n=3, cutoff=0.7)])][:3]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    known = ", ".join(sorted(bundled))
    raise SpecError(
        f"unknown benchmark {name_or_path!r} in --mllm-bench: give a bundled name ({known}), "
        f"another tool's name for one (pytest --mllm-list shows them) or the path of a benchmark spec file (.yaml){hint}"
    )


def is_spec_file(path: Path) -> bool:
    """Cheap check that a YAML file is a benchmark spec: a top-level `loader:` key."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return False
    return re.search(r"^loader:\s*\S", head, re.MULTILINE) is not None


@functools.lru_cache(maxsize=None)
def load_spec(path: Path) -> BenchmarkSpec:
    """Read and validate a spec file; every problem names the file and the field."""
    import yaml

    from pytest_mllm.safe_yaml import load_yaml

    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"cannot read benchmark spec {path}: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"benchmark spec {path} is not UTF-8 text (byte {exc.start}: {exc.reason}); "
                        "save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"benchmark spec {path} is not valid YAML: {exc}") from None
    return _validate(path, raw)


def _validate(path: Path, raw: Any) -> BenchmarkSpec:
    """The spec file's mapping checked by the pydantic model, as a BenchmarkSpec."""
    from pydantic import ValidationError

    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a benchmark spec must be a YAML mapping (name:, loader:, …)")
    names = _registries()
    model = _spec_model(names)
    try:
        checked = model.model_validate(raw, context={"spec_path": path})
    except ValidationError as exc:
        lines: dict[str, None] = {}  # one line per problem, in the fields' order, each naming file and field
        for error in exc.errors():
            field_name, problem = _explain(model, names, error)
            lines[f"{path}: field {field_name!r}: {problem}"] = None
        raise SpecError("\n".join(lines)) from None
    tasks = {task: TaskSettings(parser=(settings and settings.parser) or checked.parser,
                                prompt=(settings and settings.prompt) or checked.prompt)
             for task, settings in (checked.tasks or {}).items()}
    return BenchmarkSpec(
        path=path,
        name=checked.name,
        loader=checked.loader,
        version=checked.version,
        description=checked.description,
        data_root=checked.data and checked.data.root,
        data_file=checked.data and checked.data.file,
        parser=checked.parser,
        prompt=checked.prompt,
        open_prompt=checked.open_prompt,
        max_new_tokens=checked.max_new_tokens,
        metrics=tuple(checked.metrics),
        headline=checked.headline or default_headline(checked.metrics),
        groups={group: tuple(members) for group, members in (checked.groups or {}).items()},
        tasks=tasks,
        loader_options=checked.loader_options or {},
        variants=checked.variants,
        subset=checked.subset,
        deviations=tuple(checked.deviations or ()),
        about=About(**checked.about.model_dump(exclude_none=True)) if checked.about else About(),
        download=_download(checked),
        aliases=tuple(checked.aliases or ()),
    )


def _download(checked: Any) -> Source | None:
    """The spec's `data.url` + `data.md5` or `data.hub` as a fetch source (checked by the model)."""
    from pytest_mllm.engine.fetch import FileSource, HubSource, url_filename

    data = checked.data
    if data is None:
        return None
    if data.url is not None:
        return FileSource(name=checked.name, url=data.url, md5=data.md5,
                          filename=data.file or url_filename(data.url))
    if data.hub is not None:
        split = (checked.loader_options or {}).get("split")
        return HubSource(name=checked.name, repo=data.hub.repo, revision=data.hub.revision,
                         split=split if isinstance(split, str) else None)
    return None


class _Names(NamedTuple):
    """The names a spec's fields may take: those registered now (read at each validation, never at import)."""

    loaders: tuple[str, ...]
    parsers: tuple[str, ...]
    metrics: tuple[str, ...]


def _registries() -> _Names:
    from pytest_mllm.scoring.metrics import known_metrics
    from pytest_mllm.scoring.score import PARSERS

    return _Names(tuple(LOADERS.names()), tuple(PARSERS.names()), known_metrics())


def default_headline(metrics: Sequence[str]) -> str:
    """The value a benchmark shows as its result when its spec names none: the first declared metric's
    headline (MME's score), else accuracy."""
    from pytest_mllm.scoring.metrics import METRICS

    for name in metrics:
        headline = METRICS.get(name).headline if name in METRICS else None
        if headline:
            return headline
    return "accuracy"


# --- the spec file's model ------------------------------------------------------------------------

_KEYED = ("groups", "tasks")  # fields whose keys are the user's names (of groups, of tasks)
_PLAIN_STRING = "{input} must be a non-empty string"


def _problems(names: _Names) -> dict[str, str]:
    """What a value at each field must be, by field pattern (`*`: a user's key, `#`: a list item)."""
    def one_of(names: Any) -> str:
        return "{input} is not one of " + ", ".join(names)

    return {
        "name": "{input} must be a word of letters, digits, '_' or '-' (starting with a letter)",
        "loader": one_of(sorted(names.loaders)),
        "version": "{input} must be a string or a number",
        "description": "{input} must be a string",
        "data": "must be a mapping with optional keys root, file, url, md5 and hub",
        "data.root": _PLAIN_STRING,
        "data.file": _PLAIN_STRING,
        "data.url": "{input} must be an http(s) URL",
        "data.md5": "{input} must be an MD5 digest: 32 lowercase hex digits",
        "data.hub": "must be a mapping with keys repo and revision",
        "data.hub.repo": "{input} must be a dataset repository id: owner/name",
        "data.hub.revision": _PLAIN_STRING,
        "parser": one_of(sorted(names.parsers)),
        "prompt": _PLAIN_STRING,
        "open_prompt": _PLAIN_STRING,
        "max_new_tokens": f"{{input}} must be a positive integer, at most {MAX_NEW_TOKENS}",
        "metrics": f"must be a non-empty list of {', '.join(names.metrics)}",
        "metrics.#": one_of(sorted(names.metrics)),
        "headline": _PLAIN_STRING,
        "groups": "must map a group name to a list of task names",
        "groups.*": "must be a list of task names",
        "groups.*.#": "must be a list of task names",
        "tasks": "must map a task name to {parser:, prompt:}",
        "tasks.*": "must be a mapping with optional keys parser and prompt",
        "tasks.*.parser": one_of(sorted(names.parsers)),
        "tasks.*.prompt": _PLAIN_STRING,
        "loader_options": "must be a mapping",
        "variants": one_of(sorted(VARIANT_MODES)),
        "subset": _PLAIN_STRING,
    }


def _explain(model: Any, names: _Names, error: Any) -> tuple[str, str]:
    """(dotted field, problem) of one pydantic error, in the spec's words (list positions dropped)."""
    loc, kind = tuple(error["loc"]), error["type"]
    if kind == "spec":  # raised by the model's own checks: the problem is already in our words
        return error["ctx"]["field"] or ".".join(map(str, loc)), error["ctx"]["problem"]
    if kind in ("extra_forbidden", "invalid_key"):  # a key of the spec, of data or of tasks.<name>
        section = {"": (), "data": ("data",), "data.hub": ("data", "hub"), "tasks.*": ("tasks",)}[_pattern(loc[:-1])]
        allowed = set(model.model_fields)
        for part in section:
            allowed = _nested_fields(model.model_fields[part].annotation)
            model = _nested_model(model.model_fields[part].annotation)
        return ".".join(map(str, loc)), f"unknown field; allowed fields: {', '.join(sorted(allowed))}"
    shown = ".".join(str(part) for part in loc if not isinstance(part, int))
    if kind == "missing":
        return shown, "missing (required)"
    template = _problems(names).get(_pattern(loc), "{input} is not valid here")
    return shown, template.replace("{input}", excerpt(error.get("input")))


def _pattern(loc: tuple[Any, ...]) -> str:
    return ".".join("#" if isinstance(part, int) else "*" if at == 1 and loc[0] in _KEYED else str(part)
                    for at, part in enumerate(loc))


def _nested_fields(annotation: Any) -> set[str]:
    """Field names of the model inside an annotation such as `DataSection | None` or `dict[str, TaskSection | None]`."""
    fields = getattr(annotation, "model_fields", None)
    if fields is not None:
        return set(fields)
    return set().union(*(_nested_fields(arg) for arg in getattr(annotation, "__args__", ())))


def _nested_model(annotation: Any) -> Any:
    """The model inside an annotation such as `DataSection | None` or `dict[str, TaskSection | None]`."""
    if getattr(annotation, "model_fields", None) is not None:
        return annotation
    return next((found for arg in getattr(annotation, "__args__", ()) if (found := _nested_model(arg)) is not None),
                None)


# The descriptions that list registered entries, written when the JSON Schema is (validation never needs them,
# and they import every loader module).

def _describe_loader(schema: dict[str, Any]) -> None:
    formats = ", ".join(f"{name} ({entry.about})" for name, entry in LOADERS.entries().items())
    schema["description"] = f"The data format: {formats}."


def _describe_data(schema: dict[str, Any]) -> None:
    drawn = ", ".join(name for name, entry in LOADERS.entries().items() if entry.generated)
    schema["description"] = f"Where the benchmark's data lies (not needed by the loaders {drawn}, drawn on the spot)."


def _describe_data_file(schema: dict[str, Any]) -> None:
    plain = ", ".join(name for name, entry in LOADERS.entries().items() if entry.data_file == "")
    noted = "".join(f"; {name}: {entry.data_file}" for name, entry in LOADERS.entries().items() if entry.data_file)
    schema["description"] = f"The data file inside the root (loaders {plain}{noted})."


def _describe_loader_options(schema: dict[str, Any]) -> None:
    each = "; ".join(f"{name}: " + ", ".join(key + (f" ({note})" if note else "") for key, note in entry.options.items())
                     for name, entry in LOADERS.entries().items() if entry.options)
    schema["description"] = f"Options passed to the loader ({each})."


def _describe_headline(schema: dict[str, Any]) -> None:
    from pytest_mllm.scoring.metrics import ordered_metrics

    given = "".join(f"{m.headline} when metrics include {m.name}, " for m in ordered_metrics() if m.headline)
    schema["description"] = f"The metric shown as the benchmark's result (default: {given}else accuracy)."
    _no_default(schema)


def _no_default(schema: dict[str, Any]) -> None:
    """Schema hook for fields whose default is inherited or computed: no `"default": null` shown."""
    schema.pop("default", None)


def _text(value: Any) -> Any:
    """version / description: a YAML number reads as its text; an empty field as ""."""
    if value is None:
        return ""
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def _empty_to_none(value: Any) -> Any:
    """`data:`, `groups:`, `tasks:`, `loader_options:` left empty mean none."""
    return value or None


def _group_entries(value: Any) -> Any:
    """groups: group names as text (a YAML key may read as a number); `groups:` left empty means none."""
    return {str(key): entry for key, entry in value.items()} if isinstance(value, dict) else value or None


def _task_entries(value: Any) -> Any:
    """tasks: task names as text; a task left empty (`color:` or `color: {}`) takes the spec's settings."""
    return {str(key): entry or None for key, entry in value.items()} if isinstance(value, dict) else value or None


MAX_NEW_TOKENS = 1 << 20  # longer than any model's context: a larger limit is a mistake
PLACEHOLDERS = ("question", "options", "hint", "task")  # the fields a prompt template may use


def template_problem(template: str) -> str | None:
    """What is wrong with a prompt template's placeholders (None if nothing)."""
    import string

    known = ", ".join("{" + name + "}" for name in PLACEHOLDERS)
    try:
        fields = [name for _, name, spec, conversion in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        return (f"{template!r} is not a valid template ({exc}); write {{{{ and }}}} for a literal brace; "
                f"placeholders: {known}")
    for name in fields:
        root = re.split(r"[.\[]", name, maxsplit=1)[0]
        if root not in PLACEHOLDERS or root != name:
            shown = "{" + name + "}" if name else "{}"
            return (f"unknown placeholder {shown} in {template!r}; known placeholders: {known} "
                    "(write {{ and }} for a literal brace)")
    return None


def _subset_problem(relative: str, spec_path: Path | None) -> tuple[str, str | None]:
    """The `subset` path normalised, and what is wrong with it (None if nothing)."""
    normal = posixpath.normpath(relative.replace("\\", "/"))
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../"):
        return normal, (f"{relative!r} must be a path relative to the spec's folder, inside it "
                        "(no absolute path, no '..')")
    if spec_path is None:
        return normal, None
    folder = spec_path.parent.resolve()
    target = (folder / normal).resolve()
    if not target.is_relative_to(folder):
        return normal, f"{relative!r} leads outside the spec's folder {folder} (a symbolic link?)"
    if not target.is_file():
        return normal, f"subset file {target} does not exist; write one sample id per line"
    return normal, None


@functools.lru_cache(maxsize=None)
def _spec_model(names: _Names) -> Any:
    """The pydantic model of a spec file, for these registered loader, parser and metric names."""
    from typing import Annotated, Literal, TypeAlias

    from pydantic import (
        BaseModel,
        BeforeValidator,
        ConfigDict,
        Field,
        ValidationInfo,
        WithJsonSchema,
        field_validator,
        model_validator,
    )
    from pydantic_core import PydanticCustomError

    Text = Annotated[str, Field(strict=True, min_length=1)]  # local type aliases
    if TYPE_CHECKING:  # literals built at run time from the registries: strings to a type checker
        LoaderName: TypeAlias = str
        ParserName: TypeAlias = str
        MetricName: TypeAlias = str
        VariantMode: TypeAlias = str
        Deviation: TypeAlias = str
    else:
        LoaderName = Literal[tuple(sorted(names.loaders))]
        ParserName = Literal[tuple(sorted(names.parsers))]
        MetricName = Literal[tuple(sorted(names.metrics))]
        VariantMode = Literal[VARIANT_MODES]
        Deviation = Literal[tuple(DEVIATIONS)]
    Scalar = Annotated[str, BeforeValidator(_text), Field(strict=True),
                       WithJsonSchema({"type": ["string", "number", "null"]})]
    Options = Annotated[dict[Any, Any] | None, BeforeValidator(_empty_to_none),
                        WithJsonSchema({"type": ["object", "null"]})]  # the same in every pydantic version

    class HubSection(BaseModel):
        """A Hugging Face dataset repository and its revision."""

        model_config = ConfigDict(extra="forbid", title="hub")
        repo: Annotated[str, Field(strict=True, pattern=r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")] = Field(
            description="The dataset repository id.", examples=["my-org/my-bench"])
        revision: Annotated[str, Field(strict=True, pattern=r"^[\w.\-/]+$")] = Field(
            "main", description=("A commit (40 hex digits: checked), or a branch or tag (the commit it pointed at "
                                 "when fetched is recorded in the data cache)."))

    class DataSection(BaseModel):
        """Where the benchmark's data lies."""

        model_config = ConfigDict(extra="forbid", title="data", json_schema_extra=_describe_data)
        root: Text | None = Field(None, description=(
            "The data folder, relative to the spec's folder or absolute; --mllm-data=NAME=DIR or the "
            "environment variable MLLM_DATA_<NAME> override it."), examples=["."])
        file: Text | None = Field(None, json_schema_extra=_describe_data_file,
                                  examples=["bench.jsonl", "MyBench_DEV_EN.tsv"])
        url: Annotated[str, Field(strict=True, pattern=r"^https?://\S+$")] | None = Field(None, description=(
            "Where the released data file is downloaded from when no data root is given (saved under the name "
            "in file): fetched once into the data cache, checked against md5, reused."),
            examples=["https://example.org/data/MyBench.tsv"])
        md5: Annotated[str, Field(strict=True, pattern=r"^[0-9a-f]{32}$")] | None = Field(
            None, description=("The MD5 of the file at url (32 lowercase hex digits); a download that differs is "
                               "deleted and is an error. Without it (a file whose publisher gives none) the first "
                               "download's MD5 is recorded and checked afterwards."))
        hub: HubSection | None = Field(None, description=(
            "A Hugging Face dataset fetched when no data root is given (needs the extra hub): the files of "
            "loader_options.split, each checked against the hub's record of the commit."))

        @model_validator(mode="after")
        def _source_is_whole(self) -> DataSection:
            if self.md5 is not None and self.url is None:
                raise fail("data.url", "md5 is the digest of the file at url: give url too")
            if self.url is not None and self.hub is not None:
                raise fail("data.hub", "give url (and md5), or hub, not both")
            return self

    class TaskSection(BaseModel):
        """Settings of one task; a setting left out is the spec's."""

        model_config = ConfigDict(extra="forbid", title="task")
        parser: ParserName = Field(None, description="The task's answer parser (default: the spec's parser).",  # type: ignore[assignment]  # None: not given
                                   json_schema_extra=_no_default)
        prompt: Text = Field(None, description="The task's prompt template (default: the spec's prompt).",  # type: ignore[assignment]  # None: not given
                             json_schema_extra=_no_default)

    class AboutSection(BaseModel):
        """What the benchmarks page says of the benchmark (none of it changes a score)."""

        model_config = ConfigDict(extra="forbid", title="about")
        source: Text | None = Field(None, description="Where users get the files the spec reads.",
                                    examples=["hf download my-org/my-bench --repo-type dataset"])
        reference: Text | None = Field(None, description="The implementation whose scores the spec reproduces.",
                                       examples=["VLMEvalKit vlmeval/dataset/image_mcq.py"])
        reference_repository: Text | None = Field(
            None, description="The repository of the reference implementation, recorded with the results.",
            examples=["open-compass/VLMEvalKit"])
        reference_commit: Annotated[str, Field(strict=True, pattern=r"^[0-9a-f]{40}$")] | None = Field(
            None, description=("The reference's commit whose scores the spec matches (40 hex digits), recorded "
                               "with the results: references change their numbers between versions."))
        samples: Annotated[int, Field(strict=True, ge=1)] | None = Field(
            None, description="The number of questions in the released split(s) the spec reads.")

    def fail(field_name: str, problem: str) -> Exception:
        return PydanticCustomError("spec", "{problem}", {"field": field_name, "problem": problem})

    class SpecFile(BaseModel):
        """A pytest-mllm benchmark spec: where the samples come from, how answers are read and scored."""

        model_config = ConfigDict(extra="forbid", title="pytest-mllm benchmark spec")
        name: Annotated[str, Field(strict=True, pattern=_NAME.pattern)] = Field(
            description="The benchmark's name: a word of letters, digits, '_' or '-', starting with a letter.",
            examples=["my_bench"])
        loader: LoaderName = Field(json_schema_extra=_describe_loader)
        version: Scalar = Field("", description="The benchmark's version, recorded with its results.",
                                examples=["1"])
        description: Scalar = Field("", description="One line saying what the benchmark measures.")
        data: Annotated[DataSection | None, BeforeValidator(_empty_to_none)] = Field(
            None, description="Where the data lies: root (a folder) and file.")
        parser: ParserName = Field("exact", description="How an answer is read (default of every task).")
        prompt: Text = Field("{question}", description=(
            "The prompt template (default of every task); fields: {question}, {options}, {hint}, {task}."),
            examples=["{question} Please answer yes or no."])
        open_prompt: Text | None = Field(None, description=(
            "The prompt template of questions without options, in every task (default: prompt); for "
            "benchmarks mixing multiple-choice and open questions."),
            examples=["{question}\n\nAnswer the question using a single word or phrase."])
        max_new_tokens: Annotated[int, Field(strict=True, ge=1, le=MAX_NEW_TOKENS)] = Field(
            16, description="The most tokens a model may generate per answer.")
        metrics: Annotated[list[MetricName], Field(min_length=1)] = Field(
            ["accuracy"], description="The metrics computed per task, group and overall.")
        headline: Text = Field(None, examples=["accuracy", "score", "f1", "mean_score"],  # type: ignore[assignment]  # None: not given
                               json_schema_extra=_describe_headline)
        groups: Annotated[dict[str, list[Annotated[str, Field(strict=True)]]] | None,
                          BeforeValidator(_group_entries)] = Field(
            None, description="Report groups: a group name (not also a task name) to the list of its task names.",
            examples=[{"perception": ["existence", "count", "color"]}])
        tasks: Annotated[dict[str, TaskSection | None] | None, BeforeValidator(_task_entries)] = Field(
            None, description="Per-task settings, by task name, in report order.")
        loader_options: Options = Field(None, json_schema_extra=_describe_loader_options, examples=[{"task_column": "category"},
                      {"split": "test", "columns": {"id": "question_id", "task": "category"}}])
        variants: VariantMode = Field("none", description=(
            "Visual-prompt variants of samples that carry a target region: none, grid (the method's grid of "
            "prompt styles), full, property (drawn by hypothesis)."))
        subset: Text | None = Field(None, description=(
            "A file of sample ids, one per line, relative to the spec's folder and inside it: only those "
            "samples run."), examples=["curated_ids.txt"])
        deviations: list[Deviation] | None = Field(None, description=(
            "Readings that differ from the reference's, each off unless listed here, recorded with the results: "
            + "; ".join(f"{name}: {what}" for name, what in DEVIATIONS.items()) + "."),
            examples=[["strip_cells"]])
        about: AboutSection | None = Field(None, description=(
            "For the benchmarks page: where the files come from, the reference implementation, the sample count."))
        aliases: list[Text] | None = Field(None, description=(
            "A bundled spec's other names in other tools (VLMEvalKit's dataset, lmms-eval's tasks): --mllm-bench, "
            "--mllm-data, MLLM_DATA_*, gates and -m markers take them as the spec's name."),
            examples=[["MyBench_DEV_EN", "mybench_en_dev"]])

        @field_validator("subset")
        @classmethod
        def _subset_inside_folder(cls, value: str | None, info: ValidationInfo) -> str | None:
            if value is None:
                return None
            normal, problem = _subset_problem(value, (info.context or {}).get("spec_path"))
            if problem:
                raise fail("subset", problem)
            return normal

        @model_validator(mode="after")
        def _templates_use_known_placeholders(self) -> SpecFile:
            for name, template in (("prompt", self.prompt), ("open_prompt", self.open_prompt)):
                problem = template_problem(template) if template else None
                if problem:
                    raise fail(name, problem)
            for task, settings in (self.tasks or {}).items():
                problem = template_problem(settings.prompt) if settings and settings.prompt else None
                if problem:
                    raise fail(f"tasks.{task}.prompt", problem)
            return self

        @model_validator(mode="after")
        def _group_names_are_not_task_names(self) -> SpecFile:
            groups = self.groups or {}
            clash = set(groups) & (set(self.tasks or {}) | {t for members in groups.values() for t in members})
            if clash:
                raise fail("groups", f"group name {sorted(clash)[0]!r} is also a task name")
            return self

        @model_validator(mode="after")
        def _headline_is_reported(self) -> SpecFile:
            import difflib

            from pytest_mllm.scoring.metrics import headline_names

            names = headline_names(self.metrics) if self.headline else None
            if names is not None and self.headline not in names:
                close = difflib.get_close_matches(self.headline, names, n=1)
                raise fail("headline", f"{excerpt(self.headline)} is not a value these metrics report"
                           + (f"; did you mean {close[0]!r}?" if close else "")
                           + f" (with metrics {', '.join(self.metrics)}: {', '.join(names)})")
            return self

    return SpecFile


# --- the JSON Schema --------------------------------------------------------------------------------

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def spec_schema() -> dict[str, Any]:
    """The JSON Schema of a spec file, from the model and the parsers and metrics registered now."""
    from pydantic.json_schema import GenerateJsonSchema

    class _Schema(GenerateJsonSchema):
        def field_title_should_be_set(self, schema: Any) -> bool:
            return False  # the property's name says it

    schema = _spec_model(_registries()).model_json_schema(schema_generator=_Schema)
    return {"$schema": SCHEMA_DIALECT, **schema}


def schema_text() -> str:
    """spec_schema() as committed in benchmarks/spec.schema.json: sorted keys, two-space indent."""
    import json

    return json.dumps(spec_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_subset(spec: BenchmarkSpec) -> list[tuple[int, str]]:
    """(line number, sample id) of each id in the spec's subset file.

    A `#` at the start of a line or after a space starts a comment (ids may contain `#`).

    A repeated id or a file that lists no id is a SpecError naming the file and the line.
    """
    path = spec.subset_path
    assert path is not None, "read_subset needs a spec with a subset field"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{spec.path}: field 'subset': cannot read {path}: {exc}") from None
    seen: dict[str, int] = {}
    ids: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        sample_id = _COMMENT.split(" " + line, maxsplit=1)[0].strip()
        if not sample_id:
            continue
        if sample_id in seen:
            raise SpecError(f"{path}:{number}: sample id {sample_id!r} is listed twice (first on line "
                            f"{seen[sample_id]}) in the subset of {spec.path}")
        seen[sample_id] = number
        ids.append((number, sample_id))
    if not ids:
        raise SpecError(f"{path}: the subset file (field 'subset' of {spec.path}) lists no sample id")
    return ids


def main(argv: list[str] | None = None) -> int:
    """python -m pytest_mllm.engine.spec --write-schema benchmarks/spec.schema.json"""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pytest_mllm.engine.spec",
                                     description="Write the JSON Schema of benchmark spec files.")
    parser.add_argument("--write-schema", metavar="PATH", type=Path, required=True,
                        help="where to write it (the committed copy: benchmarks/spec.schema.json)")
    args = parser.parse_args(argv)
    args.write_schema.write_text(schema_text(), encoding="utf-8")
    print(f"wrote {args.write_schema}")
    return 0


if __name__ == "__main__":  # run as the package's module, whose registry the loaders register in
    from pytest_mllm.engine.spec import main as package_main

    raise SystemExit(package_main())
