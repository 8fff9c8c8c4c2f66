"""lmms-eval's tasks read from their YAML files (never imported): each task's Hugging Face dataset (id,
config, revision, split), its metrics, and whether it shows the model images, video, audio or text.

A task file may `include:` another (its keys under the file's own); `!function module.name` values are
kept as the text "module.name". The modality is read from the task's `doc_to_visual` / `doc_to_audio`
functions in the task folder's Python files: a function whose source names video (".mp4", "video") is
video, one that names audio is audio, any other image; no doc_to_visual is text.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

REPOSITORY = "EvolvingLMMs-Lab/lmms-eval"
TASKS = "lmms_eval/tasks"


class _Loader(yaml.SafeLoader):
    """Safe YAML that reads `!function x.y` as the text "x.y"."""


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


@dataclass
class Task:
    task: str
    yaml: str
    dataset_path: str | None
    dataset_name: str | None
    revision: str | None
    split: str | None
    metrics: list[str]
    output_type: str | None
    modality: str


def _read(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A task file's mapping with its includes merged under it."""
    if path in seen:
        return {}
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    if not isinstance(data, dict):
        return {}
    include = data.get("include")
    if isinstance(include, str):
        base = _read(path.parent / include, (*seen, path)) if (path.parent / include).is_file() else {}
        data = {**base, **{k: v for k, v in data.items() if k != "include"}}
    return data


def _function_source(folder: Path, reference: str) -> str:
    """The source of `!function module.name` in the task folder (or its parents up to tasks/), or ""."""
    dotted = reference.removeprefix("!function ").strip()
    module, _, name = dotted.rpartition(".")
    for base in (folder, *folder.parents):
        candidate = base / (module.replace(".", "/") + ".py")
        if candidate.is_file():
            try:
                tree = ast.parse(candidate.read_text(encoding="utf-8"))
            except SyntaxError:
                return ""
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return ast.unparse(node)
            return ""
        if base.name == "tasks":
            break
    return ""


def _modality(folder: Path, data: dict[str, Any]) -> str:
    if data.get("doc_to_audio"):
        return "audio"
    visual = data.get("doc_to_visual")
    if not visual:
        return "text"
    text = _function_source(folder, visual).lower() if isinstance(visual, str) and visual.startswith("!function") \
        else str(visual).lower()
    if not text:
        return "unknown"
    if "video" in text or ".mp4" in text or "frames" in text:
        return "video"
    if "audio" in text:
        return "audio"
    return "image"


def read_tasks(root: Path) -> list[Task]:
    """Every task (a YAML with a `task:` name and a dataset_path), sorted by task name."""
    tasks: dict[str, Task] = {}
    for path in sorted((root / TASKS).rglob("*.yaml")):
        try:
            data = _read(path)
        except (yaml.YAMLError, UnicodeDecodeError, OSError):
            continue
        name = data.get("task")
        if not isinstance(name, str) or not isinstance(data.get("dataset_path"), str):
            continue
        kwargs = data.get("dataset_kwargs") if isinstance(data.get("dataset_kwargs"), dict) else {}
        metrics = [m["metric"] for m in data.get("metric_list") or [] if isinstance(m, dict) and "metric" in m]
        split = data.get("test_split") or data.get("validation_split")
        tasks.setdefault(name, Task(
            task=name, yaml=path.relative_to(root).as_posix(), dataset_path=data["dataset_path"],
            dataset_name=data.get("dataset_name") if isinstance(data.get("dataset_name"), str) else None,
            revision=kwargs.get("revision") if isinstance(kwargs.get("revision"), str) else None,
            split=str(split) if split is not None else None, metrics=[str(m) for m in metrics],
            output_type=data.get("output_type"), modality=_modality(path.parent, data)))
    return sorted(tasks.values(), key=lambda t: t.task)
