"""Noise or regression? The regression gates on seeded pairs of runs, driven by the pytest-free core.

    python scripts/significance_demo.py [--pairs 100] [--bench shapes] [--drop 0.08] [--bootstrap 200]

About 15 s for 4 × 100 pairs on shapes; `--bootstrap 200` adds the `DROP@0.05` limit (minutes).

Each pair is a base run and a head run of a simulated model on every sample of the benchmark
(answers go through the real prompt rendering, parser and scorer of `Evaluation.answer`):

- null, independent: `baseline:random:s` against `baseline:random:s'` (no real change);
- null, 20 % redrawn: the head re-answers a random 20 % of the samples (sampling noise of a model
  that mostly repeats itself; no real change);
- planted drop: the head repeats the base's answers but gets a seeded `--drop` fraction of the
  samples wrong on purpose (a replay with k % flipped to wrong: a real drop of about k × accuracy);
- planted drop, independent: as the first null, plus the same forced wrong answers.

For each pair the gates are evaluated as `--mllm-max-drop` evaluates them (`evaluate_regressions`
with the paired comparison): `<bench>.accuracy=0.02` (the plain limit), `<bench>.accuracy=significant`
(McNemar at 0.05) and `<bench>.accuracy=0.02@0.05` (the one-sided 95 % bound of the drop above
2 pp; a paired bootstrap of `--bootstrap` resamples, when given). Printed: how many pairs pass each gate, the
mean measured drop, and the minimum detectable effects of the bundled benchmarks.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import time
from pathlib import Path
from typing import Sequence

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_mllm.engine.spec import find_spec  # noqa: E402
from pytest_mllm.evaluation import Evaluation, EvaluationSettings  # noqa: E402
from pytest_mllm.models.baselines import RandomBaseline  # noqa: E402
from pytest_mllm.report.results import compute_results  # noqa: E402
from pytest_mllm.sample import Request, Response  # noqa: E402
from pytest_mllm.scoring.gates import evaluate_regressions, parse_max_drop  # noqa: E402
from pytest_mllm.scoring.significance import PairedComparison  # noqa: E402
from pytest_mllm.scoring.uncertainty import minimum_detectable_effect  # noqa: E402


def _uniform(*parts: object) -> float:
    """A seeded number in [0, 1) per sample, independent of order."""
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class SimulatedModel:
    """`baseline:random:seed`, with a fraction of samples re-answered by another seed and a
    fraction answered wrong on purpose (seeded per sample)."""

    needs_images = False

    def __init__(self, seed: int, redraw: float = 0.0, redraw_seed: int = 0, wrong: float = 0.0,
                 wrong_seed: int = 0) -> None:
        self.name = f"simulated(seed={seed}, redraw={redraw}, wrong={wrong})"
        self.base, self.other = RandomBaseline(seed), RandomBaseline(redraw_seed)
        self.redraw, self.redraw_seed, self.wrong, self.wrong_seed = redraw, redraw_seed, wrong, wrong_seed

    def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [Response(self._answer(r)) for r in requests]

    def _answer(self, request: Request) -> str:
        sample = request.sample
        if self.wrong and _uniform("wrong", self.wrong_seed, sample.id) < self.wrong:
            if sample.answer_type == "choice" and sample.choices:
                wrong = [letter for letter, _ in sample.choices if letter.lower() != sample.answer.lower()]
                return random.Random(sample.id).choice(wrong)
            return "No" if sample.answer.lower() == "yes" else "Yes"
        model = self.other if self.redraw and _uniform("redraw", self.redraw_seed, sample.id) < self.redraw else self.base
        return model.generate([request])[0].text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--bench", default="shapes")
    parser.add_argument("--drop", type=float, default=0.08, help="fraction of samples answered wrong on purpose")
    parser.add_argument("--max-drop", type=float, default=0.02, help="the plain limit, in accuracy units")
    parser.add_argument("--bootstrap", type=int, default=0,
                        help="resamples of the paired bootstrap for the DROP@0.05 limit (0, the default: skip that limit)")
    args = parser.parse_args(argv)

    evaluation = Evaluation(EvaluationSettings(model="baseline:random", cache_mode="off"))
    spec = evaluation.spec(find_spec(args.bench))
    samples = [s for s in evaluation.samples_for(spec) if hasattr(s, "answer")]
    specs = {spec.name: spec}
    headline = {spec.name: "accuracy"}

    def run(model: SimulatedModel) -> tuple[dict[str, float], list]:
        core = Evaluation(EvaluationSettings(model="simulated", cache_mode="off"), make_model=lambda: model)
        records = core.answer([(s, spec) for s in samples])
        for order, record in enumerate(records):
            record["order"] = order
        result = compute_results(specs, records)[spec.name]
        return result.metrics, records

    plain = parse_max_drop(f"{spec.name}.accuracy={args.max_drop:g}")
    significant = parse_max_drop(f"{spec.name}.accuracy=significant")
    bounded = parse_max_drop(f"{spec.name}.accuracy={args.max_drop:g}@0.05")
    limits = [plain, significant] + ([bounded] if args.bootstrap else [])
    setup = None
    scenarios = {
        "null, independent re-run": lambda s: (SimulatedModel(s), SimulatedModel(s + 10_000)),
        "null, 20 % redrawn": lambda s: (SimulatedModel(s), SimulatedModel(s, redraw=0.2, redraw_seed=s + 10_000)),
        f"planted drop ({args.drop:.0%} forced wrong)": lambda s: (
            SimulatedModel(s), SimulatedModel(s, wrong=args.drop, wrong_seed=s)),
        f"planted drop, independent re-run ({args.drop:.0%} forced wrong)": lambda s: (
            SimulatedModel(s), SimulatedModel(s + 10_000, wrong=args.drop, wrong_seed=s)),
    }
    print(f"{spec.name}: {len(samples)} samples, {args.pairs} seeded pairs per scenario; gates: "
          + ", ".join(limit.text for limit in limits) + (f" (bootstrap {args.bootstrap} resamples)" if args.bootstrap else ""))
    started = time.perf_counter()
    for title, make in scenarios.items():
        passes = [0] * len(limits)
        drops = []
        for pair in range(args.pairs):
            base_model, head_model = make(2 * pair + 1)
            (base, base_records), (head, head_records) = run(base_model), run(head_model)
            if setup is None:
                setup = compute_results(specs, base_records)[spec.name].setup
            comparison = PairedComparison(base_records, head_records, setup, samples=args.bootstrap, seed=pair)
            verdicts = evaluate_regressions(limits, {spec.name: head}, {spec.name: base}, headline,
                                            lambda _name, found=comparison: found)
            drops.append(base["accuracy"] - head["accuracy"])
            for n, verdict in enumerate(verdicts):
                passes[n] += verdict.verdict == "pass"
        mean = sum(drops) / len(drops)
        print(f"\n{title}: mean drop {100 * mean:+.2f} pp (min {100 * min(drops):+.2f}, max {100 * max(drops):+.2f})")
        for limit, count in zip(limits, passes):
            print(f"  {limit.text:<32} passes {count:3d}/{args.pairs}, fails {args.pairs - count:3d}/{args.pairs}")
    print(f"\n({time.perf_counter() - started:.0f} s)")

    print("\nMinimum detectable accuracy difference, alpha 0.05 two-sided, 80 % power:")
    print(f"  {'benchmark':<34}{'n':>6}{'unpaired p=0.5':>16}{'paired 10 % disc.':>19}{'paired 30 % disc.':>19}")
    for name, n in _sizes().items():
        cells = [minimum_detectable_effect(n), minimum_detectable_effect(n, discordant=0.1),
                 minimum_detectable_effect(n, discordant=0.3)]
        print(f"  {name:<34}{n:>6}" + "".join(f"{100 * c:>15.1f}pp" if i == 0 else f"{100 * c:>17.1f}pp"
                                              for i, c in enumerate(cells)))
    return 0


def _sizes() -> dict[str, int]:
    """Sample counts of the bundled benchmarks that run offline (the generated suites and the fixtures)."""
    root = Path(__file__).resolve().parents[1]
    sizes = {}
    for name, data in (("shapes", None), ("vrp_shapes", None), ("mme (fixture)", "fixtures/mme/MME_Benchmark_release_version"),
                       ("pope (fixture)", "fixtures/tsv/pope_mini.tsv"), ("mmbench (fixture)", "fixtures/tsv/mmbench_mini.tsv")):
        bench = name.split(" ")[0]
        try:
            evaluation = Evaluation(EvaluationSettings(model="baseline:random", cache_mode="off",
                                                       data={bench: str(root / data)} if data else {}))
            sizes[name] = len(evaluation.samples_for(evaluation.spec(find_spec(bench))))
        except Exception as exc:  # a fixture laid out differently: say so, keep going
            print(f"  ({name}: {exc})", file=sys.stderr)
    for name, n in (("MME (full, perception+cognition)", 2374), ("POPE (one split)", 3000), ("MMBench dev", 4329)):
        sizes[name] = n
    return sizes


if __name__ == "__main__":
    sys.exit(main())
