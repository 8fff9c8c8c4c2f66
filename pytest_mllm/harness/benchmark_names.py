"""Other tools' names for a run's benchmarks, where options name a benchmark: a `--mllm-data=NAME=DIR` key
or a gate's benchmark given by any name the benchmark answers to (`BenchmarkSpec.names`: lmms-eval's
`mmbench_en_dev`, VLMEvalKit's `MMBench_DEV_EN`) is the run's name for it."""

from __future__ import annotations

import dataclasses
import difflib
from pathlib import Path

from pytest_mllm.engine.spec import SpecError, find_spec, load_spec
from pytest_mllm.scoring.gates import Gate, GateSettings


def run_name(name: str, in_run: dict[str, Path] | None) -> str:
    """The run's name of the benchmark `name` denotes; a name no benchmark of the run answers to stays as given."""
    for own, path in (in_run or {}).items():
        try:
            if name == own or name in load_spec(path).names:
                return own
        except SpecError:
            continue
    return name


def gates_by_run_names(gates: GateSettings, in_run: dict[str, Path] | None) -> GateSettings:
    """Gates and regression limits with each benchmark by its run's name."""
    def renamed(gate: Gate) -> Gate:
        own = run_name(gate.benchmark, in_run) if gate.benchmark != "*" else gate.benchmark
        return dataclasses.replace(gate, benchmark=own) if own != gate.benchmark else gate

    return dataclasses.replace(gates, gates=[renamed(g) for g in gates.gates],
                               max_drops=[renamed(g) for g in gates.max_drops])


def name_fix(name: str, in_run: dict[str, Path]) -> str:
    """How to fix a name no benchmark of the run answers to: the run's closest name, or run that benchmark too."""
    try:
        find_spec(name)
    except SpecError:
        close = difflib.get_close_matches(name, list(in_run), n=1, cutoff=0.6)
        return f"did you mean {close[0]!r}?" if close else "use one of those names"
    return f"use one of those names, or add --mllm-bench={name} to run that benchmark too"
