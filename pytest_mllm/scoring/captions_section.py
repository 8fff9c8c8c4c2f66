"""Caption subtasks: each caption record's tokens and BLEU counts (the `caption` part)."""

from pytest_mllm.scoring.captions import CAPTION
from pytest_mllm.sections import Section, register_section

register_section("captions", Section(title="captions", metrics=("captions", "cider"), record_parts=(CAPTION,)))
