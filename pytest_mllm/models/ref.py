"""A model named on the command line, read once into its kind and the kind's argument: `ModelRef`.

`--mllm=hf:owner/name` is kind "hf" with argument "owner/name"; an alias such as `llava-1.5-7b` is kind
"alias" with its hub repo as argument; `openai:gpt-4o-mini` (`--mllm`, `--mllm-judge`, `--mllm-optimizer`,
`--review-llm`) is kind "openai" with the served model's name. The kinds are registered where they are
defined, with `@model_kind` (the built-in ones in `models/registry.py`), as inspect_ai's `@modelapi`:
a factory that imports its model's module only when it builds one. A name no kind reads is left to a
conftest's `pytest_mllm_make_model` hook: kind "".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from pytest_mllm.registry import Registry
from pytest_mllm.sample import Model

if TYPE_CHECKING:
    from pytest_mllm.engine.endpoint import Endpoint

Factory = Callable[["ModelRef", Mapping[str, Any], "Endpoint | None"], Model]  # (ref, hf options, endpoint) → model


@dataclass(frozen=True)
class ModelKind:
    """A registered model kind: how `--mllm` names it and how its models are built."""

    name: str
    make: Factory
    read: Callable[[str], str | None]  # the kind's argument in a model name, None when the name is not of this kind
    forms: tuple[str, ...] = ()  # how a user writes it ("hf:<repo or folder>"), for --help and messages
    names: Callable[[], Iterable[str]] = tuple  # the whole names it answers to (aliases), listed likewise
    instant: bool = False  # answers without work (baselines, recordings): not cached, no load shown
    served: bool = False  # behind an OpenAI-compatible endpoint: requests kept in flight, a revision option
    recording: bool = False  # its argument is a file of recorded answers, which the run reads
    source: Callable[[ModelRef], str] | None = None  # transformers: the folder or hub id it loads ("": the package's)
    identity: Callable[[ModelRef, str | None], str | None] | None = None  # what its answers are cached under
    check: Callable[[ModelRef], None] | None = None  # ValueError when the model surely cannot be had


MODEL_KINDS: Registry[ModelKind] = Registry("model kind", "model_kind")


def prefixed(kind: str) -> Callable[[str], str | None]:
    """The reading of `<kind>:<argument>` (a non-empty argument)."""
    def read(raw: str) -> str | None:
        head, colon, arg = raw.partition(":")
        return arg if head == kind and colon and arg else None

    return read


def model_kind(name: str, *, read: Callable[[str], str | None] | None = None, forms: tuple[str, ...] = (),
               names: Callable[[], Iterable[str]] = tuple, instant: bool = False, served: bool = False,
               recording: bool = False, source: Callable[[ModelRef], str] | None = None,
               identity: Callable[[ModelRef, str | None], str | None] | None = None,
               check: Callable[[ModelRef], None] | None = None) -> Callable[[Factory], Factory]:
    """Register the decorated factory as model kind `name`; `read` defaults to `<name>:<argument>`."""
    def register(make: Factory) -> Factory:
        kind = ModelKind(name, make, read or prefixed(name), forms, names, instant, served, recording, source,
                         identity, check)
        MODEL_KINDS.add(name, kind, make.__module__)
        return make

    return register


@dataclass(frozen=True)
class ModelRef:
    """A model name as given (`raw`), its kind ("" when no registered kind reads it) and the kind's argument."""

    raw: str
    kind: str = ""
    arg: str = ""

    @classmethod
    def parse(cls, raw: str) -> ModelRef:
        """The first registered kind that reads `raw` (kinds in registry order), else kind ""."""
        if not raw:
            return cls(raw)
        for name, kind in MODEL_KINDS.entries().items():
            arg = kind.read(raw)
            if arg is not None:
                return cls(raw, name, arg)
        return cls(raw)

    def __str__(self) -> str:
        return self.raw

    @property
    def entry(self) -> ModelKind | None:
        """Its kind's registry entry (None: a name left to a conftest's hook)."""
        return MODEL_KINDS.get(self.kind) if self.kind else None

    @property
    def known(self) -> bool:
        return self.entry is not None

    @property
    def instant(self) -> bool:
        return self.entry is not None and self.entry.instant

    @property
    def served(self) -> bool:
        return self.entry is not None and self.entry.served

    @property
    def recording(self) -> bool:
        return self.entry is not None and self.entry.recording

    @property
    def served_name(self) -> str:
        """The model name an endpoint is asked for: the argument of a served kind (`openai:<name>`), else the
        name as given."""
        return self.arg if self.served else self.raw
