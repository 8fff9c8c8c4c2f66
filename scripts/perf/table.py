"""The table of the core, hotpath and throughput suites, and the --json document."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from perf.core import COLLECT_GOAL_S, RATIO_GOAL
from perf.hotpath import BATCH_SIZE, CACHED_GOAL, SHAPES_SAMPLES, THROUGHPUT_GOAL, in_process_figures, throughput_figures
from perf.throughput import SIM_DELAY_S, in_test_ratio
from perf.timing import NOISY_SPREAD, Case, Stats, public, ratio

TABLE_WIDTH = 128


def report(info: dict[str, Any], cases: dict[str, Stats], suites: set[str], samples: int, repeat: int,
           console: Console) -> dict[str, Any]:
    """Print the machine notes and the table of figures; return everything for --json."""
    ratios: dict[str, Any] = {}
    met: dict[str, bool] = {}
    goals: dict[str, Any] = {}
    overhead_us: dict[str, float] = {}
    if "core" in suites:
        ratios["run"] = ratio(cases["run_plugin"], cases["run_plain"])
        ratios["run_n2"] = ratio(cases["run_n2_plugin"], cases["run_n2_plain"])
        met.update(collect=cases["collect_plugin"].median < COLLECT_GOAL_S,
                   run=ratios["run"]["median"] <= RATIO_GOAL, run_n2=ratios["run_n2"]["median"] <= RATIO_GOAL)
        goals.update(collect_s=COLLECT_GOAL_S, ratio=RATIO_GOAL)
        for key in ("run", "run_n2"):
            overhead_us[key] = 1e6 * (cases[f"{key}_plugin"].median - cases[f"{key}_plain"].median) / samples
    if "hotpath" in suites:
        ratios["throughput"] = throughput_figures(cases["a_full"], cases["a_one"], cases["a_raw"],  # type: ignore[arg-type]
                                                 cases["a_pytest"])  # type: ignore[arg-type]
        ratios["cached"] = ratio(cases["cached_plugin"], cases["run_plain"])
        ratios["cached_json"] = ratio(cases["cached_json"], cases["run_plain"])
        ratios["fixed"] = ratio(cases["f_plugin8"], cases["f_floor"])
        overhead_us["cached"] = 1e6 * (cases["cached_plugin"].median - cases["run_plain"].median) / samples
        met.update(throughput=ratios["throughput"]["in_process"]["throughput_ratio"]["median"] >= THROUGHPUT_GOAL,
                   cached=ratios["cached"]["median"] <= CACHED_GOAL)
        goals.update(throughput_ratio=THROUGHPUT_GOAL, cached_ratio=CACHED_GOAL)
    if "throughput" in suites:
        ratios["throughput_bigger"] = in_process_figures(cases["a2_full"], cases["a2_raw"])  # type: ignore[arg-type]
        ratios["xdist"] = ratio(cases["d_n2"], cases["d_n1"])
        for server in ("serve", "sim"):
            ratios[f"openai_{server}"] = {**ratio(cases[f"e_{server}_c8"], cases[f"e_{server}_c1"]),
                                          "in_test": in_test_ratio(cases[f"e_{server}_c8"], cases[f"e_{server}_c1"])}
        met.update(xdist=ratios["xdist"]["median"] < 1)
        goals.update(xdist_ratio="< 1 (expected)")

    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['os']}",
                  soft_wrap=True)
    console.print(f"versions: Python {info['python']}, pytest {info['pytest']}, pytest-xdist {info['pytest-xdist']}, "
                  f"pytest-mllm {info['pytest-mllm']}, torch {info['torch']}, transformers {info['transformers']}",
                  soft_wrap=True)
    loads = "".join(f", {suite} suite {before} -> {after}" for suite, (before, after) in info["load"].items())
    console.print(f"1-min load average (before -> after): whole script {info['load_before']} -> {info['load_after']}"
                  f"{loads}", soft_wrap=True)

    figures = {"collect": ["collect_plugin", "collect_plain"], "run": ["run_plugin", "run_plain"],
               "run_n2": ["run_n2_plugin", "run_n2_plain"], "throughput": ["a_full", "a_one", "a_raw", "a_pytest"],
               "throughput_bigger": ["a2_full", "a2_raw"],
               "cached": ["cached_plugin", "cached_json", "run_plain"], "fixed": ["f_plugin8", "f_floor"], "xdist": ["d_n1", "d_n2"],
               "openai_serve": ["e_serve_c1", "e_serve_c8"], "openai_sim": ["e_sim_c1", "e_sim_c8"]}
    spreads = {name: max(cases[key].spread for key in keys) for name, keys in figures.items()
               if all(key in cases for key in keys)}
    noisy = {name: round(spread, 2) for name, spread in spreads.items() if spread > NOISY_SPREAD}

    def verdict(ok: bool, figure: str = "") -> str:
        text = "[green]met[/green]" if ok else "[bold red]missed[/bold red]"
        return text + (f" [yellow]noisy ({noisy[figure]:.1f}x)[/yellow]" if figure in noisy else "")

    def noise(figure: str, text: str) -> str:
        return text + (f" [yellow]noisy ({noisy[figure]:.1f}x)[/yellow]" if figure in noisy else "")

    runs = f"{repeat} run" + ("s" if repeat != 1 else "")
    table = Table(title=f"pytest-mllm speed: {runs} of each figure, medians and mins; c. and b. on {samples:,} samples",
                  title_justify="left")
    table.add_column("figure", no_wrap=True)
    table.add_column("wall med", justify="right", no_wrap=True)
    table.add_column("wall min", justify="right", no_wrap=True)
    table.add_column("CPU med", justify="right", no_wrap=True)
    table.add_column("goal", no_wrap=True)

    def seconds(key: str, goal: str = "") -> None:
        case = cases[key]
        table.add_row(case.label, f"{case.median:.2f} s", f"{case.best:.2f} s", f"{case.cpu_median:.2f} s", goal)

    def times(label: str, r: dict[str, float], goal: str = "", unit: str = "x", cpu: bool = True) -> None:
        table.add_row(label, f"{r['median']:.2f}{unit}", f"{r['min']:.2f}{unit}",
                      f"{r['cpu_median']:.2f}{unit}" if cpu and "cpu_median" in r else "", goal)

    def ms(label: str, r: dict[str, float]) -> None:
        table.add_row(label, f"{1e3 * r['median']:.1f} ms", f"{1e3 * r['min']:.1f} ms",
                      f"{1e3 * r['cpu_median']:.1f} ms" if "cpu_median" in r else "", "")

    if "core" in suites:
        seconds("collect_plugin", f"< {COLLECT_GOAL_S:g} s: {verdict(met['collect'], 'collect')}")
        seconds("collect_plain", "(reference)")
        for key, title in (("run", "c2."), ("run_n2", "c3.")):
            table.add_section()
            seconds(f"{key}_plugin")
            seconds(f"{key}_plain")
            times(f"{title} plugin/plain", ratios[key], f"<= {RATIO_GOAL:g}x: {verdict(met[key], key)}")
            table.add_row(f"{title} (plugin-plain)/test", f"{overhead_us[key]:.0f} µs", "", "", "")
    if "hotpath" in suites:
        tp = ratios["throughput"]
        table.add_section()
        seconds("a_full", "(Σ latency_s: " f"{tp['plugin_generation_s']['median']:.2f} s)")
        seconds("a_one", "(one-off: start, load, warm-up)")
        seconds("a_raw", f"(its model load, {tp['raw_load_s']:.1f} s, not counted)")


        steady = tp["in_process"]
        after_first = SHAPES_SAMPLES - BATCH_SIZE
        ms(f"a. plugin per sample, in-process/{after_first}", steady["plugin_s_per_sample"])
        ms(f"a. raw per sample, after batch 1/{after_first}", steady["raw_s_per_sample"])
        times("a. throughput plugin/raw, in-process", steady["throughput_ratio"],
              f">= {THROUGHPUT_GOAL:g}x: {verdict(met['throughput'], 'throughput')}")
        ms(f"a. plain pytest per sample, in-process/{after_first}", steady["plain_pytest_s_per_sample"])
        times("a. throughput plain pytest/raw, in-process", steady["plain_pytest_ratio"],
              "(a pytest test per sample, as shipped)", cpu=False)
        times("a. throughput plugin/plain pytest, in-process", steady["plugin_vs_plain_pytest"], "(information)",
              cpu=False)
        ms("a. plugin per sample (full-one)/359", tp["plugin_s_per_sample"])
        ms("a. raw per sample (loop/360)", tp["raw_s_per_sample"])
        times("a. throughput plugin/raw, differencing", tp["throughput_ratio"], noise("throughput", "(information)"))
        times("a. generation only raw/Σ latency_s", tp["generation_ratio"], "(information)")
        if "run_plain" in cases:
            table.add_section()
            seconds("cached_plugin")
            if "core" not in suites:
                seconds("run_plain")
            times("b. cached plugin/plain", ratios["cached"], f"<= {CACHED_GOAL:g}x: {verdict(met['cached'], 'cached')}")
            table.add_row("b. (plugin-plain)/test", f"{overhead_us['cached']:.0f} µs", "", "", "")
            seconds("cached_json", "(+ results JSON: intervals)")
            times("b2. cached with --mllm-json/plain", ratios["cached_json"], noise("cached", "(information)"))
        table.add_section()
        seconds("f_plugin8")
        seconds("f_floor", "(import torch + transformers, load)")
        times("f. fixed cost plugin/floor", ratios["fixed"], noise("fixed", "(no goal)"))
        table.add_row("f. plugin-floor", f"{cases['f_plugin8'].median - cases['f_floor'].median:.2f} s",
                      f"{cases['f_plugin8'].best - cases['f_floor'].best:.2f} s", "", "")
    if "throughput" in suites:
        table.add_section()
        bigger = ratios["throughput_bigger"]
        seconds("a2_full", "(in-process: after the first batch)")
        seconds("a2_raw")
        ms(f"a2. plugin per sample, in-process/{SHAPES_SAMPLES - BATCH_SIZE}", bigger["plugin_s_per_sample"])
        ms(f"a2. raw per sample, after batch 1/{SHAPES_SAMPLES - BATCH_SIZE}", bigger["raw_s_per_sample"])
        times("a2. throughput plugin/raw, bigger LLaVA", bigger["throughput_ratio"], "(information)", cpu=False)
        table.add_section()
        seconds("d_n1")
        seconds("d_n2")
        times("d. -n 2 / -n 1", ratios["xdist"], f"expect < 1: {verdict(met['xdist'], 'xdist')}")
        for server, title in (("serve", "transformers serve"), ("sim", "SIMULATED 50 ms server")):
            table.add_section()
            seconds(f"e_{server}_c1")
            seconds(f"e_{server}_c8")
            times(f"e. c8/c1, {title}", ratios[f"openai_{server}"], noise(f"openai_{server}", "(no goal)"))
            times(f"e. c8/c1 in-test time, {title}", ratios[f"openai_{server}"]["in_test"], "(Σ duration_s)",
                  cpu=False)
    console.print(table)
    raw_note = " (a. raw: around its loop)" if "hotpath" in suites else ""
    notes = [f"wall: perf_counter around each subprocess{raw_note}; CPU: user + system time of the process tree; "
             "goals apply to wall medians"]
    if noisy:
        notes.append(f"noisy: the runs of a figure varied more than {NOISY_SPREAD:g}x (slowest/fastest): the machine's "
                     "speed changed during it (other load?); see the load averages, and rerun before trusting it")
    if "core" in suites or "hotpath" in suites:
        notes.append(f"plain: pytest on {samples:,} trivial parametrized tests, same flags")
    if "hotpath" in suites:
        tp = ratios["throughput"]
        notes.append(
            f"a. {SHAPES_SAMPLES} shapes samples, batch {BATCH_SIZE}, torch threads {tp['torch_threads']} in both; "
            f"in-process (the goal's figure): plugin = time inside the 360-sample run from the end of the first "
            f"batch's {BATCH_SIZE} tests to the end of the last test, per sample after the first batch (then the "
            f"session finish: scores, results JSON, terminal summary, {tp['in_process']['session_finish_s']['median']:.2f} s); "
            f"raw = its loop minus its first batch, per sample after it; differencing: plugin per "
            f"sample = (360-sample run - 1-sample run)/359 (shared: start, collection, model load, first "
            f"generate); raw = loop time/360 (images {tp['raw_images_s']['median']:.2f} s of it); plugin answers "
            f"differing from the raw loop's: {tp['answers_differing']}; median of the per-repetition ratios "
            f"(adjacent runs): {tp['throughput_ratio']['median_of_repetitions']:.2f}x; plain pytest = the same "
            f"window in plain pytest (-p no:mllm) on {SHAPES_SAMPLES} tests taking their answers from the raw "
            f"loop's batches")
        notes.append(f"b. every timed cached run answered {samples:,} samples without asking the model (b: the model "
                     "leaves no marker file; b2: all records cached: true in --mllm-json); b2 adds the results JSON, "
                     "whose intervals bootstrap every metric over the records")
        floor = cases["f_floor"]
        notes.append(f"f. 8 shapes samples, cache off; floor = import torch + transformers "
                     f"{floor.detail_median('import_s'):.2f} s + load the tiny LLaVA {floor.detail_median('load_s'):.2f} s "
                     "(medians, inside the floor's interpreter)")
    if "throughput" in suites:
        n1 = cases["d_n1"]
        batches = -(-160 // BATCH_SIZE)
        notes.append(f"d. bigger random LLaVA ({info.get('llava_parameters', 0) / 1e6:.1f} M parameters), 160 samples; "
                     f"one batch of {BATCH_SIZE} on 1 thread: {n1.detail_median('latency_sum_s') / batches:.2f} s "
                     "(Σ latency_s of the -n 1 run / batches)")
        sim = cases["e_sim_c1"]
        notes.append(f"e. 80 samples; SIMULATED server = this script's threaded stdlib server, {SIM_DELAY_S * 1e3:.0f} ms "
                     f"per request (ideal in-test time c1 {80 * SIM_DELAY_S:.1f} s, c8 {10 * SIM_DELAY_S:.1f} s; "
                     f"measured c1 {sim.detail_median('duration_sum_s'):.2f} s, "
                     f"c8 {cases['e_sim_c8'].detail_median('duration_sum_s'):.2f} s)")
    for note in notes:
        console.print(note, soft_wrap=True)
    return {
        "machine": info, "suites": sorted(suites), "samples": samples, "repeat": repeat,
        "goals": goals, "met": met,
        "timings_s": {key: {"label": c.label, "command": ["pytest", *c.args] if isinstance(c, Case) else ["raw loop"],
                            "median": c.median, "min": c.best, "runs": c.times, "cpu_median": c.cpu_median,
                            "cpu_runs": c.cpu_times, "loads": c.loads, "details": public(c.details)}
                      for key, c in cases.items()},
        "ratios": ratios, "overhead_us_per_sample": overhead_us, "noisy": noisy,
    }
