"""The command line: the suites chosen, their set-up and timed runs in order, the workers' modes."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from rich.console import Console
from rich.text import Text

import perf
from perf.core import GENERATED_MARKER, SAMPLE_ID, core_cases, make_workload
from perf.hotpath import ONE_SAMPLE, Floor, RawLoop, floor_worker, hotpath_cases, install_window_plugin, raw_loop_worker
from perf.peers import MLLM_PYTHON_VAR, PEER_ENV_VARS, PEER_IMAGES, PEER_TASKS, peers_main
from perf.table import TABLE_WIDTH, report
from perf.throughput import SimServer, TransformersServe, build_llava_worker, openai_cases, throughput_cases
from perf.timing import (
    ENTRY,
    RUN_FLAGS,
    SUBPROCESS_TIMEOUT_S,
    Case,
    PerfError,
    Stats,
    Timed,
    child_env,
    load_average,
    machine,
    measure,
    run_untimed,
)

SUITES = ("core", "hotpath", "throughput", "all", "peers")  # "peers": not in "all" (needs the peers' environments)
SUITE_PARTS = {"core": {"core"}, "hotpath": {"hotpath"}, "throughput": {"hotpath", "throughput"},
               "all": {"core", "hotpath", "throughput"}}  # "hotpath": figures a, b, f; "throughput": d, e


def run_suites(args: argparse.Namespace, tmp: Path, info: dict[str, Any], log: Console) -> dict[str, Stats]:
    """Set up and warm up (untimed, several things at once), then time every figure of the chosen suites."""
    suites = SUITE_PARTS[args.suite]
    work = make_workload(tmp, args.samples)
    env = child_env(tmp / "pycache")
    install_window_plugin(work.root, env)
    cases: dict[str, Stats] = {}
    core = core_cases(work)
    if "core" in suites:
        cases.update(core)
    else:
        cases["run_plain"] = core["run_plain"]  # b.'s reference
    raw: RawLoop | None = None
    raw_bigger: RawLoop | None = None
    serve: TransformersServe | None = None
    clock = time.perf_counter()
    elapsed = info["elapsed_s"] = {}

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        elapsed[name] = round(now - clock, 1)
        clock = now

    try:
        # Stage 1: fills the bytecode caches (torch and transformers included) and the response cache.
        stage: list[Case] = []
        if "core" in suites:
            bench = [work.spec.name, f"--mllm=replay:{work.predictions.name}"]
            stage += [Case("core warm-up", args=[*bench, *RUN_FLAGS, "-n", "2", "-k", SAMPLE_ID.format(1)],
                           expected={"passed": 1}),  # sample 1 has the right answer; xdist workers deselect quietly
                      core["collect_plain"]]
        if "throughput" in suites:
            cases.update(throughput_cases(tmp / "llava-bigger"))
        if "hotpath" in suites:
            cases.update(hotpath_cases(work))
            stage += [Case("throughput warm-up", expected=1, args=["--mllm=tiny-llava", "--mllm-bench=shapes",
                                                                     "--mllm-cache=off", *RUN_FLAGS, "-k", ONE_SAMPLE,
                                                                     "-n", "2"]),
                      Case("cache fill", expected=work.plugin_outcomes, args=cases["cached_plugin"].args)]  # type: ignore[attr-defined]
        log.print("set-up, not recorded: " + ", ".join(c.label for c in stage) + " (at once)")
        run_untimed(stage, work.root, env)
        (work.root / GENERATED_MARKER).unlink(missing_ok=True)  # the fill asked the model; timed runs must not
        if "hotpath" in suites:
            # Stage 2: the raw loop loads the tiny LLaVA, the bigger LLaVA is built, transformers serve starts.
            log.print("set-up, not recorded: raw loop's model load" + (", bigger LLaVA build, transformers serve "
                                                                       "start (at once)" if "throughput" in suites else ""))
            from pytest_mllm.models.tiny import ensure_tiny_llava

            tiny = ensure_tiny_llava()  # built by the warm-up run
            raw = RawLoop("a. raw generate loop, 360", work.root, env, tmp / "raw-loop.log")
            cases["a_raw"] = raw
            cases["f_floor"] = Floor("f. floor: imports + model load", tiny)
        if "throughput" in suites:
            build = subprocess.Popen([sys.executable, str(ENTRY), "_build-llava",
                                      str(tmp / "llava-bigger")], cwd=tmp, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
            serve = TransformersServe(tiny, tmp, env)
            output, _ = build.communicate(timeout=SUBPROCESS_TIMEOUT_S)
            if build.returncode != 0:
                raise PerfError(f"building the bigger LLaVA failed:\n{output[-2000:]}")
            info["llava_parameters"] = json.loads(output.strip().splitlines()[-1])["parameters"]
            raw_bigger = RawLoop("a2. raw generate loop, 360, bigger LLaVA", work.root, env, tmp / "raw-loop-bigger.log",
                                 folder=tmp / "llava-bigger")
            cases["a2_raw"] = raw_bigger
            serve.wait_healthy()
            raw_bigger.wait_ready()
        if raw is not None:
            raw.wait_ready()
        lap("set-up")

        if "core" in suites:
            info["load"]["core"] = [load_average(), None]
            run_group: list[Timed] = [cases["run_plugin"], cases["run_plain"]]
            if "hotpath" in suites:
                run_group += [cases["cached_plugin"], cases["cached_json"]]  # b. shares c2.'s plain runs
            measure([[cases["collect_plugin"], cases["collect_plain"]], run_group,
                     [cases["run_n2_plugin"], cases["run_n2_plain"]]], args.repeat, work.root, env, log)
            info["load"]["core"][1] = load_average()
            lap("core")
        if "hotpath" in suites:
            assert raw is not None
            info["load"]["hotpath"] = [load_average(), None]
            groups: list[Sequence[Timed]] = [[cases["a_full"], cases["a_one"], raw, cases["a_pytest"]]]
            if "core" not in suites:
                groups.append([cases["cached_plugin"], cases["cached_json"], cases["run_plain"]])
            groups.append([cases["f_plugin8"], cases["f_floor"]])
            measure(groups, args.repeat, work.root, env, log)
            raw.close()
            info["load"]["hotpath"][1] = load_average()
            lap("hotpath")
        if "throughput" in suites:
            assert serve is not None
            info["load"]["throughput"] = [load_average(), None]
            assert raw_bigger is not None
            measure([[cases["a2_full"], raw_bigger], [cases["d_n1"], cases["d_n2"]]], args.repeat, work.root, env, log)
            raw_bigger.close()
            sim = SimServer()
            try:
                sim_cases = openai_cases(tmp, "sim", "sim", sim.base_url, "SIMULATED server",
                                         {"passed": 40, "incorrect": 40})
                cases.update(sim_cases)
                warm = Case("warm-up", expected=1, args=[*sim_cases["e_sim_c8"].args[:-1], "-k", ONE_SAMPLE])  # type: ignore[attr-defined]
                run_untimed([warm], work.root, env)
                measure([list(sim_cases.values())], args.repeat, work.root, env, log)
            finally:
                sim.stop()
            serve_cases = openai_cases(tmp, "serve", str(tiny), serve.base_url, "transformers serve", 80)
            cases.update(serve_cases)
            warm = Case("warm-up", expected=1, args=[*serve_cases["e_serve_c8"].args[:-1], "-k", ONE_SAMPLE])  # type: ignore[attr-defined]
            run_untimed([warm], work.root, env)  # the server loads its model on the first request
            measure([list(serve_cases.values())], args.repeat, work.root, env, log)
            info["load"]["throughput"][1] = load_average()
            lap("throughput")
    finally:
        for loop in (raw, raw_bigger):
            if loop is not None:
                loop.close()
        if serve is not None:
            serve.stop()
    return cases


def main(argv: list[str] | None = None) -> int:
    """Generate the workloads, time every figure, print the table; 2 on a failed or miscounted run."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_raw-loop"] and len(argv) <= 2:
        return raw_loop_worker(Path(argv[1]) if len(argv) == 2 else None)
    if argv[:1] == ["_build-llava"] and len(argv) == 2:
        return build_llava_worker(Path(argv[1]))
    if argv[:1] == ["_floor"] and len(argv) == 2:
        return floor_worker(Path(argv[1]))
    parser = argparse.ArgumentParser(description=perf.__doc__.split("\n\n")[0])
    parser.add_argument("--suite", choices=SUITES, default="all",
                        help="core: collection and runs vs plain pytest; hotpath: a, b, f; throughput: a to f; "
                             "all (default)")
    parser.add_argument("--samples", type=int, default=10_000, help="size of the synthetic benchmark (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure (default 3)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures as JSON here")
    peers = parser.add_argument_group("peers suite (docs/peers.md)")
    peers.add_argument("--mllm-python", metavar="PATH",
                       help=f"python of a virtual environment with pytest-mllm[hf] alone, as each peer has only its own "
                            f"(else ${MLLM_PYTHON_VAR}, else this interpreter)")
    peers.add_argument("--lmms-eval-python", metavar="PATH",
                       help=f"python of lmms-eval's virtual environment (else ${PEER_ENV_VARS['lmms_eval_python']})")
    peers.add_argument("--vlmeval-python", metavar="PATH",
                       help=f"python of VLMEvalKit's virtual environment (else ${PEER_ENV_VARS['vlmeval_python']})")
    peers.add_argument("--vlmeval-src", metavar="DIR",
                       help=f"VLMEvalKit's source tree, holding run.py (else ${PEER_ENV_VARS['vlmeval_src']})")
    peers.add_argument("--peer-images", type=int, default=PEER_IMAGES,
                       help=f"images of the MME-layout data, two questions each (default {PEER_IMAGES})")
    args = parser.parse_args(argv)
    if args.samples < 2 or args.repeat < 1:
        parser.error("--samples must be at least 2 and --repeat at least 1")
    if args.peer_images < len(PEER_TASKS):  # VLMEvalKit's MME scores need every subtask
        parser.error(f"--peer-images must be at least {len(PEER_TASKS)}, one per MME subtask")

    console, log = Console(), Console(stderr=True)
    if console.width < TABLE_WIDTH:  # not a terminal (80 columns) or a narrow one: the table needs more
        console = Console(width=TABLE_WIDTH)
    if args.suite == "peers":
        return peers_main(args, console, log)
    info = machine()
    info["load_before"] = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-perf-") as tmp:
        try:
            cases = run_suites(args, Path(tmp), info, log)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(Text("error: ", style="bold red") + Text(str(exc)))
            return 2
        finally:
            shutil.rmtree(Path(tmp) / "pycache", ignore_errors=True)
    info["total_s"] = round(time.perf_counter() - started, 1)
    info["load_after"] = load_average()
    suites = SUITE_PARTS[args.suite]
    document = report(info, cases, suites, args.samples, args.repeat, console)
    parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in info["elapsed_s"].items())
    console.print(f"total time of this script: {info['total_s']:.0f} s ({parts})")
    if args.json:
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0
