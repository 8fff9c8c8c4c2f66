"""The judge's section (Tiny LVLM-eHub): open answers scored by word matching and by the CEE judge
side by side, vote splits, judge errors and agreement with human labels; the judge's parts of a record; its
options (`--mllm-judge*`: `settings.py`) and its second pass over each answered batch (`review.py`: the LLM
reading the choice answers the rules cannot, then the CEE verdicts on open answers)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_mllm.judge.choice_extractor import EXTRACTION
from pytest_mllm.judge.ensemble import JUDGE
from pytest_mllm.judge.metrics import HUMAN_LABEL
from pytest_mllm.judge.settings import JudgeSettings, read_settings
from pytest_mllm.scoring.word_match import WORD_MATCH
from pytest_mllm.sections import HtmlPage, HtmlPart, ReviewStep, Section, percent, register_section


class JudgeSection(Section):
    title = "Open answers: judge ensemble and word matching"
    metrics = ("judge",)
    gate_values = ("word_accuracy", "cee_accuracy", "agreement", "judge_error_rate")
    record_parts = (JUDGE, EXTRACTION, WORD_MATCH, HUMAN_LABEL)

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        """Word matching and CEE side by side, agreement, vote splits, human agreement."""
        from rich.table import Table

        how = "CEE judge + word matching" if part["scoring"] == "cee" else "word matching (no --mllm-judge)"
        title = f"{benchmark} · open answers: {how}"
        table = Table(title=title, title_justify="left", show_edge=False, min_width=len(title))
        table.add_column("measure")
        table.add_column("value", justify="right")
        rows = [("answered", str(part["answered"])), ("word-matching acc %", percent(part["word_accuracy"]))]
        if "cee_accuracy" in part:
            rows += [("CEE acc %", percent(part["cee_accuracy"])),
                     ("CEE vs word agreement %", percent(part["agreement"])),
                     ("vote splits", ", ".join(f"{k}: {v}" for k, v in part["splits"].items())),
                     ("abstaining votes", str(part["abstentions"]))]
        rows.append(("judge errors", f"{part['judge_errors']} ({percent(part['judge_error_rate'])} %)"))
        for method, scores in (part.get("human") or {}).items():
            rows.append((f"{method} vs human (n={scores['count']})",
                         f"{percent(scores['agreement'])} % · κ {scores['kappa']:.3f}"))
        for name, value in rows:
            table.add_row(name, value)
        return [table]

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        judged = (f", CEE judge {percent(part['cee_accuracy'])} % (agreement {percent(part.get('agreement'))} %)"
                  if "cee_accuracy" in part else "")
        return [f"- {benchmark}, open answers: word matching {percent(part['word_accuracy'])} %{judged}, "
                f"{part['judge_errors']} judge errors"]

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        """Word matching vs the judge ensemble, vote splits, judge errors, human agreement."""
        charts = []
        if page.charts:
            for name, part in parts.items():
                splits = part.get("splits") or {}
                if splits:
                    charts.append((f"{name}: judge vote splits", page.bar_chart(
                        list(splits), [("samples", [float(v) for v in splits.values()])], axis_label="samples")))
        return HtmlPart(self.name, self.title, page.render("judge.html.j2", benchmarks=parts, charts=charts))

    def read_options(self, option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> JudgeSettings | None:
        return read_settings(option)

    def describe(self, settings: JudgeSettings | None) -> dict[str, Any]:
        """The judge and its verdict reading; both None where word matching alone scores open answers."""
        return settings.describe() if settings is not None else {"judge": None, "judge_mode": None}

    def uses_cache(self, settings: JudgeSettings | None) -> bool:
        return settings is not None

    def review_step(self, settings: JudgeSettings | None, run: Any, cache: Any) -> ReviewStep | None:
        """The served judge's second pass, its replies in the response cache; a judge whose replies are recorded in
        a file (`replay:`) answers only the graded benchmarks' verdict steps."""
        if settings is None or settings.model_ref.recording:
            return None
        from pytest_mllm.judge.review import JudgePass

        return JudgePass(lambda: _judge(settings, cache), lambda: _choice_extractor(settings, cache))


def _judge(settings: JudgeSettings, cache: Any) -> Any:
    """The CEE judge; its replies share the response cache."""
    from pytest_mllm.judge.ensemble import Judge

    return Judge(settings.endpoint.client(), settings.model_ref.served_name, temperature=settings.temperature,
                 mode=settings.mode, max_tokens=settings.max_tokens, cache=cache, prompts=settings.prompts)


def _choice_extractor(settings: JudgeSettings, cache: Any) -> Any:
    """The judge LLM reading `choice` answers the rules cannot (VLMEvalKit's LLM extraction); temperature 0, its
    replies in the response cache."""
    from pytest_mllm.judge.choice_extractor import ChoiceExtractor

    return ChoiceExtractor(settings.endpoint.client(), settings.model_ref.served_name,
                           max_tokens=settings.max_tokens, cache=cache)


register_section("judge", JudgeSection())
