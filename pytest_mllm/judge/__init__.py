"""Grading open-ended answers: Tiny LVLM-eHub's ChatGPT Ensemble Evaluation and word matching.

    judge = Judge(ChatClient(base_url), "gpt-4o-mini")
    outcomes = judge.judge_many([JudgeItem(question, references, answer), ...])
    outcome.status            # "judged" or "judge-error" (never a score)
    outcome.correct, outcome.split, outcome.votes

`word_match` is the cheap baseline (the authors' VQAEval reading; ``lenient=True`` for ours), a
scoring rule that lives in `pytest_mllm.scoring.word_match` and is re-exported here;
`load_prompts` reads a prompts file giving the five prompts their own wording; `agreement` and
`cohen_kappa` compare either with human labels.
"""

from pytest_mllm.judge.agreement import agreement, cohen_kappa
from pytest_mllm.judge.ensemble import QUORUM, ChatManyClient, Judge, JudgeOutcome, ReplyCache, Vote, cache_key, decide
from pytest_mllm.judge.prompts import (PROMPTS, PROMPTS_BY_ID, JudgeItem, Prompt, PromptsFileError, load_prompts,
                                      render_messages)
from pytest_mllm.judge.verdicts import MODES, Mode, parse_verdict, read_verdict
from pytest_mllm.scoring.word_match import normalize, vqa_eval_match, vqa_normalize, word_match

__all__ = [
    "MODES", "PROMPTS", "PROMPTS_BY_ID", "QUORUM", "ChatManyClient", "Judge", "JudgeItem", "JudgeOutcome", "Mode",
    "Prompt", "PromptsFileError", "ReplyCache", "Vote", "agreement", "cache_key", "cohen_kappa", "decide",
    "load_prompts", "normalize", "parse_verdict", "read_verdict", "render_messages", "vqa_eval_match",
    "vqa_normalize", "word_match",
]
