"""LIME-M benchmark curation (`pytest-mllm-curate`): judges grade difficulty, easy and leaked samples go.

One concern per module: `panel` reads judges' results, `units` groups pairs, `difficulty` holds
the cut-offs, `leakage` the text-only pass, `sampling` the seeded sampling, `review` the list of
unanswered samples (and the optional LLM check), `pipeline` runs the filters in order, `report`
and `manifest` describe the outcome, `spec_writer` writes the curated spec, `runs` makes the
judges' pytest runs and `cli` is the console command.
"""
