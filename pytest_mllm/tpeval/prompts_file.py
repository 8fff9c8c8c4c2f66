"""The prompts file: optimized prompts per task for one model and one benchmark version (YAML).

    format: pytest-mllm-prompts/1
    model: tiny-llava                 # the model the prompts were optimized for
    benchmark: shapes
    benchmark_version: "1"            # the spec's version
    optimizer: openai:SmolLM2         # optional: the optimizer model
    settings: {rounds: 16, ...}       # optional: TpSettings.as_dict()
    tasks:
      existence:
        mode: prompt                  # prompt, prefix or zero-shot (default prompt)
        original: "Please answer yes or no."
        optimized: "Answer yes or no only."
        template: "{question} Answer yes or no only."   # required: the template evaluated
        d_few: [id1, id2]             # sample ids the prompt was optimized on
        d_few_size: 2                 # written: len(d_few), for a reader
        d_few_source: validation      # optional: validation, half of dev+val or seeded
        history: [{round: 0, prompt: ..., accuracy: ..., similarity: ..., score: ...}, ...]

`read_prompts` checks all of it and `check_prompts` checks that a file fits the run;
every `PromptsFileError` names the file, the field and the fix. `write_prompts` replaces
the file atomically; `update_prompts` merges one finished task into it, so an optimization
run keeps what it has done if it stops half-way.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from pytest_mllm.echo import excerpt
from pytest_mllm.record import MessageOnly
from pytest_mllm.tpeval.score import Candidate
from pytest_mllm.tpeval.slot import PLACEHOLDERS

FORMAT = "pytest-mllm-prompts/1"
TASK_MODES = ("prompt", "prefix", "zero-shot")


class PromptsFileError(MessageOnly):
    """A prompts file cannot be used (for this run); the message names the file, the field and the fix."""


@dataclass
class TaskPrompts:
    """One task's prompts: the original instruction, the optimized one and the template evaluated."""

    mode: str
    original: str
    optimized: str
    template: str
    d_few: list[str] = field(default_factory=list)
    history: list[Candidate] = field(default_factory=list)
    d_few_source: str = ""  # where D_few came from (tpeval.split.SOURCE_LABELS); "" when not recorded

    @property
    def d_few_size(self) -> int:
        """How many samples the prompt was optimized on."""
        return len(self.d_few)

    def as_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "original": self.original, "optimized": self.optimized,
                "template": self.template, "d_few_size": self.d_few_size, "d_few_source": self.d_few_source,
                "d_few": list(self.d_few), "history": [c.as_dict() for c in self.history]}


@dataclass
class PromptsFile:
    """A whole prompts file; `tasks` in the order they were written."""

    model: str
    benchmark: str
    benchmark_version: str
    optimizer: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    tasks: dict[str, TaskPrompts] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "model": self.model, "benchmark": self.benchmark,
                "benchmark_version": self.benchmark_version, "optimizer": self.optimizer,
                "settings": dict(self.settings), "tasks": {name: tp.as_dict() for name, tp in self.tasks.items()}}


