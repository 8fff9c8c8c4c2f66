"""The judge steps of the judge-graded benchmarks: what the judge is asked, how its reply is read, and what
VLMEvalKit's judged files record of it.

One `Grader` per benchmark, registered where the benchmark's scoring is defined (`@grader("name")`, in the
judge package's module of that benchmark) under the name of the spec's parser, whose verdict it gives
(`@parser(name, verdict_by="graded")`). The prompts are ours, worded afresh with the meaning and structure
of VLMEvalKit's (few-shot examples of the same kinds, the same table, the same sections).
`load_grading_prompts` reads a user's own from a YAML file (`--mllm-judge-grading-prompts`): per grader an
optional `system` and a `user` template with the grader's placeholders. A prompt's digest
(`GradingPrompt.digest`) is recorded with every grade and keys its cached replies.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from pytest_mllm.echo import excerpt
from pytest_mllm.judge.prompts import Message
from pytest_mllm.record import Record
from pytest_mllm.registry import Registry
from pytest_mllm.sample import Sample

RETRY_TEMPERATURES = (0.0, 0.5, 1.0, 1.5, 2.0)  # VLMEvalKit's five tries at temperature i * 0.5


@dataclass(frozen=True)
class GradingPrompt:
    """A judge prompt: an optional system message and a user template with named placeholders."""

    user: str
    system: str | None = None

    @property
    def digest(self) -> str:
        """sha256 of the prompt's whole text: two runs with the same digest asked the same question."""
        text = json.dumps({"system": self.system, "user": self.user}, sort_keys=True, ensure_ascii=False)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class GradeItem:
    """One answer to grade: its row's index (what a judged file is keyed by), the prompt's values, what
    reading the reply needs, and the breakdowns the sample counts in (kind → names)."""

    key: str
    fields: Mapping[str, str]
    facts: Any = None
    breakdowns: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    shared: Mapping[str, str] = field(default_factory=dict)  # kind → the kind whose scope a name it shares reports


@dataclass(frozen=True)
class Grade:
    """A grade: the verdict, the per-sample score (None where the benchmark has none), what the record shows
    as read, and the grader's values (the extracted answer, the grade, the two ratings)."""

    correct: bool
    shown: str
    score: float | None = None
    values: Mapping[str, Any] = field(default_factory=dict)


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def render(prompt: GradingPrompt, fields: Mapping[str, str]) -> list[Message]:
    """The conversation: the system message if any, then the user template filled in one pass (a value may
    hold braces, even "{question}")."""
    user = _PLACEHOLDER.sub(lambda m: fields[m.group(1)] if m.group(1) in fields else m.group(0), prompt.user)
    return ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [{"role": "user", "content": user}]


class Grader(ABC):
    """A benchmark's judge step; see the module's table. Subclasses set the class attributes and `item`,
    `read`, `replayed` and `fallback`; `rule` decides without the judge where the benchmark's rules can."""

    name: str = ""
    placeholders: tuple[str, ...] = ()
    prompt: GradingPrompt = GradingPrompt("")
    temperatures: tuple[float, ...] = (0.0,)
    max_tokens: int = 2048
    repeatable: bool = False  # several runs of the judge may be averaged (--mllm-judge-runs)

    def __init__(self, prompt: GradingPrompt | None = None) -> None:
        if prompt is not None:
            self.prompt = prompt

    def messages(self, item: GradeItem) -> list[Message]:
        return render(self.prompt, item.fields)

    @abstractmethod
    def item(self, record: Record, sample: Sample) -> GradeItem:
        """What the judge is asked about a sample's record: its fields for the prompt, and what its grade needs."""

    def rule(self, item: GradeItem) -> Grade | None:
        """A grade the benchmark's rules give without the judge (None: ask the judge)."""
        return None

    def as_read(self, reply: str, through_xlsx: bool) -> str:
        """The reply as the reference's scoring reads it (the judge's reply, stripped as VLMEvalKit strips it)."""
        return reply.strip()

    @abstractmethod
    def read(self, reply: str, item: GradeItem) -> Grade | None:
        """The grade a (non-empty, as read) reply gives; None when it gives none (the next attempt is asked)."""

    @abstractmethod
    def replayed(self, row: Mapping[str, Any]) -> str | None:
        """The reply VLMEvalKit's judged file records for a row, as read; None where its judge failed."""

    @abstractmethod
    def fallback(self, item: GradeItem) -> Grade:
        """VLMEvalKit's grade when its judge failed (`--mllm-judge-mode=compat` only)."""

    def combine(self, grades: list[Grade]) -> Grade:
        """One grade from several runs (only for `repeatable` graders)."""
        return grades[0]


