"""The benchmark catalogue: every dataset VLMEvalKit's registry builds and every image task of lmms-eval that
reads a Hugging Face dataset, as their source names them at a pinned commit (`benchmarks/catalogue/*.json`,
written by `scripts/catalogue/generate.py`), and the benchmark spec of each VLMEvalKit dataset whose
scoring a type template reproduces.

A template is VLMEvalKit's scoring of one kind (multiple choice read by `can_infer`, CircularEval, VQA
accuracy, ANLS, …) written as spec settings, registered beside the parser or metric it relies on
(`scoring/catalogue_templates.py`); `spec_document(entry)` fills it with the entry's file and reference.
The specs it gives are committed in `benchmarks/catalogue/specs/` (`scripts/catalogue/specs.py` writes them;
a test checks they are what the templates give), so that `--mllm-bench=MMStar_KO` names a file like any
bundled spec. A bundled hand-written spec stays authoritative for its names (its `aliases`: `spec.all_aliases`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from pytest_mllm.scoring.catalogue_templates import TEMPLATES

CATALOGUE = "catalogue"  # in the package's benchmarks folder
SPECS = "specs"  # in CATALOGUE: the generated spec files


@dataclass(frozen=True)
class VLMEvalKitEntry:
    """One VLMEvalKit dataset: its released file and how VLMEvalKit scores it (`benchmarks/catalogue/vlmevalkit.json`)."""

    name: str  # VLMEvalKit's dataset name (`--data NAME`)
    file: str  # the file name VLMEvalKit saves it under ({name}.tsv)
    url: str | None  # where VLMEvalKit downloads it
    md5: str | None  # the file's MD5 as VLMEvalKit checks it (None: it checks none)
    modality: str  # IMAGE or VIDEO
    dataset_class: str
    class_file: str
    vlmevalkit_type: str | None
    evaluate: str  # where VLMEvalKit's scoring starts: "file:Class.method"
    kind: str  # the type of its scoring (a template's name in TEMPLATES, or one of OTHER_KINDS)
    scorer: str  # what VLMEvalKit applies, in words
    supported: bool  # a template here reproduces it
    reason: str | None  # why not
    lmms_eval: tuple[str, ...] = ()  # lmms-eval's tasks of the same benchmark and split


@dataclass(frozen=True)
class LmmsEvalEntry:
    """One lmms-eval task that reads a Hugging Face dataset (`benchmarks/catalogue/lmms_eval.json`)."""

    task: str
    yaml: str
    dataset_path: str  # the Hugging Face dataset id
    dataset_name: str | None  # its config
    revision: str | None
    split: str | None
    metrics: tuple[str, ...]
    modality: str
    vlmevalkit: str | None  # the VLMEvalKit dataset it maps to


@dataclass(frozen=True)
class Catalogue:
    """One catalogue file: the repository and commit it was read from, its entries by name."""

    repository: str
    commit: str
    entries: Mapping[str, Any]


def _folder() -> Path:
    return Path(str(resources.files("pytest_mllm.benchmarks"))) / CATALOGUE


def _read(file: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((_folder() / file).read_text(encoding="utf-8"))
    return document


@functools.cache
def vlmevalkit() -> Catalogue:
    """VLMEvalKit's datasets, by name."""
    document = _read("vlmevalkit.json")
    entries = {e["name"]: VLMEvalKitEntry(**{**e, "lmms_eval": tuple(e["lmms_eval"])}) for e in document["entries"]}
    return Catalogue(document["source"]["repository"], document["source"]["commit"], entries)


@functools.cache
def lmms_eval() -> Catalogue:
    """lmms-eval's image tasks, by task name."""
    document = _read("lmms_eval.json")
    entries = {e["task"]: LmmsEvalEntry(**{**e, "metrics": tuple(e["metrics"])}) for e in document["entries"]}
    return Catalogue(document["source"]["repository"], document["source"]["commit"], entries)


def vlmevalkit_entry(name: str) -> VLMEvalKitEntry | None:
    """The VLMEvalKit dataset of that exact name, or of the lmms-eval task that maps to one."""
    entries: Mapping[str, VLMEvalKitEntry] = vlmevalkit().entries
    if name in entries:
        return entries[name]
    task = lmms_eval().entries.get(name)
    return entries.get(task.vlmevalkit) if task is not None and task.vlmevalkit else None


def entry_for_file(file_name: str) -> VLMEvalKitEntry | None:
    """The VLMEvalKit dataset released as `file_name` (a spec's `data.file`: "MMStar.tsv"), if one is."""
    return _by_file().get(file_name)


@functools.cache
def _by_file() -> dict[str, VLMEvalKitEntry]:
    return {entry.file: entry for entry in vlmevalkit().entries.values()}


# --- the type templates (registered beside the parser or metric each relies on) ------------------------------

OTHER_KINDS = {"yes_no": "yes/no", "llm_graded": "LLM-graded", "video": "video", "interleaved": "interleaved output",
               "other": "its own scorer"}  # kinds no template reproduces, in words


def kind_label(kind: str) -> str:
    """A kind of VLMEvalKit scoring in words: its template's label, or what kind no template reproduces."""
    return TEMPLATES.get(kind).label if kind in TEMPLATES else OTHER_KINDS.get(kind, kind)


