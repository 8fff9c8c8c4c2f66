"""Caption subtasks: each caption record's tokens and BLEU counts (the `caption` part)."""

from pytest_mllm.scoring.captions import CAPTION
from pytest_mllm.sections import Section, register

register(Section(name="captions", title="captions", metrics=("captions", "cider"), record_parts=(CAPTION,)))
