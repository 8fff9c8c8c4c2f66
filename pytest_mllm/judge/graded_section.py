"""The judge-graded benchmarks' section: who graded and how (`graded.py`'s part of a benchmark's scopes), their
breakdowns, and the judge step that gives their parsers' verdicts (`grading.py`), with its options:

- `--mllm-judge=openai:MODEL` (a served model or an API) or `replay:FILE` (VLMEvalKit's judged file);
- `--mllm-judge-revision` (part of a served judge's identity), `--mllm-judge-grading-prompts` (a user's
  wording), `--mllm-judge-runs` (a repeatable grader's runs, averaged), `--mllm-judge-max-tokens` (a cap on
  each grader's own reply limit), `--mllm-judge-mode=compat` (a judge failure scored as VLMEvalKit scores it).

Two runs graded by different judges (another model, URL, revision, server or prompt) are never compared:
`comparable` says why, and gates and `pytest-mllm-compare` leave their limits "not run".
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_mllm.echo import printable
from pytest_mllm.judge.graded import GRADED, GRADED_BY, GATE_VALUES, PART, flat
from pytest_mllm.judge.graders import GradingPrompt
from pytest_mllm.judge.judged_file import JudgedFile
from pytest_mllm.sections import Column, HtmlPage, HtmlPart, Section, VerdictStep, percent, register_section

REPLAY = "replay:"
NEEDS_JUDGE = ("graded by a judge LLM: pass --mllm-judge=openai:MODEL (with --mllm-judge-base-url=URL for a served "
               "one) or --mllm-judge=replay:FILE (a judged file of VLMEvalKit's)")


@dataclass(frozen=True)
class GradingSettings:
    """The judge step's settings for a run, read from its options before anything runs."""

    judge: str  # --mllm-judge as given
    url: str | None = None  # where a served judge is (--mllm-judge-base-url, else $OPENAI_BASE_URL)
    mode: str = "strict"
    revision: str | None = None
    prompts: Mapping[str, GradingPrompt] = field(default_factory=dict)
    prompts_path: Path | None = None
    runs: int = 1
    max_tokens: int | None = None
    judged: JudgedFile | None = None  # replay:FILE, read

    @property
    def replay_path(self) -> Path | None:
        return Path(self.judge.removeprefix(REPLAY)).expanduser() if self.judge.startswith(REPLAY) else None

    def describe(self) -> dict[str, Any]:
        return {"judge_url": None if self.judged else self.url, "judge_revision": self.revision,
                "judge_runs": self.runs, "judge_grading_max_tokens": self.max_tokens,
                "judge_grading_prompts": {name: prompt.digest for name, prompt in self.prompts.items()}}

    def inputs(self) -> dict[str, Path | None]:
        return {"the --mllm-judge-grading-prompts file": self.prompts_path,
                "the --mllm-judge=replay: file": self.replay_path}


def read_settings(option: Callable[[str], Any], benchmarks: Mapping[str, Sequence[str]]) -> GradingSettings | None:
    """The judge step's settings (None without a judge); ValueError names the option and the fix."""
    judge = option("mllm_judge")
    if not judge:
        for name in ("mllm_judge_grading_prompts", "mllm_judge_revision"):
            if option(name):
                raise ValueError(f"--{name.replace('_', '-')} needs a judge: pass --mllm-judge=openai:MODEL too")
        graded = graded_benchmarks(benchmarks)
        if graded:
            raise ValueError(f"--mllm-bench: {', '.join(graded)} {'is' if len(graded) == 1 else 'are'} {NEEDS_JUDGE}")
        return None
    revision = option("mllm_judge_revision")
    if revision is not None and (not revision.strip() or len(revision) > 200 or not revision.isprintable()):
        raise ValueError("--mllm-judge-revision must be 1 to 200 printable characters (a checkpoint name, a dated "
                         f"model version), got {len(revision)} characters")
    runs = option("mllm_judge_runs")
    if not 1 <= runs <= 100:
        raise ValueError(f"--mllm-judge-runs must be 1 to 100, got {runs}")
    settings = GradingSettings(judge, option("mllm_judge_base_url") or os.environ.get("OPENAI_BASE_URL"),
                               option("mllm_judge_mode"), revision.strip() if revision else None,
                               runs=runs, max_tokens=option("mllm_judge_max_tokens"))
    return _with_files(settings, option("mllm_judge_grading_prompts"))


