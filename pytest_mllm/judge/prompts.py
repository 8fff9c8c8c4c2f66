"""The five judge prompts of the ChatGPT Ensemble Evaluation (CEE), in our own words, and the
prompts file that replaces them (``--mllm-judge-prompts=FILE``).

Tiny LVLM-eHub (Shao et al., 2023, appendix "Five different prompts utilized in CEE") asks a
judge LLM the same grading question with five differently worded prompts and takes a majority.
Each prompt states four scoring points. Both rules share the first three:

1. an answer semantically the same as the reference scores 1;
2. a wrong answer scores 0;
3. an answer mixing correct and incorrect information (or options) scores 0;

and differ only in the fourth, on a correct answer that says more:

* rule 1: a correct answer with extra explanation that is itself correct (extraneous, but
  valid and relevant) keeps its 1;
* rule 2: a correct answer accompanied by incorrect explanations scores 0.

Each prompt asks for an analysis, then a verdict after its key phrase. Prompt ids, rules and
key phrases (the same distribution as the authors' ``cal_ensemble_accuracy.py``):

    p1  rule 1  "Most Likely Score"        p4  rule 2  "Final Score"
    p2  rule 1  "Final Score"              p5  rule 2  "Most Likely Score"
    p3  rule 1  "Final Assessment Score"

A prompt's ``user`` text is a template. Its placeholders: ``{item}`` (the evaluation item as
three lines: question, reference answer(s), answer to grade), or any of ``{question}``,
``{references}`` (several joined by `` | ``) and ``{answer}`` separately, for a user who wants
the item worded their own way. The built-in prompts end with ``{item}``. The judge never sees
the image: the reference is its ground truth.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

from pytest_mllm.echo import excerpt

Message = dict[str, Any]
Rule = Literal[1, 2]

PLACEHOLDERS = ("item", "question", "references", "answer")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class JudgeItem:
    """One answer to grade: the question, its reference answers (any one suffices), the answer."""

    question: str
    references: Sequence[str]
    answer: str


@dataclass(frozen=True)
class Prompt:
    """One of the five CEE prompts: its id, rule, verdict key phrase, system message and user template."""

    id: str
    rule: Rule
    key: str
    system: str
    user: str  # a template with placeholders (module docstring)

    @property
    def instructions(self) -> str:
        """The user message's text before its first placeholder: the grading instructions."""
        first = _PLACEHOLDER.search(self.user)
        return (self.user[:first.start()] if first else self.user).rstrip()


def _builtin(id: str, rule: Rule, key: str, system: str, instructions: str) -> Prompt:
    return Prompt(id=id, rule=rule, key=key, system=system, user=f"{instructions}\n\n{{item}}")


