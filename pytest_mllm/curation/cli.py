"""`pytest-mllm-curate BENCH --panel MODEL --panel MODEL … --out DIR`: LIME-M curation of a benchmark.

Runs every panel model on the benchmark (or reads their `--mllm-json` files), classifies each
sample by how many judges answer it correctly, drops easy, unknown and unanswered samples
(the last to a review list), drops answer leakage found by text-only answers, samples the rest
by difficulty to a target size, and writes a curated spec that runs like any other benchmark.
Exit status: 0 done, 1 a judge's run failed or nothing was left, 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from pytest_mllm import __version__
from pytest_mllm.curation.difficulty import PRESETS, ThresholdError, thresholds
from pytest_mllm.curation.leakage import ALPHA
from pytest_mllm.curation.panel import PanelError, Run, load_run
from pytest_mllm.curation.pipeline import Curation, Settings, curate
from pytest_mllm.curation.runs import PlannedRun, RunFailed, execute, plan_runs, summary_line
from pytest_mllm.curation.units import items_of
from pytest_mllm.engine.output_paths import OutputWriteError
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, find_spec, load_spec
from pytest_mllm.models.ref import ModelRef

PROG = "pytest-mllm-curate"
_DATA_OVERRIDE = re.compile(r"^([A-Za-z][\w\-]*)=(.+)$")


class UsageProblem(ValueError):
    """Input the command cannot work with; exit status 2 with this message."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Curate a benchmark the LIME-M way: a panel of judge models grades every sample's difficulty; "
                    "easy, unanswered and leaked samples are dropped and the rest is sampled by difficulty.",
        epilog="Outputs in --out: curated.yaml (run it with --mllm-bench), curated_ids.txt, manifest.json, "
               "review.jsonl, report.md, and runs/ with every judge's --mllm-json file.")
    parser.add_argument("bench", metavar="BENCH", help="a bundled benchmark name or the path of a benchmark spec")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the outputs")
    judges = parser.add_argument_group("the panel")
    judges.add_argument("--panel", action="append", default=[], metavar="MODEL",
                        help="a judge model, as --mllm takes it; repeat for each judge (LIME-M used 9-10)")
    judges.add_argument("--from-json", action="append", default=[], type=Path, metavar="FILE",
                        help="a judge's existing --mllm-json results instead of a run (files written with "
                             "--mllm-no-image count as text-only answers)")
    judges.add_argument("--mllm-data", action="append", default=[], metavar="[NAME=]PATH",
                        help="the benchmark's data, passed on to every run as pytest's --mllm-data")
    judges.add_argument("--pytest-args", default="", metavar="ARGS",
                        help="more pytest arguments for every run, e.g. \"-n 2 --mllm-batch-size=16\"")
    levels = parser.add_argument_group("difficulty")
    levels.add_argument("--thresholds", choices=sorted(PRESETS), default="code",
                        help="cut-off preset, scaled to the panel's size: code (LIME-M's code, 9 judges: easy 5-9, "
                             "middle 3-4, hard 1-2; default) or paper (10 judges: easy >=6, middle 3-5, hard <2, "
                             "2 counted as hard)")
    levels.add_argument("--easy-min", type=int, metavar="K", help="easy from K correct judges (overrides the preset)")
    levels.add_argument("--hard-max", type=int, metavar="K", help="hard up to K correct judges (overrides the preset)")
    leak = parser.add_argument_group("answer leakage")
    leak.add_argument("--text-only", action="append", default=[], metavar="MODEL",
                      help="a text-only model for the leakage pass (repeatable)")
    leak.add_argument("--text-only-json", action="append", default=[], type=Path, metavar="FILE",
                      help="existing --mllm-json results of a text-only run (repeatable)")
    leak.add_argument("--withhold-images", action="store_true",
                      help="also run the panel models with the images withheld (--mllm-no-image); the default when "
                           "no text-only model or file is given")
    leak.add_argument("--no-leakage", action="store_true", help="skip the leakage pass")
    leak.add_argument("--leak-threshold", default="auto", metavar="K",
                      help="drop a sample when more than K text-only answers are right; 'auto' (default) picks per "
                           f"task the smallest K that guessing exceeds for at most {ALPHA:.0%}% of samples "
                           "(K=0 for open answers)")
    size = parser.add_argument_group("sampling")
    size.add_argument("--target", type=int, metavar="N", help="sample the kept samples down to N, by task and class")
    size.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the sampling (default 0)")
    size.add_argument("--keep-unanswered", action="store_true",
                      help="keep samples no judge answers (they are still listed in review.jsonl)")
    review = parser.add_argument_group("review of unanswered samples")
    review.add_argument("--review-llm", metavar="openai:MODEL",
                        help="ask this LLM whether each unanswered sample's reference answer looks wrong")
    review.add_argument("--review-base-url", metavar="URL", help="its OpenAI-compatible endpoint ($OPENAI_BASE_URL)")
    review.add_argument("--review-api-key-env", metavar="VAR",
                        help="the environment variable holding its API key, which must then be set (default: "
                             "$OPENAI_API_KEY, sent only to the endpoint you give or OpenAI's own)")
    review.add_argument("--review-text-only", action="store_true", help="send the question without its image")
    review.add_argument("--review-max-tokens", type=int, default=128, metavar="N", help="reply length (default 128)")
    return parser


