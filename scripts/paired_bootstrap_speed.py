"""Speed of the paired bootstrap (`--mllm-max-drop=…=significant`, `pytest-mllm-compare`) on 10,000 records.

    python scripts/paired_bootstrap_speed.py [--records 10000] [--repeat 3]

Two runs of an MME-style benchmark (pairs of yes/no questions over 4 tasks and a group; accuracy,
accuracy+ and MME scores), the second with about a third of the verdicts flipped. Times
`PairedComparison.replicates` (1000 resamples) against the plain algorithm the identity tests hold
it to (`tests/unit/test_uncertainty_speed_identity.py::plain_paired`: every resample's metrics
recomputed from its records), run on 20 resamples and scaled to 1000 (its cost is linear in the
resamples), and checks that both give the same numbers on those 20.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "unit"))

import numpy as np  # noqa: E402
from test_uncertainty_speed_identity import changed_run, plain_paired  # noqa: E402

from pytest_mllm.record import new_record  # noqa: E402
from pytest_mllm.scoring.significance import PairedComparison  # noqa: E402
from pytest_mllm.scoring.uncertainty import MetricSetup  # noqa: E402

PLAIN_RESAMPLES = 20
RESAMPLES = 1000


def mme_style(count: int) -> list[dict[str, Any]]:
    """`count` records: pairs of yes/no questions per image, 4 tasks, about 70 % right."""
    rnd = random.Random(0)
    records = []
    for i in range(count):
        pair, question = divmod(i, 2)
        task = f"t{pair % 4}"
        answer = "yes" if question == 0 else "no"
        right = rnd.random() < 0.7
        records.append(new_record(
            id=f"{task}::{pair}::{question}", benchmark="b", task=task, answer=answer,
            parsed=answer if right else ("no" if answer == "yes" else "yes"),
            status="correct" if right else "incorrect", correct=right, image=f"{pair}.png",
            pair_group=f"{task}::{pair}", answer_type="yes_no"))
    return records


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = mme_style(args.records)
    head = changed_run(base, 1)
    setup = MetricSetup(("accuracy", "accuracy_plus", "mme_score"), {"g": ["t0", "t1", "t2", "t3"]}, (), "score")
    for _ in range(args.repeat):
        start = time.perf_counter()
        comparison = PairedComparison(base, head, setup, samples=RESAMPLES, seed=0)
        _ = comparison.replicates
        fast = time.perf_counter() - start
        start = time.perf_counter()
        plain_paired(base, head, setup, comparison.keys, PLAIN_RESAMPLES, 0)
        plain = (time.perf_counter() - start) * RESAMPLES / PLAIN_RESAMPLES
        print(f"{args.records} records, {len(comparison.keys)} metrics, {RESAMPLES} resamples: "
              f"{fast:.2f} s; plain algorithm {plain:.1f} s (x{plain / fast:.0f})")
    short = PairedComparison(base, head, setup, samples=PLAIN_RESAMPLES, seed=0)
    expected = plain_paired(base, head, setup, short.keys, PLAIN_RESAMPLES, 0)
    same = all(np.array_equal(short.replicates[k], expected[k]) for k in expected)
    print(f"same numbers as the plain algorithm on {PLAIN_RESAMPLES} resamples: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