G = TypeVar("G", bound="type[Grader]")
GRADERS: Registry[type[Grader]] = Registry("grader", "grader")


def grader(name: str) -> Callable[[G], G]:
    """Register the decorated `Grader` subclass as the grader of parser `name`."""
    def register(cls: G) -> G:
        cls.name = name
        GRADERS.add(name, cls, cls.__module__)
        return cls

    return register


def cell_text(value: Any) -> str:
    """A judged file's cell as VLMEvalKit's `str()` shows it after pandas' reading (missing: "nan")."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    if isinstance(value, float) and value.is_integer():
        return str(value)
    return str(value)


def scored_text(record: Record) -> str:
    read = record.get("read_response")
    return read if read is not None else record["response"] or ""


# --- a user's prompts -----------------------------------------------------------------------------------------

class GradingPromptsError(ValueError):
    """A grading prompts file that cannot be used; the message names the file, the field and the fix."""


def load_grading_prompts(path: Path) -> dict[str, GradingPrompt]:
    """{grader: prompt} from a YAML file mapping grader names (the names of the judge-graded benchmarks' parsers) to `user` (a
    template holding every placeholder of that grader) and an optional `system`."""
    import yaml

    from pytest_mllm.safe_yaml import load_yaml

    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise GradingPromptsError(f"{path}: cannot read the grading prompts file: {exc}") from None
    except yaml.YAMLError as exc:
        raise GradingPromptsError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict) or not data:
        raise GradingPromptsError(f"{path}: must map grader names ({', '.join(GRADERS.names())}) to a prompt each")
    prompts = {}
    for name, entry in data.items():
        if name not in GRADERS:
            raise GradingPromptsError(f"{path}: {excerpt(name)} is not a grader; graders: {', '.join(GRADERS.names())}")
        prompts[str(name)] = _prompt(path, str(name), entry, GRADERS.get(name).placeholders)
    return prompts


def _prompt(path: Path, name: str, entry: Any, placeholders: tuple[str, ...]) -> GradingPrompt:
    if not isinstance(entry, dict) or set(entry) - {"system", "user"}:
        raise GradingPromptsError(f"{path}: {name}: must be a mapping with `user` and an optional `system`")
    user, system = entry.get("user"), entry.get("system")
    if not isinstance(user, str) or not user.strip():
        raise GradingPromptsError(f"{path}: {name}.user: must be a non-empty text")
    if system is not None and not isinstance(system, str):
        raise GradingPromptsError(f"{path}: {name}.system: must be a text")
    used = set(_PLACEHOLDER.findall(user))
    missing = [p for p in placeholders if p not in used]
    unknown = sorted(p for p in used if p not in placeholders)
    if missing or unknown:
        problem = (f"lacks {', '.join('{' + p + '}' for p in missing)}" if missing
                   else f"has unknown {', '.join('{' + p + '}' for p in unknown)}")
        raise GradingPromptsError(f"{path}: {name}.user: {problem}; its placeholders are "
                                  f"{', '.join('{' + p + '}' for p in placeholders)}")
    return GradingPrompt(user, system or None)