def _leak_threshold(text: str) -> int | None:
    if text == "auto":
        return None
    if not text.isdigit():
        raise UsageProblem(f"--leak-threshold must be 'auto' or a whole number of text-only answers, got {text!r}")
    return int(text)


def _data_root(spec: BenchmarkSpec, data: Sequence[str]) -> Path | None:
    """The data root a run resolves: --mllm-data (for this benchmark, or bare), the environment, the spec."""
    overrides: dict[str, str] = {}
    for value in data:
        match = _DATA_OVERRIDE.match(value)
        name, path = (match.group(1), match.group(2)) if match and not Path(value).exists() else ("", value)
        overrides[name] = path
    return spec.resolve_data_root(spec.data_override(overrides))


def _check_panel(args: argparse.Namespace) -> None:
    """Usage problems that need no file read: panel size, duplicates, the review LLM's form."""
    panel_size = len(args.panel) + len(args.from_json)
    if panel_size == 0:
        raise UsageProblem("no judge given: pass the panel as --panel MODEL (once per model, two or more) or as "
                           "--from-json FILE (existing --mllm-json results)")
    if panel_size == 1:
        given = args.panel[0] if args.panel else str(args.from_json[0])
        raise UsageProblem(
            f"a panel of {panel_size} model ({given}) cannot grade difficulty: a sample's difficulty is the number of "
            "judges that answer it correctly, so one judge only splits right from wrong. LIME-M used 9-10 judges. "
            "Pass two or more, e.g. --panel MODEL_A --panel MODEL_B --panel MODEL_C (4 or more give easy, middle "
            "and hard each a count), or more --from-json files")
    twice = sorted({m for m in args.panel if args.panel.count(m) > 1})
    if twice:
        raise UsageProblem(f"--panel {twice[0]} is given twice: each judge must count once")
    if args.review_llm and not ModelRef.parse(args.review_llm).served:
        raise UsageProblem(f"--review-llm must be openai:MODEL (an OpenAI-compatible endpoint), got {args.review_llm!r}")
    if args.review_llm:
        _review_key(args)  # a named key variable that is unset stops the command before any run
    if args.target is not None and args.target < 1:
        raise UsageProblem(f"--target must be at least 1, got {args.target}")


