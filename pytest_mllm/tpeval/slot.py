"""Which part of a task's prompt template the optimizer edits.

A template mixes placeholders ({question}, {options}, {hint}, {task}) with static text.

* "prompt" mode: the instruction is the longest static segment between placeholders
  (stripped), e.g. "Please answer yes or no." in ``{question} Please answer yes or no.``;
  a candidate replaces exactly that segment, keeping the whitespace around it.
* "prefix" mode, for benchmarks whose question is the whole prompt (MME, MMMU): there is
  no instruction to edit, so one is prepended: it starts as "Answer the questions about
  <task name>" and a candidate renders as ``instruction + "\\n" + template``.
* "auto" picks "prompt" when the longest static segment has at least 3 words.

Instructions are plain text: `render` escapes their braces, so the template it returns
always survives ``str.format_map`` (`engine.evaluator.render_prompt`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PLACEHOLDERS = ("question", "options", "hint", "task")
MODES = ("auto", "prompt", "prefix")
MIN_PROMPT_WORDS = 3
_PLACEHOLDER = re.compile(r"\{(?:" + "|".join(PLACEHOLDERS) + r")\}")


def escape_braces(text: str) -> str:
    """Text as a format-string literal: { and } doubled."""
    return text.replace("{", "{{").replace("}", "}}")


def unescape_braces(text: str) -> str:
    """A format-string literal as plain text: {{ and }} halved."""
    return text.replace("{{", "{").replace("}}", "}")


def _segments(template: str) -> list[tuple[int, int]]:
    """(start, end) of each static segment around the placeholders."""
    spans, pos = [], 0
    for match in _PLACEHOLDER.finditer(template):
        spans.append((pos, match.start()))
        pos = match.end()
    spans.append((pos, len(template)))
    return spans


def _longest(template: str) -> tuple[int, int] | None:
    """(start, end) of the stripped longest static segment (the first of equals), None when all are blank."""
    best: tuple[int, int] | None = None
    for start, end in _segments(template):
        text = template[start:end]
        core = text.strip()
        if not core:
            continue
        lead = len(text) - len(text.lstrip())
        span = (start + lead, start + lead + len(core))
        if best is None or len(core) > best[1] - best[0]:
            best = span
    return best


def prefix_instruction(task: str) -> str:
    """The initial prefix for a task: "Answer the questions about <task name>"."""
    name = task.replace("_", " ").strip()
    return f"Answer the questions about {name}" if name else "Answer the questions"


@dataclass(frozen=True)
class PromptSlot:
    """A template split into what stays and the instruction the optimizer edits."""

    template: str
    mode: str  # "prompt" or "prefix"
    instruction: str

    @classmethod
    def from_template(cls, template: str, mode: str = "auto", task: str = "") -> PromptSlot:
        """Split `template`; ValueError for an unknown mode or "prompt" mode without static text."""
        if mode not in MODES:
            raise ValueError(f"prompt slot mode must be one of {', '.join(MODES)}; got {mode!r}")
        span = _longest(template)
        core = unescape_braces(template[span[0]:span[1]]) if span else ""
        if mode == "auto":
            mode = "prompt" if len(core.split()) >= MIN_PROMPT_WORDS else "prefix"
        if mode == "prefix":
            return cls(template, "prefix", prefix_instruction(task))
        if not span:
            raise ValueError(f"the prompt template {template!r} has no instruction text to optimize, only "
                             "placeholders; use prefix mode (--mllm-tp-mode=prefix) to optimize a prefix")
        return cls(template, "prompt", core)

    def render(self, instruction: str) -> str:
        """The full template with `instruction` in the slot (braces escaped)."""
        text = escape_braces(instruction)
        if self.mode == "prefix":
            return f"{text}\n{self.template}"
        span = _longest(self.template)
        if span is None:  # only reachable by constructing a PromptSlot by hand
            raise ValueError(f"the prompt template {self.template!r} has no instruction text to replace")
        return self.template[:span[0]] + text + self.template[span[1]:]
