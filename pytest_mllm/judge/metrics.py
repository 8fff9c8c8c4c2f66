"""The judge section of open-ended benchmarks (Tiny LVLM-eHub): word matching and the ChatGPT
Ensemble Evaluation (CEE) side by side, as the paper compares them, and their agreement with
human labels."""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from pytest_mllm.judge.agreement import agreement, cohen_kappa
from pytest_mllm.judge.ensemble import JUDGE
from pytest_mllm.record import Record, RecordPart
from pytest_mllm.scoring.metrics import BenchmarkView, metric
from pytest_mllm.scoring.word_match import WORD_MATCH

# A person's verdict on an open answer (1 right, 0 wrong), where the data gives one: a sample's
# metadata "human_label" becomes its record's.
HUMAN_LABEL: RecordPart[int] = RecordPart("human_label", from_metadata="human_label", in_every_record=True)


def judge_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Open-ended answers: word matching and the judge ensemble (CEE) side by side, their
    agreement, the vote splits, abstentions, judge errors, and agreement with human labels."""
    open_answers = [r for r in records if r.get("answer_type") == "open"]
    answered = [(r, word) for r in open_answers if (word := WORD_MATCH.get(r)) is not None]
    if not answered:
        return {}
    # the judge also rules answers word matching cannot score (a reference given as a number)
    sent = [(r, outcome) for r in open_answers if (outcome := JUDGE.get(r))]
    judged = [(r, outcome) for r, outcome in sent if outcome.get("status") == "judged"]
    errors = [r for r, outcome in sent if outcome.get("status") == "judge-error"]
    out: dict[str, Any] = {
        "scoring": "cee" if judged or errors else "word_match",
        "answered": len(answered),
        "word_accuracy": sum(word for _, word in answered) / len(answered),
        "judge_errors": len(errors),
        "judge_error_rate": len(errors) / len(answered),
    }
    if judged:
        cee = [bool(outcome["correct"]) for _, outcome in judged]
        paired = [(bool(outcome["correct"]), bool(word)) for r, outcome in judged
                  if (word := WORD_MATCH.get(r)) is not None]
        out.update(
            cee_accuracy=sum(cee) / len(cee),
            **({"agreement": agreement([c for c, _ in paired], [w for _, w in paired])} if paired else {}),
            splits=dict(sorted(Counter(outcome["split"] for _, outcome in judged).items())),
            abstentions=sum(v["verdict"] is None for _, outcome in judged for v in outcome["votes"]),
        )
    labelled = [(bool(word), bool(label)) for r, word in answered if (label := HUMAN_LABEL.get(r)) is not None]
    if labelled:
        words, human = [w for w, _ in labelled], [h for _, h in labelled]
        out["human"] = {"word_match": {"count": len(labelled), "agreement": agreement(words, human),
                                       "kappa": cohen_kappa(words, human)}}
        both = [(bool(outcome["correct"]), bool(label)) for r, outcome in judged
                if (label := HUMAN_LABEL.get(r)) is not None]
        if both:
            cee_h, human_h = [c for c, _ in both], [h for _, h in both]
            out["human"]["cee"] = {"count": len(both), "agreement": agreement(cee_h, human_h),
                                   "kappa": cohen_kappa(cee_h, human_h)}
    return out


def has_open_answers(records: Sequence[Record]) -> bool:
    """The judge section applies, declared or not, once any record is an open answer."""
    return any(r.get("answer_type") == "open" for r in records)


@metric("judge", section=True, applies=has_open_answers, keys=("judge",))
def judge_section(benchmark: BenchmarkView) -> dict[str, Any]:
    """Section `judge`: `judge_metrics` over the benchmark's records."""
    return {"judge": judge_metrics(benchmark.records)}