def _load_json_runs(args: argparse.Namespace, name: str) -> tuple[list[Run], list[Run]]:
    """Panel and text-only runs from existing files (a panel file with images withheld is text-only)."""
    panel, text_only = [], []
    for path in args.from_json:
        run = load_run(path, name)
        (text_only if run.images_withheld else panel).append(run)
    text_only += [load_run(path, name) for path in args.text_only_json]
    return panel, text_only


def _distinct(labels: Sequence[str], role: str) -> None:
    """Refuse a judge that would count twice (a model run and also given as a file, or two files)."""
    twice = sorted({label for label in labels if labels.count(label) > 1})
    if twice:
        raise UsageProblem(f"{role} judge {twice[0]!r} appears twice (as --panel, --text-only or in --from-json / "
                           "--text-only-json files): each judge must count once")


def _execute_all(console: Any, planned: Sequence[PlannedRun], bench: str, args: argparse.Namespace) -> None:
    """Run every planned judge, printing one line per run."""
    extra = shlex.split(args.pytest_args)
    for number, run in enumerate(planned, start=1):
        start = time.monotonic()
        with console.status(f"[{number}/{len(planned)}] {run.role}: {run.label} …"):
            done = execute(run, bench, args.mllm_data, extra, Path.cwd())
        console.print(f"[{number}/{len(planned)}] {run.role}: {run.label} — {summary_line(done)} "
                      f"({time.monotonic() - start:.1f} s)", highlight=False, soft_wrap=True, markup=False)


def _settings_document(args: argparse.Namespace, spec: BenchmarkSpec, root: Path | None, settings: Settings,
                       panel: Sequence[Run], text_only: Sequence[Run], leakage_on: bool) -> dict[str, Any]:
    """The manifest's settings: everything needed to redo the curation (never an API key)."""
    t = settings.thresholds
    return {
        "pytest_mllm": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "benchmark": spec.name, "spec": str(spec.path), "data_root": str(root) if root else None,
        "panel": [{"model": r.label, "results": str(r.source)} for r in panel],
        "text_only": [{"model": r.label, "results": str(r.source), "images_withheld": r.images_withheld}
                      for r in text_only],
        "thresholds": {"preset": args.thresholds, "easy_min": t.easy_min, "hard_max": t.hard_max, "panel": t.panel,
                       "ranges": t.ranges(), "origin": t.origin},
        "leakage": {"enabled": leakage_on, "threshold": "auto" if settings.leak_threshold is None
                    else settings.leak_threshold, "auto_alpha": ALPHA},
        "target": settings.target, "seed": settings.seed, "keep_unanswered": settings.keep_unanswered,
        "review": None if not args.review_llm else {
            "llm": args.review_llm, "base_url": args.review_base_url, "api_key_env": args.review_api_key_env,
            "images": not args.review_text_only},
        "pytest_args": args.pytest_args, "mllm_data": list(args.mllm_data),
    }


def _description(spec: BenchmarkSpec, curation: Curation, settings: Settings, panel: Sequence[Run]) -> str:
    kept = len(curation.kept_ids)
    return (f"{spec.name} curated by pytest-mllm-curate (LIME-M): {kept} of {len(curation.items)} samples. "
            f"A panel of {len(panel)} judges ({', '.join(r.label for r in panel)}) graded each sample by how many "
            f"answer it correctly ({settings.thresholds.describe()}); easy, unknown, unanswered and leaked samples "
            f"were dropped; the rest sampled by task and class"
            + (f" to {settings.target} samples" if settings.target else "") + f" with seed {settings.seed}. "
            "See manifest.json.")


def _review_key(args: argparse.Namespace) -> str | None:
    """The reviewer's API key, by the one key policy (`endpoint.api_key_for`)."""
    from pytest_mllm.engine.endpoint import ApiKeyError, api_key_for

    try:
        return api_key_for(args.review_api_key_env, args.review_base_url)
    except ApiKeyError as exc:
        raise UsageProblem(f"--review-api-key-env {exc.variable}: {exc}") from None