PROMPTS: tuple[Prompt, ...] = (
    _builtin(
        "p1", 1, "Most Likely Score",
        "You grade short answers to questions about images. You reason carefully, know a wide range of "
        "subjects, and read English precisely.",
        "Below are a question about an image, the reference answer (the ground truth; you cannot see the "
        "image), and an answer to grade. Decide whether that answer is correct, following four points:\n"
        "- If it means what the reference means, even in other words, score 1.\n"
        "- If it is wrong, score 0.\n"
        "- If it puts right and wrong information together, for instance by naming several candidates "
        "of which only some fit, score 0.\n"
        "- If it is right and then keeps talking, adding accurate detail nobody asked for, its length "
        "costs nothing: score 1.\n"
        "Write a short paragraph headed 'Analysis:' that explains your reasoning. Then end with a "
        "separate last line of the form 'Most Likely Score: N', where N is the single digit 1 or 0.",
    ),
    _builtin(
        "p2", 1, "Final Score",
        "You are a meticulous examiner. You compare a candidate's reply with the answer key and decide "
        "whether the candidate got it right.",
        "Your job: mark a reply to a question about a picture as right or wrong by comparing it with the "
        "answer key. The picture is not shown to you; treat the key as true. Marking scheme:\n"
        "- agrees with the key (synonyms and paraphrases count): mark 1\n"
        "- disagrees with the key, or commits to nothing: mark 0\n"
        "- names a matching option alongside wrong ones: mark 0\n"
        "- gives the key's answer and goes on with further relevant, sound reasoning about it: mark 1\n"
        "Explain your marking first, under the heading 'Reasoning:'. On the last line write "
        "'Final Score: ' followed by nothing but the digit 1 or the digit 0.",
    ),
    _builtin(
        "p3", 1, "Final Assessment Score",
        "You are an impartial evaluator of question-answering systems, with broad general knowledge and a "
        "careful eye for meaning rather than wording.",
        "You will see a question, its accepted reference, and a response produced by an AI system that "
        "looked at an image you cannot see. Assess the response by these criteria:\n"
        "- Equivalent in meaning to the reference; exact words are not required. Value: 1\n"
        "- Not equivalent, or absent. Value: 0\n"
        "- Holding valid and invalid claims at once. Value: 0\n"
        "- Equivalent, with additional valid supporting explanation. Value: 1\n"
        "Begin with an 'Assessment:' section giving your thoughts. Close with one line "
        "'Final Assessment Score: N', where N is 1 or 0.",
    ),
    _builtin(
        "p4", 2, "Final Score",
        "You are a strict marker for a visual question-answering exam. Your knowledge is broad and your "
        "reading of answers is exacting.",
        "Evaluate the answer below against the reference to a question about an image. You do not see "
        "the image; the reference is authoritative. Follow these guidelines strictly:\n"
        "- semantically the same as the reference = 1\n"
        "- mistaken = 0\n"
        "- a blend of accurate and inaccurate statements = 0\n"
        "- right at its core but riddled with many incorrect explanations = 0\n"
        "Put your judgement under the heading 'Evaluation:'. The final line must be 'Final Score: N', "
        "with N either 1 or 0.",
    ),
    _builtin(
        "p5", 2, "Most Likely Score",
        "You check answers against a reference solution. You think step by step and never reward a "
        "statement that is false.",
        "Here is an exam item: a question about an image, the correct answer from the answer key, and a "
        "student's response. You cannot see the image, so rely on the key. Grading:\n"
        "- A response whose meaning matches the key gets 1.\n"
        "- One that misses the key gets 0.\n"
        "- One listing correct and incorrect options side by side gets 0.\n"
        "- One containing the correct option yet also giving false explanations gets 0.\n"
        "Write your analysis after the heading 'Analysis:', then give the verdict on its own last line "
        "as 'Most Likely Score: N', where N is 1 or 0.",
    ),
)

PROMPTS_BY_ID: dict[str, Prompt] = {p.id: p for p in PROMPTS}


def references_of(item: JudgeItem) -> list[str]:
    """The item's references, stripped, empty ones dropped, duplicates removed (first kept)."""
    return list(dict.fromkeys(r.strip() for r in item.references if r.strip()))


def item_block(item: JudgeItem) -> str:
    """The evaluation item as the built-in prompts show it (placeholder ``{item}``)."""
    refs = references_of(item)
    if len(refs) == 1:
        reference = f"Reference answer: {refs[0]}"
    else:
        reference = "Reference answers (matching any one of them is enough): " + " | ".join(refs)
    return f"Question: {item.question.strip()}\n{reference}\nAnswer to grade: {_answer(item)}"


def _answer(item: JudgeItem) -> str:
    return item.answer.strip() or "(no answer given)"


def render_messages(prompt: Prompt, item: JudgeItem) -> list[Message]:
    """The chat messages for one prompt and one item: a system message, then the user message."""
    refs = references_of(item)
    if not refs:
        raise ValueError(f"judge item for question {item.question!r} has no non-empty reference answer")
    values = {"item": item_block(item), "question": item.question.strip(), "references": " | ".join(refs),
              "answer": _answer(item)}
    user = _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), prompt.user)  # one pass
    return [{"role": "system", "content": prompt.system}, {"role": "user", "content": user}]


# -- the prompts file (--mllm-judge-prompts) -------------------------------------------------------


class PromptsFileError(ValueError):
    """A judge prompts file that cannot be used; the message names the file and the field."""


_FIELDS = ("id", "rule", "key", "system", "user")


