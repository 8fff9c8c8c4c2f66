"""TP-Eval (Xie et al., 2024): per-model prompt customization, as pure, injectable pieces.

* `settings` — `TpSettings`, the run's knobs (paper defaults) and their validation;
* `slot` — `PromptSlot`: which part of a task's template is optimized (prompt or prefix);
* `split` — D_few / D_test per task (`few_split`, `split_task`, `FewShotError`);
* `metaprompt` — the optimizer's conversations and reading its replies;
* `counter` — the decaying "edit at most {counter} words" budget;
* `score` — `Candidate`, c = α·acc + (1−α)·sim, top-K and the final re-rank with α*;
* `similarity` — cosine of all-MiniLM-L6-v2 embeddings, loaded on first use;
* `optimizer` — `TaskOptimizer`, the loop for one task with all I/O injected;
* `prompts_file` — the YAML prompts file: read, check, write, merge.

Nothing heavy is imported here: sentence-transformers loads on the first similarity call.
"""

from .counter import FLOOR, MIN_START, edit_budget, edit_start
from .metaprompt import (
    PROMPT_CLOSE,
    PROMPT_OPEN,
    Example,
    extract_introspection,
    extract_prompt,
    extract_prompt_with_reason,
    introspection_messages,
    optimizer_messages,
)
from .optimizer import TaskOptimizer, TaskOutcome, planned_calls
from .prompts_file import (
    FORMAT,
    PromptsFile,
    PromptsFileError,
    TaskPrompts,
    check_prompts,
    merge,
    read_prompts,
    update_prompts,
    write_prompts,
)
from .score import Candidate, combined_score, rerank, top_k
from .settings import TpSettings
from .similarity import Similarity
from .slot import PromptSlot, escape_braces, prefix_instruction
from .split import FewShotError, few_split, split_task

__all__ = [
    "FLOOR", "FORMAT", "MIN_START", "PROMPT_CLOSE", "PROMPT_OPEN", "Candidate", "Example", "FewShotError",
    "PromptSlot", "PromptsFile", "PromptsFileError", "Similarity", "TaskOptimizer", "TaskOutcome", "TaskPrompts",
    "TpSettings", "check_prompts", "combined_score", "edit_budget", "edit_start", "escape_braces",
    "extract_introspection", "extract_prompt", "extract_prompt_with_reason", "few_split", "introspection_messages",
    "merge", "optimizer_messages", "planned_calls", "prefix_instruction", "read_prompts", "rerank", "split_task",
    "top_k", "update_prompts", "write_prompts",
]
