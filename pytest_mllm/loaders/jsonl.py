"""A plain format for users' own benchmarks: JSON Lines, or YAML holding a list of samples.

Each entry: id, task, question, answer, and optionally image / images (paths relative to
the data root), answer_type (yes_no, choice, open), choices ({letter: text}), pair_group,
split, target_region ([x0, y0, x1, y1] pixels), category, l2_category, metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_mllm.echo import json_loads
from pytest_mllm.engine.images import ImageError, check_relative, resolve_inside
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, loader
from pytest_mllm.sample import BadSample, ImageRef, Sample

_FIELDS = {"id", "task", "question", "answer", "image", "images", "answer_type", "choices",
           "pair_group", "split", "target_region", "category", "l2_category", "metadata"}


def _entries(path: Path) -> list[tuple[int, Any]]:
    """(line or position, parsed entry) pairs; unparseable lines come back as exceptions."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); save the samples file "
                        "as UTF-8") from None
    if path.suffix in (".yaml", ".yml"):
        import yaml

        from pytest_mllm.safe_yaml import load_yaml

        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            raise SpecError(f"{path}: not valid YAML: {exc}") from None
        data = data.get("samples") if isinstance(data, dict) else data
        if not isinstance(data, list):
            raise SpecError(f"{path}: expected a list of samples (or a 'samples:' list)")
        return list(enumerate(data, start=1))
    entries: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                entries.append((number, json_loads(line)))
            except json.JSONDecodeError as exc:
                entries.append((number, exc))
            except RecursionError:  # thousands of nested brackets: this line errors alone
                entries.append((number, ValueError("nested too deeply to read (thousands of levels)")))
    return entries


@loader("jsonl", about="JSON Lines or a YAML list of samples, for users' own benchmarks", data_file="")
def load_jsonl(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of `data.file` (relative to the data root), in file order."""
    assert root is not None
    if not spec.data_file:
        raise SpecError(f"{spec.path}: field 'data.file': the jsonl loader needs the file name")
    path = resolve_inside(root, spec.data_file)
    if not path.is_file():
        raise SpecError(f"benchmark {spec.name!r}: samples file not found: {path}")
    samples: list[Sample | BadSample] = []
    for number, entry in _entries(path):
        where = f"{path}:{number}"
        fallback_id = entry.get("id") if isinstance(entry, dict) else None
        sample_id = str(fallback_id) if fallback_id is not None else f"line{number}"
        task = str(entry.get("task", spec.name)) if isinstance(entry, dict) else spec.name
        try:
            samples.append(_sample(spec, entry, root, task))
        except (ValueError, TypeError, ImageError) as exc:
            samples.append(BadSample(f"{task}::{sample_id}", spec.name, task, f"{where}: {exc}"))
    return samples


def _sample(spec: BenchmarkSpec, entry: Any, root: Path, task: str) -> Sample:
    if isinstance(entry, Exception):
        raise ValueError(f"not valid JSON: {entry}")
    if not isinstance(entry, dict):
        raise ValueError("each sample must be a mapping")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; allowed: {', '.join(sorted(_FIELDS))}")
    for required in ("id", "question", "answer"):
        if entry.get(required) in (None, ""):
            raise ValueError(f"missing field {required!r}")
    paths = entry.get("images") or ([entry["image"]] if entry.get("image") else [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError("field 'images' must be a list of relative paths")
    choices_raw = entry.get("choices") or {}
    if isinstance(choices_raw, list):
        choices_raw = dict(zip("ABCDEFGHIJ", choices_raw))
    if not isinstance(choices_raw, dict):
        raise ValueError("field 'choices' must map letters to option texts (or be a list)")
    choices = tuple((str(k), str(v)) for k, v in choices_raw.items())
    answer = str(entry["answer"])
    answer_type = entry.get("answer_type") or ("choice" if choices else
                                                "yes_no" if answer.lower() in ("yes", "no") else "open")
    if answer_type not in ("yes_no", "choice", "open"):
        raise ValueError(f"field 'answer_type': {answer_type!r} is not yes_no, choice or open")
    if answer_type == "choice" and answer not in dict(choices):
        raise ValueError(f"field 'answer': {answer!r} is not one of the choices {list(dict(choices))}")
    for p in paths:
        check_relative(p)  # an escaping path is a bad sample before the run; symlinks are checked on read
    return Sample(
        id=f"{task}::{entry['id']}", benchmark=spec.name, task=task, question=str(entry["question"]),
        answer=answer, answer_type=answer_type,
        images=tuple(ImageRef("path", p, root=root) for p in paths), choices=choices,
        pair_group=(f"{task}::{entry['pair_group']}" if entry.get("pair_group") is not None else None),
        split=str(entry.get("split", "test")), target_region=_region(entry.get("target_region")),
        category=entry.get("category"), l2_category=entry.get("l2_category"),
        metadata={**(entry.get("metadata") or {}), "source_id": str(entry["id"])},
    )


def _region(value: Any) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    if (not isinstance(value, (list, tuple)) or len(value) != 4
            or not all(isinstance(v, (int, float)) for v in value)):
        raise ValueError("field 'target_region' must be [x0, y0, x1, y1] in pixels")
    x0, y0, x1, y1 = (float(v) for v in value)
    if x1 <= x0 or y1 <= y0 or x0 < 0 or y0 < 0:
        raise ValueError(f"field 'target_region' {list(value)} must have x0 < x1, y0 < y1, all ≥ 0")
    return (x0, y0, x1, y1)
