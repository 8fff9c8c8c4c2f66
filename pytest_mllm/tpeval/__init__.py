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

The package imports nothing itself: import the module you need (sentence-transformers loads on the
first similarity call).
"""
