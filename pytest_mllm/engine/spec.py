"""Benchmark spec files (YAML): loading, validation, lookup by name, data-root resolution."""

from __future__ import annotations

import functools
import os
import posixpath
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from pytest_mllm.scoring.metrics import KNOWN_METRICS
from pytest_mllm.scoring.parsers import PARSERS

LOADERS = ("mme", "mme_results", "tsv", "jsonl", "vqa", "shapes", "vrp_shapes")
GENERATED_LOADERS = ("shapes", "vrp_shapes")  # bundled benchmarks drawn on the spot: no data root
VARIANT_MODES = ("none", "grid", "full", "property")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")
_COMMENT = re.compile(r"\s#")  # a comment in a subset file: '#' at a line's start or after white space


class SpecError(Exception):
    """A benchmark spec or its data cannot be used; the message says where and how to fix it."""


@dataclass(frozen=True)
class TaskSettings:
    """Per-task overrides of the spec's defaults."""

    parser: str
    prompt: str


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
    max_new_tokens: int = 16
    metrics: tuple[str, ...] = ("accuracy",)
    headline: str = "accuracy"
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tasks: Mapping[str, TaskSettings] = field(default_factory=dict)
    loader_options: Mapping[str, Any] = field(default_factory=dict)
    variants: str = "none"  # VRP variants of samples with a target region: none, grid, full, property
    subset: str | None = None  # a file of sample ids (relative to the spec's folder): run only those

    @property
    def subset_path(self) -> Path | None:
        """The subset file, inside the spec's folder (checked when the spec was read)."""
        return None if self.subset is None else self.path.parent / self.subset

    @property
    def env_var(self) -> str:
        """The environment variable that can point at this benchmark's data root."""
        return "MLLM_DATA_" + re.sub(r"[^A-Z0-9]", "_", self.name.upper())

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

    def group_of(self, task: str) -> str | None:
        """The first group that lists `task`, if any."""
        for group, members in self.groups.items():
            if task in members:
                return group
        return None

    def resolve_data_root(self, override: str | None) -> Path | None:
        """The data root: the option, else the environment variable, else the spec's `data.root`.

        Returns None for loaders that need no data (the bundled generated benchmarks).
        """
        if self.loader in GENERATED_LOADERS:
            return None
        source, raw = "--mllm-data", override
        if raw is None and os.environ.get(self.env_var):
            source, raw = self.env_var, os.environ[self.env_var]
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


def bundled_specs() -> dict[str, Path]:
    """Benchmark specs shipped with the package, by name."""
    folder = resources.files("pytest_mllm.benchmarks")
    return {Path(p.name).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".yaml")}


