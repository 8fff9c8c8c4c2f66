"""Score gates: thresholds (`mme.perception>=1400`) and regression limits against a baseline run.

A metric path is `<benchmark>.<key>` where key is a flat metric key of that benchmark:
`accuracy`, `score`, `f1`, a group or task name (its headline metric), or
`<group or task>.<metric>`, `category.<name>.accuracy`, ….
"""

from __future__ import annotations

import json
import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
}
_GATE = re.compile(r"^\s*([A-Za-z][\w\-]*)\.([^\s<>=]+)\s*(>=|<=|==|>|<)\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_DROP = re.compile(r"^\s*(?:([A-Za-z][\w\-]*)\.([^\s=]+)\s*=\s*)?(\d+(?:\.\d+)?)\s*$")


class GateSyntaxError(ValueError):
    """A gate expression that cannot be read."""


@dataclass(frozen=True)
class Gate:
    """`benchmark.key op threshold`, or a regression limit when `max_drop` is set."""

    text: str
    benchmark: str
    key: str
    op: str = ">="
    threshold: float = 0.0
    max_drop: float | None = None


@dataclass
class Verdict:
    """A gate's outcome: "pass", "fail", or "not run" (its benchmark did not run)."""

    gate: Gate
    value: float | None
    limit: float | None
    verdict: str
    note: str = ""


def parse_gate(text: str) -> Gate:
    """`mme.perception>=1400` → Gate; GateSyntaxError explains the expected form."""
    match = _GATE.match(text)
    if not match:
        raise GateSyntaxError(
            f"invalid gate {text!r}: expected BENCHMARK.METRIC OP NUMBER with OP one of "
            ">=, >, <=, <, == (e.g. 'mme.perception>=1400', 'pope.f1>=0.85')"
        )
    bench, key, op, number = match.groups()
    return Gate(text.strip(), bench, key, op, float(number))


def parse_max_drop(text: str) -> Gate:
    """`mme.perception=20` (that metric may drop by 20) or a bare `0.02` (every headline metric)."""
    match = _DROP.match(text)
    if not match:
        raise GateSyntaxError(
            f"invalid --mllm-max-drop {text!r}: expected BENCHMARK.METRIC=DROP (e.g. 'mme.perception=20') "
            "or a bare DROP for every benchmark's headline metric"
        )
    bench, key, drop = match.groups()
    return Gate(text.strip(), bench or "*", key or "*", max_drop=float(drop))


def flatten(benchmark_metrics: Mapping[str, Any], headline: str) -> dict[str, float]:
    """One flat key → value dict per benchmark, the namespace gates and comparisons use."""
    flat: dict[str, float] = {}
    for metric, value in benchmark_metrics["overall"].items():
        flat[metric] = value
    for scope_kind in ("tasks", "groups"):
        for name, scope in benchmark_metrics.get(scope_kind, {}).items():
            if headline in scope and name not in flat:  # a task named like an overall metric ("count")
                flat[name] = scope[headline]
            for metric, value in scope.items():
                flat[f"{name}.{metric}"] = value
    for scope_kind, prefix in (("categories", "category"), ("l2_categories", "l2_category")):
        for name, scope in benchmark_metrics.get(scope_kind, {}).items():
            for metric, value in scope.items():
                flat[f"{prefix}.{name}.{metric}"] = value
    judge = benchmark_metrics.get("judge") or {}
    for name in ("word_accuracy", "cee_accuracy", "agreement", "judge_error_rate"):
        if judge.get(name) is not None:
            flat[f"judge.{name}"] = judge[name]
    vrp = benchmark_metrics.get("vrp") or {}
    for name in ("consistency", "relation_holds", "sensitivity"):
        if vrp.get(name) is not None:
            flat[f"vrp.{name}"] = vrp[name]
    tp_eval = benchmark_metrics.get("tp_eval") or {}
    for name in ("original_accuracy", "optimized_accuracy", "improved_tasks", "improvement_ratio"):
        if tp_eval.get(name) is not None:
            flat[f"tp_eval.{name}"] = tp_eval[name]
    for kind, prefix in (("levels", "vrp.level"), ("axes", "vrp.axis")):
        for name, scope in vrp.get(kind, {}).items():
            flat[f"{prefix}.{name}.accuracy"] = scope["accuracy"]
    return flat


def evaluate_gate(gate: Gate, metrics: Mapping[str, Mapping[str, float]],
                  scopes: Mapping[str, Iterable[str]] | None = None) -> Verdict:
    """Check a threshold gate against {benchmark: flat metrics}.

    `scopes` lists each benchmark's task and group names: a gate on one that had no
    sample in this run (deselected with -k, say) is "not run" rather than failed.
    """
    if gate.benchmark not in metrics:
        return Verdict(gate, None, gate.threshold, "not run", f"benchmark {gate.benchmark!r} did not run")
    flat = metrics[gate.benchmark]
    scope = gate.key.split(".")[0]
    if gate.key not in flat and scope not in flat and scope in set((scopes or {}).get(gate.benchmark, ())):
        return Verdict(gate, None, gate.threshold, "not run", f"no sample of {scope!r} ran")
    if gate.key not in flat:
        sample = ", ".join(sorted(flat)[:12])
        return Verdict(gate, None, gate.threshold, "fail", f"no metric {gate.key!r} (have: {sample}, …)")
    value = flat[gate.key]
    ok = _OPS[gate.op](value, gate.threshold)
    return Verdict(gate, value, gate.threshold, "pass" if ok else "fail")


def load_baseline(path: Path) -> dict[str, dict[str, float]]:
    """{benchmark: flat metrics} from an earlier `--mllm-json` file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {name: dict(b["metrics"]) for name, b in data["benchmarks"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GateSyntaxError(f"cannot read baseline results {path}: {exc!s} (expected a --mllm-json file)") from None


def evaluate_regressions(
    limits: list[Gate],
    current: Mapping[str, Mapping[str, float]],
    baseline: Mapping[str, Mapping[str, float]],
    headlines: Mapping[str, str],
) -> list[Verdict]:
    """Each limit: the metric may fall below its baseline value by at most `max_drop`."""
    verdicts: list[Verdict] = []
    for limit in limits:
        targets = ([(b, headlines[b]) for b in current] if limit.benchmark == "*"
                   else [(limit.benchmark, limit.key)])
        for bench, key in targets:
            gate = Gate(f"{bench}.{key} drop<={limit.max_drop:g}", bench, key, max_drop=limit.max_drop)
            if bench not in current:
                verdicts.append(Verdict(gate, None, None, "not run", f"benchmark {bench!r} did not run"))
                continue
            before = baseline.get(bench, {}).get(key)
            now = current[bench].get(key)
            if before is None or now is None:
                missing = "baseline" if before is None else "this run"
                verdicts.append(Verdict(gate, now, None, "fail", f"{bench}.{key} missing in {missing}"))
                continue
            floor = before - (limit.max_drop or 0.0)
            verdicts.append(Verdict(gate, now, floor, "pass" if now >= floor else "fail",
                                    f"baseline {before:.4g}, change {now - before:+.4g}"))
    return verdicts


@dataclass(frozen=True)
class GateSettings:
    """A run's gates: thresholds, and regression limits against a baseline results file."""

    gates: list[Gate]
    max_drops: list[Gate]
    baseline: Path | None = None

    def verdicts(self, current: Mapping[str, Mapping[str, float]], scopes: Mapping[str, Iterable[str]],
                 headlines: Mapping[str, str]) -> list[Verdict]:
        """Every gate's verdict on {benchmark: flat metrics}; an unreadable baseline fails."""
        verdicts = [evaluate_gate(gate, current, scopes) for gate in self.gates]
        if self.baseline:
            try:
                baseline = load_baseline(self.baseline)
            except GateSyntaxError as exc:
                baseline = {}
                verdicts.append(Verdict(Gate(str(self.baseline), "*", "*"), None, None, "fail", str(exc)))
            verdicts += evaluate_regressions(self.max_drops, current, baseline, headlines)
        return verdicts
