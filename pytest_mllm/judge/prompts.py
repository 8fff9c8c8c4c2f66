"""The five judge prompts of the ChatGPT Ensemble Evaluation (CEE), in our own words.

Tiny LVLM-eHub (Shao et al., 2023) asks a judge LLM the same grading question with five
differently worded prompts and takes a majority. The prompts follow one of two rules that
differ only in how a correct answer wrapped in wrong extra content is scored:

* rule 1 ("core"): grade the answer's core, the direct reply to the question; a correct
  core keeps its 1 even when the explanation around it is wrong;
* rule 2 ("strict"): any wrong, contradicting or hedging content makes the answer 0.

Each prompt asks for an analysis and then a verdict after its key phrase. Prompt ids, rules
and key phrases (the same distribution as the authors' `cal_ensemble_accuracy.py`):

    p1  rule 1  "Most Likely Score"        p4  rule 2  "Final Score"
    p2  rule 1  "Final Score"              p5  rule 2  "Most Likely Score"
    p3  rule 1  "Final Assessment Score"

The evaluation item (question, reference answer(s), answer to grade) is appended to the
user message. The judge never sees the image: the reference is its ground truth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

Message = dict[str, Any]
Rule = Literal[1, 2]


@dataclass(frozen=True)
class JudgeItem:
    """One answer to grade: the question, its reference answers (any one suffices), the answer."""

    question: str
    references: Sequence[str]
    answer: str


@dataclass(frozen=True)
class Prompt:
    """One of the five CEE prompts: its id, rule, verdict key phrase and wording."""

    id: str
    rule: Rule
    key: str
    system: str
    instructions: str


PROMPTS: tuple[Prompt, ...] = (
    Prompt(
        id="p1", rule=1, key="Most Likely Score",
        system=("You grade short answers to questions about images. You reason carefully, know a wide "
                "range of subjects, and read English precisely."),
        instructions=(
            "Below are a question about an image, the reference answer (the ground truth; you cannot see "
            "the image), and an answer to grade. Decide whether the answer is correct.\n"
            "Scoring rule: look at the core of the answer, that is, the direct reply it gives to the "
            "question. Score 1 if that core means the same as the reference answer, even if the wording "
            "differs (synonyms, paraphrases, extra detail). Score 1 as well when the core is right but is "
            "surrounded by explanation that is wrong or beside the point. Score 0 if the core is wrong, "
            "missing, or a refusal.\n"
            "Write a short paragraph headed 'Analysis:' that explains your reasoning. Then end with a "
            "separate last line of the form 'Most Likely Score: N', where N is the single digit 1 or 0."
        ),
    ),
    Prompt(
        id="p2", rule=1, key="Final Score",
        system=("You are a meticulous examiner. You compare a candidate's answer with the answer key and "
                "decide whether the candidate got it right."),
        instructions=(
            "Your job: compare an answer against the answer key for a question about a picture, and mark "
            "it right or wrong. The picture is not shown to you; treat the answer key as true.\n"
            "How to mark: only the main claim of the answer counts. When the main claim agrees in meaning "
            "with the key, mark it 1 even if the rest of the answer is mistaken; wrong reasoning or false "
            "side remarks do not cost the mark. When the main claim disagrees with the key, or the answer "
            "commits to no claim at all, mark it 0.\n"
            "Explain your marking first, under the heading 'Reasoning:'. On the last line write "
            "'Final Score: ' followed by nothing but the digit 1 or the digit 0."
        ),
    ),
    Prompt(
        id="p3", rule=1, key="Final Assessment Score",
        system=("You are an impartial evaluator of question-answering systems, with broad general knowledge "
                "and a careful eye for meaning rather than wording."),
        instructions=(
            "You will see a question, its accepted reference answer, and a response produced by an AI "
            "system that looked at an image you cannot see. Assess whether the response answers the "
            "question correctly.\n"
            "Criteria: find the response's central answer. It earns 1 when it is equivalent in meaning to "
            "the reference; the exact words are not required. Supporting explanation is not graded: a "
            "correct central answer keeps its 1 even if the explanation around it contains errors. It "
            "earns 0 when the central answer is incorrect or absent.\n"
            "Begin with an 'Assessment:' section giving your reasoning. Close with one line "
            "'Final Assessment Score: N', where N is 1 or 0."
        ),
    ),
    Prompt(
        id="p4", rule=2, key="Final Score",
        system=("You are a strict marker for a visual question-answering exam. Your knowledge is broad and "
                "your reading of answers is exacting."),
        instructions=(
            "Evaluate the answer below against the reference answer to a question about an image. You do "
            "not see the image; the reference is authoritative.\n"
            "Marking scheme: give 1 only when the answer agrees in meaning with the reference and states "
            "nothing false. Give 0 when the answer is wrong, when it mixes right and wrong statements, "
            "when it contradicts itself, or when it wraps a right answer in an incorrect explanation.\n"
            "Put your reasoning under the heading 'Evaluation:'. The final line must be 'Final Score: N', "
            "with N either 1 or 0."
        ),
    ),
    Prompt(
        id="p5", rule=2, key="Most Likely Score",
        system=("You check answers against a reference solution. You think step by step and never reward "
                "a statement that is false."),
        instructions=(
            "Here is an exam item: a question about an image, the correct answer from the answer key, and "
            "a student's response. You cannot see the image, so rely on the answer key.\n"
            "Grade strictly: the response scores 1 only if it gives the right answer and everything else "
            "it asserts is consistent with the answer key. Any incorrect, contradictory or hedging "
            "content, even next to the right answer, makes the score 0.\n"
            "Write your analysis after the heading 'Analysis:', then give the verdict on its own last "
            "line as 'Most Likely Score: N', where N is 1 or 0."
        ),
    ),
)

PROMPTS_BY_ID: dict[str, Prompt] = {p.id: p for p in PROMPTS}


def references_of(item: JudgeItem) -> list[str]:
    """The item's references, stripped, empty ones dropped, duplicates removed (first kept)."""
    return list(dict.fromkeys(r.strip() for r in item.references if r.strip()))


def item_block(item: JudgeItem) -> str:
    """The evaluation item as appended to every prompt."""
    refs = references_of(item)
    if len(refs) == 1:
        reference = f"Reference answer: {refs[0]}"
    else:
        reference = "Reference answers (matching any one of them is enough): " + " | ".join(refs)
    answer = item.answer.strip() or "(no answer given)"
    return f"Question: {item.question.strip()}\n{reference}\nAnswer to grade: {answer}"


def render_messages(prompt: Prompt, item: JudgeItem) -> list[Message]:
    """The chat messages for one prompt and one item: a system message, then the user message."""
    if not references_of(item):
        raise ValueError(f"judge item for question {item.question!r} has no non-empty reference answer")
    return [
        {"role": "system", "content": prompt.system},
        {"role": "user", "content": f"{prompt.instructions}\n\n{item_block(item)}"},
    ]
