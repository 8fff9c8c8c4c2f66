"""LLaVA-Bench (in the wild) as VLMEvalKit scores it (`vlmeval/dataset/utils/llavabench.py`: `parse_score`,
`LLaVABench_score`).

A judge LLM sees the image's caption, the question, the reference answer (GPT-4's, "assistant 1") and the
model's ("assistant 2") and rates both from 1 to 10 on the first line of its reply (`read_scores`: the first
line, commas as spaces, split at single spaces, exactly two fields, each a number: "8 7" and "9,4" read,
"8  7" and "Scores: 8 7" do not). Per scope (overall and each category: conv, detail, complex):

- relative score: the mean of the model's ratings over the mean of the reference's (VLMEvalKit's "Relative
  Score (main)", ×100 there);
- model score and reference score: each mean rating over 10 (its "VLM Score" and "GPT4 Score", ×100 there).

Where we differ, on purpose: VLMEvalKit scores a reply that does not read as -1 for both answers, which then
enters both means; here that sample is a judge error (`--mllm-judge-mode=compat`: -1 and -1, as VLMEvalKit);
a rating of NaN or infinity is no rating here.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from pytest_mllm.judge.graded import GRADED, GRADED_BY
from pytest_mllm.judge.graders import Grade, GradeItem, Grader, GradingPrompt, cell_text, grader, scored_text
from pytest_mllm.record import Record
from pytest_mllm.sample import Sample
from pytest_mllm.scoring.metrics import Scope, ScopeView, metric
from pytest_mllm.scoring.score import as_given, parser

FAILED = (-1.0, -1.0)  # VLMEvalKit's ratings of a reply it cannot read


def read_scores(reply: str) -> tuple[float, float] | None:
    """(the reference's rating, the model's rating) from the reply's first line; None when it does not read."""
    fields = reply.split("\n")[0].replace(",", " ").split(" ")
    if len(fields) != 2:
        return None
    try:
        scores = (float(fields[0]), float(fields[1]))
    except ValueError:
        return None
    return scores if all(math.isfinite(s) for s in scores) else None


@parser("llavabench", answer=as_given, verdict_by=GRADED_BY)
def llavabench_response(response: str, sample: Sample) -> str:
    """The whole response: the judge rates it in the grading step (`LLaVABenchGrader`)."""
    return response


def _ratings(records: Sequence[Record]) -> list[tuple[float, float]]:
    found = []
    for record in records:
        values = (GRADED.get(record) or {}).get("values") or {}
        if record["status"] != "error" and "reference_score" in values:
            found.append((float(values["reference_score"]), float(values["score"])))
    return found


def relative_scores(records: Sequence[Record]) -> dict[str, float]:
    """relative_score, model_score and reference_score of the scored records (rates: ×100 is VLMEvalKit's)."""
    ratings = _ratings(records)
    if not ratings:
        return {}
    reference = math.fsum(r for r, _ in ratings) / len(ratings)
    model = math.fsum(m for _, m in ratings) / len(ratings)
    values = {"model_score": model / 10, "reference_score": reference / 10}
    if reference:
        values["relative_score"] = model / reference
    return values


@metric("llavabench", keys=("model_score", "reference_score", "relative_score"))
def scope_llavabench(scope: ScopeView) -> Scope:
    """The relative, model and reference scores in every scope."""
    return relative_scores(scope.records)


# --- the judge step --------------------------------------------------------------------------------------------

LLAVABENCH_PROMPT = GradingPrompt(system="You are a careful and fair assistant who judges the quality of answers.",
                                  user="""\
[Context]
{caption}

[Question]
{question}

[Assistant 1]
{reference}

[End of Assistant 1]

[Assistant 2]
{prediction}

[End of Assistant 2]

[System]
Please judge how well the two AI assistants answered the user's question above. The user asked it while looking \
at an image; the context describes that image in a few sentences for you.
Rate each answer for helpfulness, relevance, accuracy and level of detail, with one overall score from 1 to 10 \
per assistant, where a higher score means a better answer.
On the first line, write only the two scores, for assistant 1 and then assistant 2, separated by a space.
From the second line on, explain your rating fully, without bias, and do not let the order in which the \
answers appear sway your judgement.

""")


@grader("llavabench")
class LLaVABenchGrader(Grader):
    """LLaVA-Bench: the judge rates the reference answer and the model's; the relative score compares them."""

    placeholders = ("caption", "question", "reference", "prediction")
    prompt = LLAVABENCH_PROMPT
    temperatures = (0.2,)
    max_tokens = 2048

    def item(self, record: Record, sample: Sample) -> GradeItem:
        columns = sample.metadata.get("columns") or {}
        return GradeItem(str(sample.metadata.get("source_id", sample.id)),
                         {"caption": cell_text(columns.get("caption")), "question": sample.question,
                          "reference": sample.answer, "prediction": scored_text(record)})

    def read(self, reply: str, item: GradeItem) -> Grade | None:
        scores = read_scores(reply)
        return None if scores is None else self._grade(scores)

    @staticmethod
    def _grade(scores: tuple[float, float]) -> Grade:
        reference, model = scores
        return Grade(model >= reference, f"{reference:g} {model:g}",
                     values={"reference_score": reference, "score": model})

    def replayed(self, row: Mapping[str, Any]) -> str | None:
        reference, model = row.get("gpt4_score"), row.get("score")
        try:
            scores = (float(reference), float(model))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        return None if scores == FAILED else f"{cell_text(reference)} {cell_text(model)}"

    def fallback(self, item: GradeItem) -> Grade:
        return self._grade(FAILED)