def load_prompts(path: Path) -> tuple[Prompt, ...]:
    """The five prompts of a YAML prompts file, checked; PromptsFileError names the file and field.

    The file is a mapping with one key ``prompts`` (or just the list): five entries, each with
    ``id``, ``rule`` (1 or 2), ``key`` (the verdict's key phrase), ``system`` and ``user`` (a
    template with ``{item}``, or ``{references}`` and ``{answer}``, and optionally
    ``{question}``). Three prompts follow rule 1 and two rule 2, as in the paper; the order
    of the file is the order of the votes.
    """
    import yaml

    from pytest_mllm.safe_yaml import load_yaml

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PromptsFileError(f"{path}: cannot read the judge prompts file: {exc}") from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as exc:
        raise PromptsFileError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    return parse_prompts(data, str(path))


def parse_prompts(data: Any, source: str = "<prompts>") -> tuple[Prompt, ...]:
    """The five prompts from already-parsed YAML data (see `load_prompts`)."""

    def fail(where: str, problem: str) -> PromptsFileError:
        return PromptsFileError(f"{source}: {where}: {problem}")

    if isinstance(data, dict):
        extra = sorted(map(str, set(data) - {"prompts"}))
        if extra:
            raise fail(extra[0], "unknown top-level field; the file has one field, 'prompts'")
        if "prompts" not in data:
            raise fail("prompts", "missing: the file must hold 'prompts:', a list of five prompts")
        data = data["prompts"]
    if not isinstance(data, list):
        raise fail("prompts", f"must be a list of five prompts, not {type(data).__name__}")
    if len(data) != len(PROMPTS):
        raise fail("prompts", f"must hold exactly {len(PROMPTS)} prompts (the CEE ensemble), got {len(data)}")
    prompts = [_parse_prompt(entry, f"prompts[{i}]", fail) for i, entry in enumerate(data)]
    seen: set[str] = set()
    for i, prompt in enumerate(prompts):
        if prompt.id in seen:
            raise fail(f"prompts[{i}].id", f"{prompt.id!r} is used twice; ids must be unique")
        seen.add(prompt.id)
    rules = sorted(p.rule for p in prompts)
    if rules != sorted(p.rule for p in PROMPTS):
        raise fail("prompts[*].rule", f"three prompts must follow rule 1 and two rule 2 (as the paper's); "
                                      f"got rules {[p.rule for p in prompts]}")
    return tuple(prompts)


def _parse_prompt(entry: Any, where: str, fail: Any) -> Prompt:
    if not isinstance(entry, dict):
        raise fail(where, f"must be a mapping with {', '.join(_FIELDS)}, not {type(entry).__name__}")
    unknown = sorted(map(str, set(entry) - set(_FIELDS)))
    if unknown:
        raise fail(f"{where}.{unknown[0]}", f"unknown field; a prompt has {', '.join(_FIELDS)}")
    for name in _FIELDS:
        if name not in entry:
            raise fail(f"{where}.{name}", "missing")
    rule = entry["rule"]
    if isinstance(rule, bool) or rule not in (1, 2):
        raise fail(f"{where}.rule", f"must be 1 or 2, not {excerpt(rule)}")
    for name in ("id", "key", "system", "user"):
        value = entry[name]
        if not isinstance(value, str) or not value.strip():
            raise fail(f"{where}.{name}", f"must be a non-empty string, not {excerpt(value)}")
    key, user = entry["key"], entry["user"]
    if key != key.strip() or "\n" in key:
        raise fail(f"{where}.key", f"must be one line without surrounding spaces, not {excerpt(key)}")
    names = set(_PLACEHOLDER.findall(user))
    unknown_names = sorted(names - set(PLACEHOLDERS))
    if unknown_names:
        raise fail(f"{where}.user", f"unknown placeholder {{{unknown_names[0]}}}; known: "
                                    + ", ".join(f"{{{n}}}" for n in PLACEHOLDERS))
    if "item" not in names and not {"references", "answer"} <= names:
        raise fail(f"{where}.user", "must show the judge the item: {item}, or {references} and {answer} "
                                    "(and optionally {question})")
    if key not in _PLACEHOLDER.sub("", user):
        raise fail(f"{where}.user", f"never mentions the key phrase {key!r}; the judge must be asked to "
                                    "write its verdict after it")
    return Prompt(id=entry["id"], rule=rule, key=key, system=entry["system"], user=user)
