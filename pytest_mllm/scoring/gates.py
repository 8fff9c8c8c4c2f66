"""Score gates: thresholds (`mme.perception>=1400`) and regression limits against a baseline run.

A metric path is `<benchmark>.<key>` where key is a flat metric key of that benchmark:
`accuracy`, `score`, `f1`, a group or task name (its headline metric), or
`<group or task>.<metric>`, `category.<name>.accuracy`, a section's `<section>.<value>`, ….
Each key means one thing: a group or task named like a metric of the overall scope (a subtask
"count": every scope reports `count`, its number of samples) has no bare key, `<benchmark>.count`
stays the benchmark's sample count and the subtask's headline is `<benchmark>.count.<headline>`
(`shadowed_scopes`).
"""

from __future__ import annotations

import difflib
import json
import operator
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import pytest_mllm.sections as sections
from pytest_mllm.shortfall import Shortfall, not_passed, run_was

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, "<=": operator.le, ">": operator.gt, "<": operator.lt, "==": operator.eq,
}
_NEGATED = {">=": "<", "<=": ">", ">": "<=", "<": ">=", "==": "!="}
_GATE = re.compile(r"^\s*([A-Za-z][\w\-]*)\.([^\s<>=]+)\s*(>=|<=|==|>|<)\s*([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
_DROP = re.compile(r"^\s*(?:([A-Za-z][\w\-]*)\.([^\s=]+)\s*=\s*)?(significant|\d+(?:\.\d+)?)\s*(?:@\s*(0?\.\d+))?\s*$")


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
    alpha: float | None = None  # a statistical limit (paired test against the baseline's records)
    significant: bool = False  # fails when the drop is significant at `alpha`, whatever its size


@dataclass
class Verdict:
    """A gate's outcome: "pass", "fail", or "not run" (its benchmark did not run; only with
    `GateSettings.skip_missing`, else a gate left unevaluated fails). A gate its value would pass fails when
    the run is not a full run (`withheld` says why: `shortfall.not_passed`)."""

    gate: Gate
    value: float | None
    limit: float | None
    verdict: str
    note: str = ""
    withheld: str = ""  # why a gate its value passes did not pass: the run was interrupted, limited, …

    def line(self) -> str:
        """One line for the end of the session: `bench.accuracy 0.497 < 0.99`, or why it failed."""
        gate = self.gate
        if self.withheld and self.value is not None and self.limit is not None:
            shown = f">= {self.limit:.4g}" if gate.max_drop is not None else f"{gate.op} {self.limit:g}"
            return f"{gate.benchmark}.{gate.key} {self.value:.4g} {shown}, {self.withheld}"
        if self.withheld:
            return f"{gate.text}: {self.withheld}"
        if self.value is not None and self.limit is not None:
            if gate.max_drop is not None:
                return f"{gate.benchmark}.{gate.key} {self.value:.4g} < {self.limit:.4g} (max drop {gate.max_drop:g})"
            return f"{gate.benchmark}.{gate.key} {self.value:.4g} {_NEGATED[gate.op]} {self.limit:g}"
        return f"{gate.text}: {self.note}" if self.note else gate.text


def parse_gate(text: str) -> Gate:
    """`bench.accuracy>=0.8` → Gate; GateSyntaxError explains the expected form."""
    match = _GATE.match(text)
    if not match:
        raise GateSyntaxError(
            f"invalid gate {text!r}: expected BENCHMARK.METRIC OP NUMBER with OP one of "
            f">=, >, <=, <, == (e.g. {EXAMPLE_GATES})"
        )
    bench, key, op, number = match.groups()
    return Gate(text.strip(), bench, key, op, float(number))


def parse_max_drop(text: str) -> Gate:
    """`bench.score=20` (that metric may drop by 20) or a bare `0.02` (every headline metric);
    `…=significant[@ALPHA]` (fails when the drop is significant, α 0.05 by default) and `…=20@0.05`
    (fails when the drop exceeds 20 with 95 % confidence) test the drop on the paired samples."""
    match = _DROP.match(text)
    if not match:
        raise GateSyntaxError(
            f"invalid --mllm-max-drop {text!r}: expected BENCHMARK.METRIC=DROP (e.g. '{EXAMPLE_DROP}'), "
            f"BENCHMARK.METRIC=significant[@ALPHA] or BENCHMARK.METRIC=DROP@ALPHA (e.g. '{EXAMPLE_DROP}@0.05'), "
            "or a bare DROP for every benchmark's headline metric"
        )
    bench, key, drop, alpha = match.groups()
    significant = drop == "significant"
    if significant and alpha is None:
        alpha = "0.05"
    if alpha is not None and not 0 < float(alpha) < 1:
        raise GateSyntaxError(f"invalid --mllm-max-drop {text!r}: ALPHA must lie between 0 and 1 (e.g. @0.05)")
    return Gate(text.strip(), bench or "*", key or "*", max_drop=0.0 if significant else float(drop),
                alpha=None if alpha is None else float(alpha), significant=significant)


def limit_text(limit: Gate) -> str:
    """`drop<=20`, `drop significant@0.05`, `drop<=20@0.05`: a regression limit as verdicts name it."""
    if limit.significant:
        return f"drop significant@{limit.alpha:g}"
    return f"drop<={limit.max_drop:g}" + (f"@{limit.alpha:g}" if limit.alpha is not None else "")


def shadowed_scopes(benchmark_metrics: Mapping[str, Any]) -> list[str]:
    """The group and task names that are also a value of the overall scope (a subtask "count"): their bare
    key is that overall value, their headline only `<name>.<headline>`."""
    overall = benchmark_metrics["overall"]
    return [name for kind in ("tasks", "groups") for name in benchmark_metrics.get(kind, {}) if name in overall]


def flatten(benchmark_metrics: Mapping[str, Any], headline: str) -> dict[str, float]:
    """One flat key → value dict per benchmark, the namespace gates and comparisons use."""
    flat: dict[str, float] = {}
    for metric, value in benchmark_metrics["overall"].items():
        flat[metric] = value
    shadowed = set(shadowed_scopes(benchmark_metrics))
    for scope_kind in ("tasks", "groups"):
        for name, scope in benchmark_metrics.get(scope_kind, {}).items():
            if headline in scope and name not in shadowed:
                flat[name] = scope[headline]
            for metric, value in scope.items():
                flat[f"{name}.{metric}"] = value
    for scope_kind, prefix in (("categories", "category"), ("l2_categories", "l2_category")):
        for name, scope in benchmark_metrics.get(scope_kind, {}).items():
            for metric, value in scope.items():
                flat[f"{prefix}.{name}.{metric}"] = value
    for section, part in sections.with_parts(benchmark_metrics):
        flat.update(section.flat(part))
    return flat


def evaluate_gate(gate: Gate, metrics: Mapping[str, Mapping[str, float]],
                  scopes: Mapping[str, Iterable[str]] | None = None,
                  headlines: Mapping[str, str] | None = None) -> Verdict:
    """Check a threshold gate against {benchmark: flat metrics}.

    `scopes` lists each benchmark's task and group names: a gate on one that had no
    sample in this run (deselected with -k, say) is "not run" rather than failed. A gate on the
    bare name of a task that an overall value shadows (`<benchmark>.count`: the sample count) says so in
    its note, naming the task's headline key (`headlines`: each benchmark's headline).
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
    standing = sections.stand_in(flat, gate.key)
    if standing is not None:
        return _on_interval(gate, standing)
    ok = _OPS[gate.op](value, gate.threshold)
    own = f"{gate.key}.{(headlines or {}).get(gate.benchmark)}"
    note = ""
    if scope in set((scopes or {}).get(gate.benchmark, ())) and "." not in gate.key and own in flat \
            and flat[own] != value:
        note = (f"{gate.benchmark}.{gate.key} is the benchmark's own {gate.key!r} value, not the headline of its "
                f"task or group {gate.key!r}: that is {gate.benchmark}.{own} ({flat[own]:.6g})")
    return Verdict(gate, value, gate.threshold, "pass" if ok else "fail", note)


def _on_interval(gate: Gate, standing: sections.StandIn) -> Verdict:
    """A threshold gate on a value a section stands in with (an estimate): it passes only when the whole interval
    lies on the passing side. An interval straddling the threshold, or a value with no interval (the subset's own,
    not an estimate), does not pass: the run cannot tell, and the verdict says to run the whole benchmark."""
    value, low, high = standing.value, standing.low, standing.high
    if low is None or high is None:
        if not _OPS[gate.op](value, gate.threshold):
            return Verdict(gate, value, gate.threshold, "fail", f"{standing.note}; no interval: decided on the value alone")
        why = f"not passed: {standing.note}, with no interval (run the whole benchmark to decide)"
        return Verdict(gate, value, gate.threshold, "fail", why, withheld=why)
    inside = [_OPS[gate.op](bound, gate.threshold) for bound in (low, high)]
    fails = not any(inside) if gate.op != "==" else not low <= gate.threshold <= high
    where = f"{standing.level:.0%} interval [{low:.4g}, {high:.4g}]"
    if fails:
        return Verdict(gate, value, gate.threshold, "fail", f"{standing.note}: {value:.4g}, {where}, wholly beyond the threshold")
    if all(inside) and gate.op != "==":
        return Verdict(gate, value, gate.threshold, "pass", f"{standing.note}: {value:.4g}, {where}, wholly within the threshold")
    why = (f"not passed: {standing.note}: {value:.4g}, {where} straddles {gate.threshold:g}: inconclusive "
           "(run the whole benchmark to decide)")
    return Verdict(gate, value, gate.threshold, "fail", why, withheld=why)


@dataclass(frozen=True)
class Baseline:
    """An earlier `--mllm-json` file, read once: per benchmark its flat metrics, its scopes (the sections' parts)
    and the digest of the data it ran on (none where the file was written before digests were recorded)."""

    metrics: dict[str, dict[str, float]]
    scopes: dict[str, Mapping[str, Any]]
    data: dict[str, str]


def read_baseline(path: Path) -> Baseline:
    """The baseline at `path`; a metric that is not a finite number (JSON's NaN, Infinity, -Infinity, which would
    make a limit pass or fail whatever the run scores) is refused, as is a file that is no results file."""
    try:
        benchmarks = json.loads(path.read_text(encoding="utf-8"), parse_constant=_non_finite)["benchmarks"]
        metrics = {name: dict(b["metrics"]) for name, b in benchmarks.items()}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:  # RecursionError: nested too deeply
        raise GateSyntaxError(f"cannot read baseline results {path}: {exc!s} (expected a --mllm-json file)") from None
    scopes = {name: b.get("scopes") or {} for name, b in benchmarks.items() if isinstance(b, Mapping)}
    data = {name: digest for name, b in benchmarks.items()
            if isinstance(b, Mapping) and isinstance(b.get("data"), Mapping)
            and isinstance(digest := b["data"].get("digest"), str)}
    return Baseline(metrics, scopes, data)


def load_baseline(path: Path) -> dict[str, dict[str, float]]:
    """{benchmark: flat metrics} from an earlier `--mllm-json` file (see `read_baseline`)."""
    return read_baseline(path).metrics


def data_changes(before: Mapping[str, str], now: Mapping[str, str | None]) -> dict[str, str]:
    """{benchmark: why its limits cannot be decided} where the baseline ran on other data than this run."""
    return {name: (f"the data changed (digest {digest} vs the baseline's {before[name]}): a data change, not a "
                   "model's regression; compare runs on the same data")
            for name, digest in now.items() if digest and before.get(name) and digest != before[name]}


def _non_finite(word: str) -> float:
    raise ValueError(f"it holds {word}, which is not a finite number: a baseline's metrics must be numbers "
                     "a run can score")


def evaluate_regressions(
    limits: list[Gate],
    current: Mapping[str, Mapping[str, float]],
    baseline: Mapping[str, Mapping[str, float]],
    headlines: Mapping[str, str],
    paired: Callable[[str], Any] | None = None,
    incomparable: Mapping[str, str] | None = None,
) -> list[Verdict]:
    """Each limit: the metric may fall below its baseline value by at most `max_drop`.

    A statistical limit (`alpha` set) is decided on the paired samples instead: `paired(bench)`
    returns that benchmark's `scoring.significance.PairedComparison`, or a string saying why there
    is none (then the limit fails, saying so). So is every limit on a value a section stands in for (an
    estimate from a subset, `sections.stand_in`): a plain one fails only when the whole interval of the drop
    (at the stand-in's level) exceeds it. A benchmark in `incomparable` (why, as a section says:
    `sections.incomparable`) is not compared: its limits are "not run", saying why.
    """
    verdicts: list[Verdict] = []
    for limit in limits:
        targets = ([(b, headlines[b]) for b in current] if limit.benchmark == "*"
                   else [(limit.benchmark, limit.key)])
        for bench, key in targets:
            gate = Gate(f"{bench}.{key} {limit_text(limit)}", bench, key, max_drop=limit.max_drop,
                        alpha=limit.alpha, significant=limit.significant)
            if bench not in current:
                verdicts.append(Verdict(gate, None, None, "not run", f"benchmark {bench!r} did not run"))
                continue
            if bench in (incomparable or {}):
                verdicts.append(Verdict(gate, current[bench].get(key), None, "not run", (incomparable or {})[bench]))
                continue
            before = baseline.get(bench, {}).get(key)
            now = current[bench].get(key)
            if before is None or now is None:
                missing = "baseline" if before is None else "this run"
                verdicts.append(Verdict(gate, now, None, "fail", f"{bench}.{key} missing in {missing}"))
                continue
            standing = sections.stand_in(current[bench], key)
            if standing is not None and limit.alpha is None:
                gate = Gate(gate.text, bench, key, max_drop=limit.max_drop, alpha=(1 - standing.level) / 2)
            if limit.alpha is not None or standing is not None:
                verdicts.append(_statistical(gate, standing.value if standing else now, before, paired))
                continue
            floor = before - (limit.max_drop or 0.0)
            verdicts.append(Verdict(gate, now, floor, "pass" if now >= floor else "fail",
                                    f"baseline {before:.4g}, change {now - before:+.4g}"))
    return verdicts


def _statistical(gate: Gate, now: float, before: float, paired: Callable[[str], Any] | None) -> Verdict:
    """A statistical limit's verdict from the paired comparison with the baseline."""
    comparison = paired(gate.benchmark) if paired else "no paired comparison was given"
    if isinstance(comparison, str):
        return Verdict(gate, now, None, "fail", f"baseline {before:.4g}; cannot test the drop: {comparison}")
    ok, note = comparison.drop_test(gate.key, gate.max_drop or 0.0, gate.alpha or 0.05, gate.significant)
    return Verdict(gate, now, None, "pass" if ok else "fail", f"baseline {before:.4g}, {note}")


@dataclass(frozen=True)
class GateSettings:
    """A run's gates: thresholds, and regression limits against a baseline results file."""

    gates: list[Gate]
    max_drops: list[Gate]
    baseline: Path | None = None
    skip_missing: bool = False  # a gate whose benchmark or scope did not run is "not run", not failed

    def benchmarks(self) -> set[str]:
        """The benchmarks the gates name ("*" excluded)."""
        return {g.benchmark for g in [*self.gates, *self.max_drops] if g.benchmark != "*"}

    def verdicts(self, current: Mapping[str, Mapping[str, float]], scopes: Mapping[str, Iterable[str]],
                 headlines: Mapping[str, str], paired: Callable[[str], Any] | None = None,
                 parts: Mapping[str, Mapping[str, Any]] | None = None,
                 shortfalls: Sequence[Shortfall] = (), data: Mapping[str, str | None] | None = None) -> list[Verdict]:
        """Every gate's verdict on {benchmark: flat metrics}; an unreadable baseline fails.
        `paired` decides statistical regression limits (see `evaluate_regressions`); `parts` ({benchmark: its
        scopes}) keeps a benchmark from comparison where a section says its baseline run cannot be compared, and
        `data` ({benchmark: the digest of its data}) where the baseline ran on other data.

        A gate left unevaluated (its benchmark did not run, was misspelled, or -k removed its
        task) fails, saying why, unless `skip_missing` makes that "not run" on purpose. While the run is not a
        full run (`shortfalls`: interrupted, limited, …) no gate passes: one its value passes fails, saying why.
        """
        verdicts = [evaluate_gate(gate, current, scopes, headlines) for gate in self.gates]
        if self.baseline:
            try:
                baseline = read_baseline(self.baseline)
            except GateSyntaxError as exc:
                baseline = Baseline({}, {}, {})
                verdicts.append(Verdict(Gate(str(self.baseline), "*", "*"), None, None, "fail", str(exc)))
            incomparable = {name: why for name, now in (parts or {}).items()
                            if (why := sections.incomparable(baseline.scopes.get(name) or {}, now)) is not None}
            incomparable = {**data_changes(baseline.data, data or {}), **incomparable}
            verdicts += evaluate_regressions(self.max_drops, current, baseline.metrics, headlines, paired, incomparable)
        if not self.skip_missing:
            ran = ", ".join(sorted(current)) or "none"
            for verdict in verdicts:
                if verdict.verdict == "not run":
                    verdict.verdict = "fail"
                    ran_note = f" (benchmarks that ran: {ran})" if "did not run" in verdict.note else ""
                    verdict.note = (f"not evaluated: {verdict.note}{ran_note}; "
                                    "pass --mllm-gate-skip-missing to let such a gate be 'not run'")
        return withhold(verdicts, shortfalls)


def gates_headline(verdicts: Sequence[Verdict]) -> str:
    """The gates in one sentence, never "passed" unless every gate ran and passed: "2 of 4 gates failed",
    "0 of 4 gates ran", "3 of 4 gates ran and passed; 1 did not run", "All 4 gates passed"."""
    total = len(verdicts)
    failed = sum(v.verdict == "fail" for v in verdicts)
    missing = sum(v.verdict == "not run" for v in verdicts)
    not_run = f"; {missing} did not run" if missing else ""
    if failed:
        return f"{failed} of {total} gates failed{not_run}"
    if missing == total:
        return f"0 of {total} gates ran"
    if missing:
        return f"{total - missing} of {total} gates ran and passed{not_run}"
    return f"All {total} gates passed"


def withhold(verdicts: list[Verdict], shortfalls: Sequence[Shortfall]) -> list[Verdict]:
    """`verdicts` on a run that is not a full run: none passes (a pass becomes a failure whose `withheld` says
    why), and the others' notes say it too. Unchanged for a full run (no `shortfalls`)."""
    if not shortfalls:
        return verdicts
    why = not_passed(shortfalls)
    for verdict in verdicts:
        if verdict.verdict == "pass":
            verdict.verdict, verdict.withheld = "fail", why
            verdict.note = f"{why}; {verdict.note}" if verdict.note else why
        else:
            verdict.note = f"{verdict.note}; {run_was(shortfalls)}" if verdict.note else run_was(shortfalls)
    return verdicts


# Examples in messages and help texts.
EXAMPLE_GATES = "'bench.accuracy>=0.8', 'bench.group_a>=0.75'"
EXAMPLE_DROP = "bench.accuracy=0.02"
_CATEGORY = re.compile(r"^(?:category|l2_category)\..+\.(?P<value>[^.]+)$")


@dataclass(frozen=True)
class MetricSpace:
    """The flat keys one benchmark can report, known before it runs: from its declared metrics, its
    groups and its tasks. `values` None: a metric does not declare its keys (nothing can be checked)."""

    values: frozenset[str] | None
    scopes: frozenset[str]  # task and group names
    categories: bool = False  # category.<name>.<value> keys exist

    @classmethod
    def of(cls, declared: Iterable[str], scopes: Iterable[str]) -> MetricSpace:
        """The space of a benchmark declaring these metrics, with these task and group names."""
        from pytest_mllm.scoring.metrics import applies_tests, enabled_metrics, scope_keys

        declared = list(declared)
        enabled = enabled_metrics(declared, (), applying=list(applies_tests()))
        return cls(scope_keys(declared), frozenset(scopes), "category" in enabled)

    def problem(self, key: str) -> str | None:
        """None when `key` can be reported, else why not, with the closest known keys."""
        if self.values is None:
            return None
        known = self.keys()
        if key in known:
            return None
        named = sections.gate_pattern()
        if named is not None and named.fullmatch(key):  # a section's key named by its data (not known before a run)
            return None
        category = _CATEGORY.match(key)
        if category and self.categories and category.group("value") in self.values:
            return None
        parts = key.split(".")
        if parts[0] in ("category", "l2_category") and len(parts) >= 3 and self.categories:
            known += [".".join([*parts[:-1], value]) for value in sorted(self.values)]
        close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else (
            "metrics: " + ", ".join(sorted(self.values)) + "; scopes: " + (", ".join(sorted(self.scopes)) or "none"))
        return f"no metric {key!r}; {hint}"

    def keys(self) -> list[str]:
        """Every key known by name (category names and the keys sections name by data are not known before a
        run); sections' keys are always allowed: their metrics apply on their own."""
        values = sorted(self.values or ())
        return [*values, *sections.gate_keys(),  # a scope named like a value has no bare key (`shadowed_scopes`)
                *(key for scope in sorted(self.scopes)
                  for key in ([] if scope in values else [scope]) + [f"{scope}.{v}" for v in values])]


def gate_path_problems(gates: Iterable[Gate], spaces: Mapping[str, MetricSpace]) -> list[str]:
    """Each gate or limit naming a metric its benchmark cannot report: one message per gate."""
    problems = []
    for gate in gates:
        space = spaces.get(gate.benchmark)
        found = space.problem(gate.key) if space is not None and gate.key != "*" else None
        if found:
            problems.append(f"gate {gate.text!r}: benchmark {gate.benchmark!r} has {found}")
    return problems