def _with_files(settings: GradingSettings, prompts: str | None) -> GradingSettings:
    """The settings with the user's prompts and the judged file read (checked before anything runs)."""
    from dataclasses import replace

    from pytest_mllm.judge.graders import GradingPromptsError, load_grading_prompts
    from pytest_mllm.judge.judged_file import JudgedFileError, read_judged_file

    if prompts:
        path = Path(prompts).expanduser()
        try:
            settings = replace(settings, prompts=load_grading_prompts(path), prompts_path=path)
        except GradingPromptsError as exc:
            raise ValueError(f"--mllm-judge-grading-prompts: {exc}") from None
    if settings.replay_path is not None:
        try:
            settings = replace(settings, judged=read_judged_file(settings.replay_path))
        except JudgedFileError as exc:
            raise ValueError(f"--mllm-judge={settings.judge}: {exc}") from None
    return settings


def graded_benchmarks(benchmarks: Mapping[str, Sequence[str]]) -> list[str]:
    """The benchmarks (of {name: the parsers its spec names}) whose answers a judge grades."""
    from pytest_mllm.scoring.score import PARSERS

    return [name for name, parsers in benchmarks.items()
            if any(p in PARSERS and PARSERS.get(p).verdict_by == GRADED_BY for p in parsers)]


def judge_line(judge: Mapping[str, Any]) -> str:
    """A judge identity in a few words: the model (a replayed file's judge), where, revision, the prompt."""
    if judge.get("kind") == "replay":
        said = f"the replies recorded in {judge.get('file')}" + (f" (judge {judge['model']})" if judge.get("model") else "")
    else:
        said = f"{judge.get('model')} at {judge.get('url')}"
        if judge.get("revision"):
            said += f", revision {judge['revision']}"
        if judge.get("server"):
            said += f", server {judge['server']}"
    prompt = str(judge.get("prompt") or "")
    return said + (f", prompt {prompt.removeprefix('sha256:')[:12]}" if prompt.startswith("sha256:") else "")


def judge_mismatch(before: Any, now: Any) -> str | None:
    """Why two runs' judges (as their parts list them, prompt digests included) make them incomparable; None
    when they are the same (or neither had one)."""
    def names(judges: Any) -> list[str]:
        return sorted(json.dumps(j, sort_keys=True) for j in judges or ())

    if names(before) == names(now):
        return None

    def said(judges: Any) -> str:
        return "; ".join(f"{j.get('model') or j.get('file')} ({j.get('prompt', 'no prompt digest')})"
                         for j in judges or ()) or "no judge"

    return (f"not compared: graded by different judges (baseline: {said(before)}; this run: {said(now)}), and a "
            "difference between judges is no regression; grade both runs with the same judge and prompts")


_SHOWN = (("accuracy", "acc %"), ("mean_score", "mean score %"), ("relative_score", "relative %"),
          ("prefetch_rate", "by rules %"))
_SOURCES = (("by_rules", "by the rules"), ("by_judge", "by the judge"), ("by_replay", "replayed"),
            ("by_fallback", "scored as VLMEvalKit scores a judge failure"), ("judge_errors", "judge errors"))


def _rows(part: Mapping[str, Any]) -> list[tuple[str, str, Mapping[str, Any]]]:
    return [(kind, name, scope) for kind, scopes in part.get("breakdowns", {}).items() for name, scope in scopes.items()]


def _headline(benchmark: str, part: Mapping[str, Any]) -> list[str]:
    counts = ", ".join(f"{part[key]} {label}" for key, label in _SOURCES if part.get(key))
    lines = [f"{benchmark} · judge-graded ({part['grader']}): {counts}; {part['judge_calls']} judge calls"]
    lines += [f"  graded by {judge_line(judge)}" for judge in part["judges"]]
    if part.get("runs"):
        lines.append(f"  {len(part['runs'])} judge runs: {', '.join(percent(t) for t in part['runs'])} % "
                     f"(std {percent(part['runs_std'])} pts)")
    return lines