def spec_document(entry: VLMEvalKitEntry, commit: str) -> dict[str, Any]:
    """The spec of a supported entry: its kind's template filled with the entry's file and reference."""
    template = TEMPLATES.get(entry.kind)
    document: dict[str, Any] = {
        "name": entry.name,
        "version": entry.md5 or "",
        "description": f"{entry.name} from VLMEvalKit's catalogue ({template.label}): {template.scored_by}.",
        "loader": "tsv",
        "data": {"file": entry.file, **({"url": entry.url} if entry.url else {}),  # fetched when no folder is given
                 **({"md5": entry.md5} if entry.md5 else {})},
        "parser": template.parser,
        "prompt": template.prompt,
        "max_new_tokens": template.max_new_tokens,
        "metrics": list(template.metrics),
    }
    if template.headline:
        document["headline"] = template.headline
    if template.groups:
        document["groups"] = {group: list(tasks) for group, tasks in template.groups.items()}
    if template.tasks:
        document["tasks"] = {task: dict(settings) for task, settings in template.tasks.items()}
    document["loader_options"] = dict(template.loader_options)
    checksum = f", MD5 {entry.md5}" if entry.md5 else ""
    document["about"] = {
        "source": f"{entry.file} from VLMEvalKit's data (LMUData): {entry.url}{checksum}",
        "reference": f"VLMEvalKit {entry.evaluate}: {entry.scorer}",
        "reference_repository": vlmevalkit().repository,
        "reference_commit": commit,
    }
    return document


def spec_text(entry: VLMEvalKitEntry) -> str:
    """The committed spec file of a supported entry (YAML with a header saying where it comes from)."""
    import yaml

    where = TEMPLATES.index()[entry.kind].replace(".", "/") + ".py"  # the module declaring the template
    header = (f"# {entry.name}: written by scripts/catalogue/specs.py from benchmarks/catalogue/vlmevalkit.json with the\n"
              f"# \"{entry.kind}\" template of {where}; do not edit (copy it to change it).\n")
    body: str = yaml.safe_dump(spec_document(entry, vlmevalkit().commit), sort_keys=False, allow_unicode=True, width=120)
    return header + body


def runnable(entry: VLMEvalKitEntry, held: Mapping[str, str]) -> bool:
    """Whether the entry gets a catalogue spec: supported, and not a name a hand-written spec holds (`held`:
    such names → that spec's name)."""
    return entry.supported and entry.name not in held


def specs_folder() -> Path:
    return _folder() / SPECS


def spec_path(name: str) -> Path | None:
    """The catalogue spec of a VLMEvalKit dataset name (or an lmms-eval task mapped to one), if it has one."""
    entry = vlmevalkit_entry(name)
    if entry is None:
        return None
    path = specs_folder() / f"{entry.name}.yaml"
    return path if path.is_file() else None


def why_not(name: str) -> str | None:
    """Why a catalogue name cannot run here (it is unsupported), or None (unknown, or runnable)."""
    entry = vlmevalkit_entry(name)
    if entry is None or entry.supported:
        return None
    return f"{entry.name} is in VLMEvalKit's catalogue but cannot run here: {entry.reason}"


def known_names() -> list[str]:
    """Every name of both catalogues, for suggestions."""
    return [*vlmevalkit().entries, *lmms_eval().entries]


def listing_lines(held: Mapping[str, str]) -> list[str]:
    """`pytest --mllm-list`'s catalogue part: each VLMEvalKit image dataset that runs here by its name (`held`: the
    names a hand-written spec holds → that spec), with its type and scorer and the lmms-eval names that map to it,
    then the others grouped by reason."""
    catalogue = vlmevalkit()
    images = [e for e in catalogue.entries.values() if e.modality == "IMAGE"]
    runs = [e for e in images if e.supported or e.name in held]
    lines = [f"VLMEvalKit's catalogue ({catalogue.repository} {catalogue.commit[:12]}): {len(runs)} of {len(images)} "
             "image datasets run here by their VLMEvalKit name (--mllm-bench=NAME; lmms-eval's names in brackets)", ""]
    for entry in sorted(runs, key=lambda e: e.name.lower()):
        peers = f" [{', '.join(entry.lmms_eval)}]" if entry.lmms_eval else ""
        spec = f"; spec {held[entry.name]} (hand-written)" if entry.name in held else ""
        lines.append(f"{entry.name}{peers}: {kind_label(entry.kind)}{spec}; "
                     f"VLMEvalKit scorer: {entry.evaluate.split(':')[-1]} ({entry.scorer})")
    others: dict[str, list[str]] = {}
    for entry in catalogue.entries.values():
        if entry.supported or entry.name in held:
            continue
        others.setdefault(entry.reason or "unsupported", []).append(entry.name)
    lines += ["", f"Not supported ({sum(map(len, others.values()))}), by reason:"]
    for reason, names in sorted(others.items(), key=lambda item: (item[0].split(":")[0], -len(item[1]), item[0])):
        lines.append(f"  {reason}: {', '.join(sorted(names, key=str.lower))}")
    return lines
