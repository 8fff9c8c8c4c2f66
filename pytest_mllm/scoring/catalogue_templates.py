"""The catalogue's type templates: a kind of VLMEvalKit scoring (multiple choice read by `can_infer`,
CircularEval, VQA accuracy, ANLS, …) written as the spec settings that reproduce it. Each registers
itself beside the parser or metric it relies on, by a top-level line such as

    catalogue_template("vqa_anls", label="ANLS", scored_by="ANLS against …", parser="docvqa_anls", …)

which `TEMPLATES`' index reads from the source (`pytest_mllm.registry`). `engine/catalogue.py` fills the
template of a VLMEvalKit dataset's kind (the kind `scripts/catalogue/vlmevalkit.py` gives it) with the
dataset's file and reference, and names no template itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_mllm.registry import Registry

MCQ_PROMPT = "{hint}{question}\n{options}\nAnswer with the option's letter from the given choices directly."
VQA_PROMPT = "{question}\nAnswer the question using a single word or phrase."
PER_SPLIT = {"split_tasks": True}  # VLMEvalKit reports each split apart: the split is the task
MCQ_READ = "the option read by VLMEvalKit's rule-based matching (can_infer, not graded by an LLM)"
# report_acc breaks categories down per split; here they span the splits: the same numbers for a file of one split
POOLED = " (categories over all splits: VLMEvalKit's per split where the file has several)"


@dataclass(frozen=True)
class Template:
    """A kind of VLMEvalKit scoring as spec settings."""

    label: str  # the kind in words
    scored_by: str  # how the settings reproduce VLMEvalKit's scoring, for the spec's description
    parser: str
    prompt: str
    max_new_tokens: int
    metrics: tuple[str, ...]
    headline: str | None = None
    loader_options: Mapping[str, Any] = field(default_factory=lambda: dict(PER_SPLIT))
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    tasks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


TEMPLATES: Registry[Template] = Registry("catalogue template", "catalogue_template")


def catalogue_template(kind: str, *, label: str, scored_by: str, parser: str, prompt: str, max_new_tokens: int,
                       metrics: tuple[str, ...], headline: str | None = None,
                       loader_options: Mapping[str, Any] | None = None,
                       groups: Mapping[str, tuple[str, ...]] | None = None,
                       tasks: Mapping[str, Mapping[str, str]] | None = None) -> Template:
    """Register the template of VLMEvalKit's scoring kind `kind` (see `Template`; the tsv loader reads each
    split as a task unless `loader_options` say otherwise)."""
    template = Template(label, scored_by, parser, prompt, max_new_tokens, metrics, headline,
                        dict(PER_SPLIT) if loader_options is None else loader_options, groups or {}, tasks or {})
    return TEMPLATES.declare(kind, template)