def write_prompts(path: str | os.PathLike[str], prompts: PromptsFile) -> None:
    """Write `prompts` to `path` atomically (a temporary file in the same folder, then os.replace)."""
    import yaml

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(prompts.as_dict(), sort_keys=False, allow_unicode=True, width=100)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_prompts(path: str | os.PathLike[str]) -> PromptsFile:
    """Read and check a prompts file; PromptsFileError for anything wrong in it."""
    import yaml

    from pytest_mllm.safe_yaml import load_yaml

    source = Path(path)
    try:
        raw = load_yaml(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PromptsFileError(f"cannot read prompts file {source}: {exc.strerror or exc}; check the path "
                               "given to --mllm-prompts") from None
    except yaml.YAMLError as exc:
        raise PromptsFileError(f"prompts file {source} is not valid YAML: {exc}; fix the syntax or write the "
                               "file again with a TP-Eval optimization run") from None
    return _parse(source, raw)


def _parse(source: Path, raw: Any) -> PromptsFile:
    def fail(name: str, problem: str, fix: str) -> PromptsFileError:
        return PromptsFileError(f"prompts file {source}: field {name!r}: {problem}; {fix}")

    if not isinstance(raw, dict):
        raise PromptsFileError(f"prompts file {source}: must be a YAML mapping starting with 'format: {FORMAT}'; "
                               "write it with a TP-Eval optimization run")
    if raw.get("format") != FORMAT:
        got = "missing" if "format" not in raw else excerpt(raw['format'])
        raise fail("format", f"expected {FORMAT!r}, got {got}",
                   "this is not a pytest-mllm prompts file (or one from another version): write it again")

    def text(value: Any, name: str, required: bool = True, default: str = "") -> str:
        if value is None and not required:
            return default
        if value is None:
            raise fail(name, "missing (required)", f"add '{name.rsplit('.', 1)[-1]}:' to the file")
        if not isinstance(value, str):
            raise fail(name, f"must be a string, got {excerpt(value)}", "quote the value")
        return value

    model = text(raw.get("model"), "model")
    benchmark = text(raw.get("benchmark"), "benchmark")
    version = raw.get("benchmark_version")
    if isinstance(version, (int, float)) and not isinstance(version, bool):
        version = str(version)  # the spec reads an unquoted version the same way
    version = text(version, "benchmark_version")
    optimizer = text(raw.get("optimizer"), "optimizer", required=False)
    settings = raw.get("settings") or {}
    if not isinstance(settings, dict):
        raise fail("settings", f"must be a mapping, got {type(settings).__name__}", "write it as {rounds: 16, ...}")
    tasks_raw = raw.get("tasks")
    if tasks_raw is None:
        raise fail("tasks", "missing (required)", "add a 'tasks:' mapping of task name to its prompts")
    if not isinstance(tasks_raw, dict):
        raise fail("tasks", f"must map task names to their prompts, got {type(tasks_raw).__name__}",
                   "write it as 'tasks: {task_name: {template: ...}}'")
    tasks: dict[str, TaskPrompts] = {}
    for name, entry in tasks_raw.items():
        where = f"tasks.{name}"
        if not isinstance(entry, dict):
            raise fail(where, f"must be a mapping, got {type(entry).__name__}",
                       "give at least 'template:' (the prompt template to evaluate)")
        if "template" not in entry:
            raise fail(f"{where}.template", "missing (required)",
                       "add the full prompt template the task is evaluated with, e.g. '{question} Answer yes or no.'")
        template = text(entry["template"], f"{where}.template")
        _check_template(template, f"{where}.template", fail)
        mode = text(entry.get("mode"), f"{where}.mode", required=False, default="prompt")
        if mode not in TASK_MODES:
            raise fail(f"{where}.mode", f"{excerpt(mode)} is not one of {', '.join(TASK_MODES)}", "use one of those")
        d_few = entry.get("d_few") or []
        if not isinstance(d_few, list) or not all(isinstance(i, (str, int)) for i in d_few):
            raise fail(f"{where}.d_few", "must be a list of sample ids", "write it as [id1, id2, ...]")
        size = entry.get("d_few_size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size != len(d_few)):
            raise fail(f"{where}.d_few_size", f"must be the number of ids in d_few ({len(d_few)}), got {excerpt(size)}",
                       "correct it or leave it out")
        d_few_source = text(entry.get("d_few_source"), f"{where}.d_few_source", required=False)
        history_raw = entry.get("history") or []
        if not isinstance(history_raw, list):
            raise fail(f"{where}.history", f"must be a list, got {type(history_raw).__name__}",
                       "write it as a list of {round:, prompt:, accuracy:, similarity:, score:} or leave it out")
        history = []
        for i, item in enumerate(history_raw):
            try:
                history.append(Candidate.from_dict(item))
            except ValueError as exc:
                raise fail(f"{where}.history[{i}]", str(exc), "fix the entry or leave the history out") from None
        tasks[str(name)] = TaskPrompts(
            mode=mode,
            original=text(entry.get("original"), f"{where}.original", required=False),
            optimized=text(entry.get("optimized"), f"{where}.optimized", required=False),
            template=template, d_few=[str(i) for i in d_few], history=history, d_few_source=d_few_source)
    return PromptsFile(model=model, benchmark=benchmark, benchmark_version=version, optimizer=optimizer,
                       settings=dict(settings), tasks=tasks)


def _check_template(template: str, name: str, fail: Any) -> None:
    try:
        template.format_map({p: "" for p in PLACEHOLDERS})
    except (KeyError, ValueError, IndexError, AttributeError) as exc:
        raise fail(name, f"is not a usable prompt template ({type(exc).__name__}: {exc})",
                   "use only the placeholders " + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
                   + " and write literal braces as {{ and }}") from None


def check_prompts(prompts: PromptsFile, *, path: str | os.PathLike[str], model: str, benchmark: str, version: str,
                  tasks: Iterable[str], transfer: bool) -> None:
    """PromptsFileError unless `prompts` fits this run: its benchmark, version, model and tasks."""
    if prompts.benchmark != benchmark:
        raise PromptsFileError(
            f"prompts file {path} holds prompts for benchmark {prompts.benchmark!r}, but this run evaluates "
            f"{benchmark!r}; pass the prompts file written for {benchmark!r}")
    if prompts.benchmark_version != version:
        raise PromptsFileError(
            f"prompts file {path} was written for version {prompts.benchmark_version!r} of benchmark {benchmark!r}, "
            f"but the spec is now version {version!r}; optimize the prompts again for this version")
    if prompts.model != model and not transfer:
        raise PromptsFileError(
            f"prompts file {path} holds prompts optimized for model {prompts.model!r}, but this run evaluates "
            f"{model!r}; optimize prompts for {model!r}, or pass --mllm-prompts-transfer to evaluate {model!r} "
            f"with {prompts.model!r}'s prompts deliberately")
    known = set(tasks)
    unknown = [t for t in prompts.tasks if t not in known]
    if unknown:
        raise PromptsFileError(
            f"prompts file {path} has prompts for tasks that benchmark {benchmark!r} does not have: "
            f"{', '.join(unknown)}; remove them from the file (task names must match the spec)")


def merge(base: PromptsFile | None, update: PromptsFile) -> PromptsFile:
    """`update`'s header and tasks over `base`'s tasks (same model, benchmark and version only).

    Tasks of `base` keep their order and are replaced in place; new tasks are appended.
    """
    if base is None:
        return PromptsFile(update.model, update.benchmark, update.benchmark_version, update.optimizer,
                           dict(update.settings), dict(update.tasks))
    for name in ("model", "benchmark", "benchmark_version"):
        if getattr(base, name) != getattr(update, name):
            raise PromptsFileError(
                f"cannot merge prompts for {name} {getattr(update, name)!r} into a file for "
                f"{getattr(base, name)!r}; write to another file or delete the old one")
    return PromptsFile(update.model, update.benchmark, update.benchmark_version, update.optimizer,
                       dict(update.settings), {**base.tasks, **update.tasks})


def update_prompts(path: str | os.PathLike[str], update: PromptsFile) -> PromptsFile:
    """Merge `update` into the file at `path` (created when missing), write it atomically, return the result."""
    base = read_prompts(path) if Path(path).exists() else None
    try:
        merged = merge(base, update)
    except PromptsFileError as exc:
        raise PromptsFileError(f"prompts file {path}: {exc}") from None
    write_prompts(path, merged)
    return merged