def find_spec(name_or_path: str) -> Path:
    """A spec path from a bundled benchmark name or a path to a YAML file."""
    bundled = bundled_specs()
    if name_or_path in bundled:
        return bundled[name_or_path]
    path = Path(name_or_path).expanduser()
    if path.suffix in (".yaml", ".yml") and path.is_file():
        return path.resolve()
    known = ", ".join(sorted(bundled))
    raise SpecError(
        f"unknown benchmark {name_or_path!r} in --mllm-bench: give a bundled name ({known}) "
        "or the path of a benchmark spec file (.yaml)"
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

    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SpecError(f"cannot read benchmark spec {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"benchmark spec {path} is not valid YAML: {exc}") from None
    return _validate(path, raw)


_TOP_FIELDS = {
    "name", "loader", "version", "description", "data", "parser", "prompt", "max_new_tokens",
    "metrics", "headline", "groups", "tasks", "loader_options", "variants", "subset",
}


def _validate(path: Path, raw: Any) -> BenchmarkSpec:
    def fail(field_name: str, problem: str) -> SpecError:
        return SpecError(f"{path}: field {field_name!r}: {problem}")

    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a benchmark spec must be a YAML mapping (name:, loader:, …)")
    unknown = sorted(set(raw) - _TOP_FIELDS)
    if unknown:
        raise fail(unknown[0], f"unknown field; allowed fields: {', '.join(sorted(_TOP_FIELDS))}")
    for required in ("name", "loader"):
        if required not in raw:
            raise fail(required, "missing (required)")
    name = raw["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise fail("name", f"{name!r} must be a word of letters, digits, '_' or '-'")
    if raw["loader"] not in LOADERS:
        raise fail("loader", f"{raw['loader']!r} is not one of {', '.join(LOADERS)}")

    data = raw.get("data") or {}
    if not isinstance(data, dict) or set(data) - {"root", "file"}:
        raise fail("data", "must be a mapping with optional keys root and file")
    parser = _choice(raw.get("parser", "exact"), PARSERS, "parser", fail)
    prompt = _string(raw.get("prompt", "{question}"), "prompt", fail)
    metrics = raw.get("metrics", ["accuracy"])
    if not isinstance(metrics, list) or not metrics:
        raise fail("metrics", f"must be a non-empty list of {', '.join(KNOWN_METRICS)}")
    for metric in metrics:
        _choice(metric, KNOWN_METRICS, "metrics", fail)
    headline = raw.get("headline", "score" if "mme_score" in metrics else "accuracy")
    _string(headline, "headline", fail)
    max_new_tokens = raw.get("max_new_tokens", 16)
    if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
        raise fail("max_new_tokens", f"{max_new_tokens!r} must be a positive integer")

    groups_raw = raw.get("groups") or {}
    if not isinstance(groups_raw, dict):
        raise fail("groups", "must map a group name to a list of task names")
    groups: dict[str, tuple[str, ...]] = {}
    for group, members in groups_raw.items():
        if not isinstance(members, list) or not all(isinstance(m, str) for m in members):
            raise fail(f"groups.{group}", "must be a list of task names")
        groups[str(group)] = tuple(members)

    tasks_raw = raw.get("tasks") or {}
    if not isinstance(tasks_raw, dict):
        raise fail("tasks", "must map a task name to {parser:, prompt:}")
    tasks: dict[str, TaskSettings] = {}
    for task, settings in tasks_raw.items():
        settings = settings or {}
        if not isinstance(settings, dict) or set(settings) - {"parser", "prompt"}:
            raise fail(f"tasks.{task}", "must be a mapping with optional keys parser and prompt")
        tasks[str(task)] = TaskSettings(
            parser=_choice(settings.get("parser", parser), PARSERS, f"tasks.{task}.parser", fail),
            prompt=_string(settings.get("prompt", prompt), f"tasks.{task}.prompt", fail),
        )
    clash = set(groups) & (set(tasks) | {t for ms in groups.values() for t in ms})
    if clash:
        raise fail("groups", f"group name {sorted(clash)[0]!r} is also a task name")

    variants = _choice(raw.get("variants", "none"), VARIANT_MODES, "variants", fail)
    options = raw.get("loader_options") or {}
    if not isinstance(options, dict):
        raise fail("loader_options", "must be a mapping")
    subset = _subset(raw.get("subset"), path, fail)
    return BenchmarkSpec(
        path=path,
        name=name,
        loader=raw["loader"],
        version=str(raw.get("version", "")),
        description=str(raw.get("description", "")),
        data_root=_optional_string(data.get("root"), "data.root", fail),
        data_file=_optional_string(data.get("file"), "data.file", fail),
        parser=parser,
        prompt=prompt,
        max_new_tokens=max_new_tokens,
        metrics=tuple(metrics),
        headline=headline,
        groups=groups,
        tasks=tasks,
        loader_options=options,
        variants=variants,
        subset=subset,
    )


def _subset(value: Any, path: Path, fail: Any) -> str | None:
    """The `subset` field: a file of sample ids, relative to the spec and inside its folder."""
    if value is None:
        return None
    relative = _string(value, "subset", fail)
    normal = posixpath.normpath(relative.replace("\\", "/"))
    if posixpath.isabs(normal) or normal == ".." or normal.startswith("../"):
        raise fail("subset", f"{relative!r} must be a path relative to the spec's folder, inside it "
                             "(no absolute path, no '..')")
    folder = path.parent.resolve()
    target = (folder / normal).resolve()
    if not target.is_relative_to(folder):
        raise fail("subset", f"{relative!r} leads outside the spec's folder {folder} (a symbolic link?)")
    if not target.is_file():
        raise fail("subset", f"subset file {target} does not exist; write one sample id per line")
    return normal


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


def _choice(value: Any, allowed: Any, field_name: str, fail: Any) -> str:
    if value not in allowed:
        raise fail(field_name, f"{value!r} is not one of {', '.join(sorted(allowed))}")
    return str(value)


def _string(value: Any, field_name: str, fail: Any) -> str:
    if not isinstance(value, str) or not value:
        raise fail(field_name, f"{value!r} must be a non-empty string")
    return value


def _optional_string(value: Any, field_name: str, fail: Any) -> str | None:
    return None if value is None else _string(value, field_name, fail)