def _review(args: argparse.Namespace, curation: Curation, console: Any) -> None:
    """Ask the review LLM about every unanswered sample (never drops or keeps anything itself)."""
    from pytest_mllm.curation.review import ask_reviewer
    from pytest_mllm.engine.endpoint import Endpoint

    if not curation.review:
        console.print("review LLM: no unanswered sample to check", highlight=False, soft_wrap=True, markup=False)
        return
    endpoint = Endpoint(args.review_base_url, _review_key(args), max_retries=1)
    model = ModelRef.parse(args.review_llm).served_name
    with console.status(f"asking {args.review_llm} about {len(curation.review)} unanswered sample(s) …"):
        ask_reviewer(curation.review, curation.items, endpoint, model, send_images=not args.review_text_only,
                     max_tokens=args.review_max_tokens)
    errors = sum(1 for e in curation.review if e["llm"]["error"])
    console.print(f"review LLM: {len(curation.review) - errors} verdict(s), {errors} error(s) in review.jsonl",
                  highlight=False, soft_wrap=True, markup=False)


def _verify(spec_path: Path, kept_ids: Sequence[str]) -> None:
    """The curated spec loads exactly the kept samples, in order."""
    from pytest_mllm.loaders import load_samples

    curated = load_spec.__wrapped__(spec_path)  # type: ignore[attr-defined]
    loaded = [s.id for s in load_samples(curated, curated.resolve_data_root(None))]
    if loaded != list(kept_ids):
        raise SpecError(f"{spec_path} loads {len(loaded)} samples, not the {len(kept_ids)} kept ones")


OUT_FILES = ("manifest.json", "review.jsonl", "report.md", "curated.yaml", "curated_ids.txt")


def _check_out(args: argparse.Namespace, spec: BenchmarkSpec, root: Path | None) -> None:
    """--out and the files written in it are none of the inputs, regular files or new paths, and writable
    (`engine/output_paths.py`): UsageProblem naming the path otherwise, before any run."""
    from pytest_mllm.engine.output_paths import Input, Output, OutputError, check_outputs

    inputs = [Input(f"the benchmark spec {spec.path.name}", spec.path),
              *([Input(f"the data folder of benchmark {spec.name!r}", root, folder=True)] if root else []),
              *(Input(f"the --from-json file {p}", p) for p in args.from_json),
              *(Input(f"the --text-only-json file {p}", p) for p in args.text_only_json)]
    try:
        check_outputs([Output("--out", args.out, folder=True),
                       *(Output(f"--out ({name})", args.out / name) for name in OUT_FILES)], inputs)
    except OutputError as exc:
        raise UsageProblem(str(exc)) from None