class GradedSection(Section):
    title = "Judge-graded benchmarks"
    metrics = (PART,)
    columns = (Column("relative_score", "relative %", note="relative score: the model's mean rating over the "
                      "reference answer's"),
               Column("model_score", "model /10 %"), Column("reference_score", "reference /10 %"),
               Column("prefetch_rate", "by rules %"), Column("prefetch", "by rules", unit="number", shown=False))
    gate_values = GATE_VALUES
    gate_patterns = (rf"{PART}\.[^.]+\..+\.[^.]+",)  # a breakdown's scope: graded.<kind>.<name>.<value>
    record_parts = (GRADED,)

    def flat(self, part: Mapping[str, Any]) -> dict[str, float]:
        return flat(part)

    def terminal(self, benchmark: str, part: Mapping[str, Any]) -> list[Any]:
        """Who graded and how, then each breakdown's scopes."""
        from rich.table import Table
        from rich.text import Text

        out: list[Any] = [Text("\n".join(_headline(benchmark, part)))]
        rows = _rows(part)
        if rows:
            table = Table(title=f"{benchmark} by {', '.join(part['breakdowns'])}", title_justify="left", show_edge=False)
            shown = [(key, header) for key, header in _SHOWN if any(key in scope for _, _, scope in rows)]
            for header, justify in (("kind", "left"), ("name", "left"), ("n", "right"), ("err", "right"),
                                    *((h, "right") for _, h in shown)):
                table.add_column(header, justify=justify)  # type: ignore[arg-type]
            for kind, name, scope in rows:
                table.add_row(kind, printable(name), str(scope.get("count", 0)), str(scope.get("errors", 0)),
                              *(percent(scope.get(key)) for key, _ in shown))
            out.append(table)
        return out

    def markdown(self, benchmark: str, part: Mapping[str, Any]) -> list[str]:
        by = "; ".join(judge_line(j) for j in part["judges"]) or "no judge"
        return [f"- {benchmark}, judge-graded by {by}: {part['answered']} answers, {part['by_rules']} decided by the "
                f"rules, {part['judge_errors']} judge errors"]

    def html(self, parts: Mapping[str, Mapping[str, Any]], page: HtmlPage) -> HtmlPart:
        """Who graded each benchmark and how, and its breakdowns."""
        shown = {name: [(key, header) for key, header in _SHOWN
                        if any(key in scope for _, _, scope in _rows(part))] for name, part in parts.items()}
        benchmarks = {name: {"lines": _headline(name, part), "rows": _rows(part), "shown": shown[name]}
                      for name, part in parts.items()}
        return HtmlPart(self.name, self.title, page.render("judge_graded.html.j2", benchmarks=benchmarks))

    def comparable(self, before: Mapping[str, Any], now: Mapping[str, Any]) -> str | None:
        return judge_mismatch(before.get("judges"), now.get("judges"))

    def read_options(self, option: Callable[[str], Any],
                     benchmarks: Mapping[str, Sequence[str]]) -> GradingSettings | None:
        return read_settings(option, benchmarks)

    def verdict_step(self, settings: GradingSettings | None, run: Any, cache: Any) -> VerdictStep:
        """The grading of this run's judge: a served one (its replies cached under its identity) or a judged
        file's replies; without a judge, each answer's error says how to give one."""
        from pytest_mllm.judge.grading import Grading, LiveJudge, ReplayJudge, served_identity

        if settings is None:
            return _without_judge
        if settings.judged is not None:
            return Grading(ReplayJudge(settings.judged.rows, settings.judged.identity, mode=settings.mode),
                           settings.prompts)
        judge = run.sections["judge"]  # the judge's endpoint, read with the CEE judge's settings (`settings.py`)
        client = judge.endpoint.client()
        name = judge.model_ref.served_name
        identity = served_identity(judge.model, client.base_url, settings.revision, client.model_info(name))
        return Grading(LiveJudge(client, name, identity, cache=cache, mode=settings.mode, runs=settings.runs,
                                 max_tokens=settings.max_tokens), settings.prompts)


def _without_judge(triples: Sequence[tuple[Any, Any, bool]]) -> None:
    for record, _, _ in triples:
        record["error"] = f"not graded: this benchmark's answers are {NEEDS_JUDGE}"


register_section("graded", GradedSection())
