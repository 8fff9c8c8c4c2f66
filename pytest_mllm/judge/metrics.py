"""The judge section of open-ended benchmarks (Tiny LVLM-eHub): word matching and the ChatGPT
Ensemble Evaluation (CEE) side by side, as the paper compares them, and their agreement with
human labels."""

from __future__ import annotations

from collections import Counter
from typing import Any, Sequence

from pytest_mllm.judge.agreement import agreement, cohen_kappa
from pytest_mllm.record import Record
from pytest_mllm.scoring.metrics import BenchmarkView, metric


def judge_metrics(records: Sequence[Record]) -> dict[str, Any]:
    """Open-ended answers: word matching and the judge ensemble (CEE) side by side, their
    agreement, the vote splits, abstentions, judge errors, and agreement with human labels."""
    answered = [r for r in records if r.get("answer_type") == "open" and r.get("word_match") is not None]
    if not answered:
        return {}
    # the judge also rules answers word matching cannot score (a reference given as a number)
    sent = [r for r in records if r.get("answer_type") == "open" and r.get("judge")]
    judged = [r for r in sent if r["judge"].get("status") == "judged"]
    errors = [r for r in sent if r["judge"].get("status") == "judge-error"]
    out: dict[str, Any] = {
        "scoring": "cee" if judged or errors else "word_match",
        "answered": len(answered),
        "word_accuracy": sum(r["word_match"] for r in answered) / len(answered),
        "judge_errors": len(errors),
        "judge_error_rate": len(errors) / len(answered),
    }
    if judged:
        cee = [bool(r["judge"]["correct"]) for r in judged]
        paired = [r for r in judged if r.get("word_match") is not None]
        out.update(
            cee_accuracy=sum(cee) / len(cee),
            **({"agreement": agreement([bool(r["judge"]["correct"]) for r in paired],
                                       [bool(r["word_match"]) for r in paired])} if paired else {}),
            splits=dict(sorted(Counter(r["judge"]["split"] for r in judged).items())),
            abstentions=sum(v["verdict"] is None for r in judged for v in r["judge"]["votes"]),
        )
    labelled = [r for r in answered if r.get("human_label") is not None]
    if labelled:
        human = [bool(r["human_label"]) for r in labelled]
        out["human"] = {"word_match": {"count": len(labelled),
                                       "agreement": agreement([bool(r["word_match"]) for r in labelled], human),
                                       "kappa": cohen_kappa([bool(r["word_match"]) for r in labelled], human)}}
        both = [r for r in judged if r.get("human_label") is not None]
        if both:
            cee_h = [bool(r["judge"]["correct"]) for r in both]
            human_h = [bool(r["human_label"]) for r in both]
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