def run(args: argparse.Namespace, console: Any) -> int:
    """The command once its arguments are parsed; UsageProblem, SpecError, PanelError mean bad input."""
    _check_panel(args)
    args.out = args.out.expanduser().resolve()
    leak_threshold = _leak_threshold(args.leak_threshold)
    spec = load_spec(find_spec(args.bench))
    root = _data_root(spec, args.mllm_data)
    _check_out(args, spec, root)
    from pytest_mllm.loaders import load_samples

    items = items_of(load_samples(spec, root))
    json_panel, json_text = _load_json_runs(args, spec.name)
    panel_size = len(args.panel) + len(json_panel)
    if panel_size < 2:
        raise UsageProblem(f"the panel has {panel_size} judge(s) once the --from-json files written with "
                           "--mllm-no-image are set aside as text-only answers: a panel needs at least two judges")
    try:
        levels = thresholds(panel_size, args.thresholds, easy_min=args.easy_min, hard_max=args.hard_max)
    except ThresholdError as exc:
        raise UsageProblem(str(exc)) from None
    if args.no_leakage:
        withhold, text_models, json_text = [], [], []
    elif args.withhold_images or not (args.text_only or args.text_only_json or json_text):
        withhold, text_models = list(args.panel), list(args.text_only)  # the panel without images, by default
    else:
        withhold, text_models = [], list(args.text_only)
    planned = plan_runs(args.out, args.panel, text_models, withhold)
    _distinct([r.model for r in planned if r.role == "panel"] + [r.label for r in json_panel], "panel")
    _distinct([r.label for r in planned if r.role == "text-only"] + [r.label for r in json_text], "text-only")
    tasks = len({i.task for i in items})
    console.print(f"{PROG}: {spec.name} — {len(items)} samples in {tasks} task(s); panel of {levels.panel} judges "
                  f"({len(args.panel)} to run, {len(json_panel)} from files); {len(planned)} pytest run(s) to make "
                  f"({sum(r.role == 'panel' for r in planned)} panel, {sum(r.role == 'text-only' for r in planned)} "
                  "text-only)", highlight=False, soft_wrap=True, markup=False)
    blind = [m for m in withhold if ModelRef.parse(m).instant]  # answer without looking at images
    if blind:
        console.print(f"note: judges that never look at images ({', '.join(blind)}) answer as before with images "
                      "withheld; give --text-only models for a leakage pass that means something for them",
                      highlight=False, soft_wrap=True, markup=False)
    bench = str(spec.path)
    try:
        _execute_all(console, planned, bench, args)
    except RunFailed as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1
    panel = [load_run(r.json_path, spec.name, r.model) for r in planned if r.role == "panel"] + json_panel
    text_only = [load_run(r.json_path, spec.name, r.label) for r in planned if r.role == "text-only"] + json_text
    settings = Settings(levels, leak_threshold, args.target, args.seed, args.keep_unanswered,
                        leakage_off="turned off with --no-leakage" if args.no_leakage else None)
    curation = curate(items, panel, text_only, settings)
    if args.review_llm:
        _review(args, curation, console)
    return _write(args, console, spec, root, curation, settings, panel, text_only)


def _write(args: argparse.Namespace, console: Any, spec: BenchmarkSpec, root: Path | None, curation: Curation,
           settings: Settings, panel: Sequence[Run], text_only: Sequence[Run]) -> int:
    """Every output file, then the report on the console."""
    from pytest_mllm.curation.manifest import build_manifest
    from pytest_mllm.curation.report import build_report, markdown, print_report
    from pytest_mllm.curation.spec_writer import curated_name, write_curated
    from pytest_mllm.report.results import write_json

    from pytest_mllm.engine.output_paths import write_atomically

    out: Path = args.out
    report = build_report(curation, panel, settings)
    document = _settings_document(args, spec, root if spec.needs_data else None, settings,
                                  panel, text_only, not args.no_leakage)
    write_json(out / "manifest.json", build_manifest(curation, document, report))
    write_atomically(out / "review.jsonl", "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in curation.review),
                     what="the review")
    title = f"LIME-M curation of {spec.name} → {curated_name(spec)}"
    write_atomically(out / "report.md", markdown(report, title), what="the curation report")
    print_report(console, report, title)
    kept = curation.kept_ids
    if not kept:
        print(f"{PROG}: error: no sample is left after curation; curated.yaml was not written "
              "(see manifest.json for why each sample was dropped)", file=sys.stderr)
        return 1
    spec_path = write_curated(out, spec, root, kept, _description(spec, curation, settings, panel))
    _verify(spec_path, kept)
    console.print(f"curated benchmark: {spec_path} ({len(kept)} samples); run it with "
                  f"pytest --mllm=MODEL --mllm-bench={spec_path}", highlight=False, soft_wrap=True, markup=False)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """The console command."""
    from rich.console import Console

    parser = build_parser()
    args = parser.parse_args(argv)
    console = Console()
    try:
        return run(args, console)
    except (UsageProblem, SpecError, PanelError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except OutputWriteError as exc:  # a full disk, a folder gone: one line, the previous files kept
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
