"""The bootstrap's faster paths give the numbers of the plain algorithm, bit for bit: per resample, the units
`draw` picks, renamed copies of units drawn again, and every registered metric recomputed from scratch; for
one run's intervals and for two runs' paired differences."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pytest_mllm.record import new_record
from pytest_mllm.scoring import count_bootstrap
from pytest_mllm.scoring.metrics import enabled_metrics
from pytest_mllm.scoring.significance import PairedComparison

np = pytest.importorskip("numpy")

from pytest_mllm.scoring.uncertainty import (  # noqa: E402
    MetricSetup,
    Resampler,
    copy_numbers,
    intervals,
    is_estimate,
    position_strata,
    renamed,
    replicates,
    unit_of,
)


def strata(records: list[dict[str, Any]]) -> list[list[list[dict[str, Any]]]]:
    """Records grouped into units, units grouped by task, in order of appearance."""
    by_task: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for record in records:
        by_task.setdefault(record["task"], {}).setdefault(unit_of(record), []).append(record)  # type: ignore[arg-type]
    return [list(units.values()) for units in by_task.values()]


def draw(rng: Any, layers: Any) -> list[list[tuple[int, int, int]]]:
    """One resample in its plainest form: per stratum, (stratum, unit, copy) for as many units as it has,
    with replacement; copy counts the unit's earlier picks in this resample."""
    picks = []
    for s, units in enumerate(layers):
        seen: dict[int, int] = {}
        chosen = []
        for u in rng.integers(0, len(units), len(units)):
            u = int(u)
            chosen.append((s, u, seen.get(u, 0)))
            seen[u] = seen.get(u, 0) + 1
        picks.append(chosen)
    return picks


def test_strata_are_the_bootstraps_positions() -> None:
    records, _ = mixed_benchmark(11)
    assert strata(records) == [[[records[n] for n in unit] for unit in units] for units in position_strata(records)]


def plain_replicates(records: list[dict[str, Any]], setup: MetricSetup, keys: list[str], samples: int,
                     seed: int) -> Any:
    """The plain algorithm: each resample built from `draw` with renamed copies, scored by `setup.flat`."""
    layers = strata(records)
    rng = np.random.default_rng(seed)
    out = np.full((samples, len(keys)), np.nan)
    for b in range(samples):
        resampled = [renamed(record, c) for chosen in draw(rng, layers) for s, u, c in chosen
                     for record in layers[s][u]]
        again = setup.flat(resampled)
        out[b] = [again.get(key, np.nan) for key in keys]
    return out


def plain_paired(base: list[dict[str, Any]], head: list[dict[str, Any]], setup: MetricSetup, keys: list[str],
                 samples: int, seed: int) -> dict[str, Any]:
    """The plain paired algorithm: the same `draw` of the base run's units scored in both runs by `setup.flat`."""
    position = {id(record): n for n, record in enumerate(base)}
    layers = [[[position[id(r)] for r in unit] for unit in units] for units in strata(base)]
    rng = np.random.default_rng(seed)
    diffs = np.full((samples, len(keys)), np.nan)
    for b in range(samples):
        picks = [(layers[s][u], c) for chosen in draw(rng, layers) for s, u, c in chosen]
        before = setup.flat([renamed(base[i], c) for unit, c in picks for i in unit])
        after = setup.flat([renamed(head[i], c) for unit, c in picks for i in unit])
        diffs[b] = [after.get(k, np.nan) - before.get(k, np.nan) for k in keys]
    return {k: diffs[:, j][~np.isnan(diffs[:, j])] for j, k in enumerate(keys)}


def changed_run(records: list[dict[str, Any]], seed: int) -> list[dict[str, Any]]:
    """The same samples answered by another model: about a third of the verdicts flipped."""
    rnd = random.Random(seed)
    out = []
    for record in records:
        record = dict(record)
        if record["status"] != "error" and rnd.random() < 0.35:
            record["correct"] = not record["correct"]
            record["status"] = "correct" if record["correct"] else "incorrect"
            if record["answer_type"] != "open":
                record["parsed"] = record["answer"] if record["correct"] else "no" if record["answer"] == "yes" else "yes"
            else:
                record["word_match"] = record["correct"]
        out.append(record)
    return out


def mixed_benchmark(seed: int, open_answers: bool = True) -> tuple[list[dict[str, Any]], MetricSetup]:
    """Tasks of pairs, MMBench-style circular passes (the first one sometimes missing), single questions and
    inline images; yes/no and choice answers; errors; categories that split pairs; open answers in a few units
    (the judge section then comes and goes by resample)."""
    rnd = random.Random(seed)
    tasks = [f"t{i}" for i in range(rnd.randint(1, 4))]
    records: list[dict[str, Any]] = []
    for task in tasks:
        for image in range(rnd.randint(1, 10)):
            kind = rnd.choice(["pair", "circular", "single", "inline", "open" if open_answers else "pair"])
            first_pass = rnd.choice([0, 0, 0, 1])
            for q in range(2 if kind == "pair" else rnd.randint(1, 3)):
                answer = rnd.choice(["yes", "no"])
                status = rnd.choices(["correct", "incorrect", "error"], [5, 3, 1])[0]
                parsed = None if status == "error" else answer if status == "correct" else "no" if answer == "yes" else "yes"
                circular = kind == "circular"
                records.append(new_record(
                    id=f"{task}::{image + (q + first_pass) * 1_000_000}" if circular else f"{task}::{image}::{q}",
                    benchmark="b", task=task, answer=answer, parsed=parsed, status=status,
                    group="g" if task != "t3" else None, image="<base64>" if kind == "inline" else f"{image}.png",
                    pair_group=f"{task}::{image}" if kind in ("pair", "circular") else None,
                    correct=None if status == "error" else status == "correct",
                    answer_type="open" if kind == "open" else "choice" if circular else rnd.choice(["yes_no", "choice"]),
                    word_match=(status == "correct") if kind == "open" else None,
                    category=rnd.choice([None, "c1", "c2"]), l2_category=rnd.choice([None, "L1"]), order=len(records)))
    metrics = ["accuracy", *(m for m in ("accuracy_plus", "pope", "mme_score", "circular", "category") if rnd.random() < 0.6)]
    groups = {"g": [t for t in tasks if t != "t3"]} if rnd.random() < 0.7 else {}
    order = tuple(rnd.sample(tasks, len(tasks))) if rnd.random() < 0.5 else ()
    headline = rnd.choice(["accuracy", "accuracy_plus", "f1", "score", "mean_f1", "circular_accuracy"])
    return records, MetricSetup(tuple(metrics), groups, order, headline)


def estimates(records: list[dict[str, Any]], setup: MetricSetup) -> tuple[dict[str, Any], list[str]]:
    flat = setup.flat(records)
    return flat, [key for key, value in flat.items() if is_estimate(key, value)]


@pytest.mark.parametrize("seed", range(40))
def test_every_resample_scores_as_the_plain_algorithm_does(seed: int) -> None:
    records, setup = mixed_benchmark(seed)
    flat, keys = estimates(records, setup)
    expected = plain_replicates(records, setup, keys, 40, seed)
    assert np.array_equal(replicates(records, setup, flat, keys, 40, seed), expected, equal_nan=True)


@pytest.mark.parametrize("seed", range(40))
def test_the_metric_functions_path_alone_gives_the_same_numbers(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    records, setup = mixed_benchmark(seed)
    flat, keys = estimates(records, setup)
    monkeypatch.setattr(count_bootstrap.CountReplicates, "build", classmethod(lambda cls, *args: None))
    assert np.array_equal(replicates(records, setup, flat, keys, 40, seed),
                          plain_replicates(records, setup, keys, 40, seed), equal_nan=True)


@pytest.mark.parametrize("seed", range(30))
def test_paired_differences_are_those_of_the_plain_paired_algorithm(seed: int) -> None:
    base, setup = mixed_benchmark(seed, open_answers=seed % 3 == 0)  # every third: the metric functions' path
    head = changed_run(base, seed)
    comparison = PairedComparison(base, head, setup, samples=30, seed=seed)
    expected = plain_paired(base, head, setup, comparison.keys, 30, seed)
    found = comparison.replicates
    assert list(found) == list(expected)
    assert all(np.array_equal(found[k], expected[k]) for k in expected)


def test_runs_sharing_no_sample_have_no_differences() -> None:
    base, setup = mixed_benchmark(1)
    other = [dict(r, id=f"other::{r['id']}") for r in base]
    for head in ([], other):
        comparison = PairedComparison(base, head, setup, samples=10)
        assert comparison.shared == 0 and comparison.replicates == {}


def test_the_count_path_takes_the_count_metrics_and_leaves_the_others() -> None:
    records, _ = mixed_benchmark(3, open_answers=False)
    layers = strata(records)
    for declared, expected in ((("accuracy", "accuracy_plus", "mme_score", "pope", "category"), True),
                               (("accuracy", "circular", "category"), True), (("accuracy", "mean_score"), False)):
        built = count_bootstrap.CountReplicates.build(layers, enabled_metrics(declared, records), {}, (), "accuracy")
        assert (built is not None) is expected, declared
    shared = [dict(r, pair_group="shared") if r["pair_group"] else r for r in records]  # one pair over many units
    assert count_bootstrap.CountReplicates.build(strata(shared), frozenset({"accuracy_plus"}), {}, (), "accuracy") is None


def test_copy_numbers_are_draws_copies() -> None:
    layers = [[[{}]] * 7, [[{}]] * 3, [[{}]]]
    first, second = np.random.default_rng(5), np.random.default_rng(5)
    for _ in range(20):
        picks = draw(first, layers)
        drawn = [second.integers(0, len(units), len(units)) for units in layers]
        assert [[(s, u, c) for u, c in zip(p.tolist(), copy_numbers(p).tolist())] for s, p in enumerate(drawn)] == picks


def test_a_unit_drawn_again_is_a_renamed_copy_made_once() -> None:
    records, setup = mixed_benchmark(7)
    layers = strata(records)
    resampler = Resampler(layers, setup)
    rng, again = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(10):
        picks = [rng.integers(0, len(units), len(units)) for units in layers]
        expected = [renamed(r, c) for chosen in draw(again, layers) for s, u, c in chosen for r in layers[s][u]]
        assert resampler.records(picks) == expected
    assert all(a is b for a, b in zip(resampler.records(picks), resampler.records(picks)))


def test_intervals_keep_the_numbers_of_the_plain_algorithm() -> None:
    """{key: (se, low, high)} as `intervals` gave them before the faster paths existed (every resample
    recomputed; 1000 resamples, seed 0) on the same records: not one digit may move. Re-pinned from the plain
    algorithm when a POPE value with a zero denominator became undefined (left out of a resample) instead of 0."""
    records, setup = mixed_benchmark(189, open_answers=False)
    assert count_bootstrap.CountReplicates.build(strata(records), enabled_metrics(setup.declared, records),
                                                 setup.groups, setup.task_order, setup.headline) is not None
    found = intervals(records, setup)
    assert {k: (v["se"], *v["ci"]) for k, v in found.items() if v["method"] == "bootstrap"} == PINNED


PINNED = {
    'accuracy_plus': (0.12513421882053316, 0.4444444444444444, 0.9090909090909091),
    'precision': (0.13838125688045583, 0.5714285714285714, 1.0),
    'recall': (0.16719001242857606, 0.4, 1.0),
    'f1': (0.12075130510183688, 0.5, 1.0),
    'yes_ratio': (0.1027733320695957, 0.21026315789473707, 0.6153846153846154),
    'pooled_f1': (0.12075130510183688, 0.5, 1.0),
    'mean_f1': (0.14762676019890958, 0.4590909090909092, 1.0),
    'score': (53.46260119518492, 169.1666666666667, 381.8181818181818),
    'circular_accuracy': (0.13618940142028116, 0.4986111111111124, 1.0),
    'vanilla_accuracy': (0.13618940142028116, 0.4986111111111124, 1.0),
    't1': (0.0, 1.0, 1.0),
    't1.accuracy_plus': (0.0, 1.0, 1.0),
    't1.precision': (0.0, 1.0, 1.0),
    't1.recall': (0.26472616069702926, 0.3333333333333333, 1.0),
    't1.f1': (0.19437646173474854, 0.5, 1.0),
    't1.yes_ratio': (0.1454603669484647, 0.0, 0.5714285714285714),
    't1.score': (15.339606499531575, 150.0, 200.0),
    't1.circular_accuracy': (0.0, 1.0, 1.0),
    't1.vanilla_accuracy': (0.0, 1.0, 1.0),
    't3': (0.2913377828604551, 0.0, 1.0),
    't3.accuracy_plus': (0.21920080048982446, 0.0, 0.8),
    't3.precision': (0.2862506618713482, 0.0, 1.0),
    't3.recall': (0.0, 1.0, 1.0),
    't3.f1': (0.17407115530730924, 0.4, 1.0),
    't3.yes_ratio': (0.23093115597963373, 0.1111111111111111, 1.0),
    't3.score': (31.759732637889183, 54.54545454545454, 170.9090909090909),
    't3.circular_accuracy': (0.2913377828604551, 0.0, 1.0),
    't3.vanilla_accuracy': (0.2913377828604551, 0.0, 1.0),
    't0': (0.0, 1.0, 1.0),
    't0.accuracy_plus': (0.0, 1.0, 1.0),
    't0.precision': (0.0, 1.0, 1.0),
    't0.recall': (0.2996898379804644, 0.0, 1.0),
    't0.f1': (0.18121254664404607, 0.4, 1.0),
    't0.yes_ratio': (0.2996898379804644, 0.0, 1.0),
    't0.score': (14.45205869114494, 133.33333333333331, 190.0),
    't0.circular_accuracy': (0.0, 1.0, 1.0),
    't0.vanilla_accuracy': (0.0, 1.0, 1.0),
    't2.yes_ratio': (0.0, 0.0, 0.0),
    'g': (0.0, 1.0, 1.0),
    'g.accuracy_plus': (0.0, 1.0, 1.0),
    'g.precision': (0.0, 1.0, 1.0),
    'g.recall': (0.20413694674265564, 0.27159090909090955, 1.0),
    'g.f1': (0.14762676019890958, 0.4590909090909092, 1.0),
    'g.yes_ratio': (0.12326932744826956, 0.1111111111111111, 0.6),
    'g.pooled_f1': (0.14762676019890958, 0.4590909090909092, 1.0),
    'g.score': (53.46260119518492, 169.1666666666667, 381.8181818181818),
    'g.circular_accuracy': (0.0, 1.0, 1.0),
    'g.vanilla_accuracy': (0.0, 1.0, 1.0),
    'category.c2.accuracy_plus': (0.18290543083493463, 0.4, 1.0),
    'category.c2.circular_accuracy': (0.23562595507896114, 0.0, 1.0),
    'category.c2.vanilla_accuracy': (0.23562595507896114, 0.0, 1.0),
    'category.c1.accuracy_plus': (0.0, 1.0, 1.0),
    'category.c1.circular_accuracy': (0.0, 1.0, 1.0),
    'category.c1.vanilla_accuracy': (0.0, 1.0, 1.0),
    'l2_category.L1.accuracy_plus': (0.14652947894360038, 0.4278571428571435, 1.0),
    'l2_category.L1.circular_accuracy': (0.34922996197903244, 0.0, 1.0),
    'l2_category.L1.vanilla_accuracy': (0.34922996197903244, 0.0, 1.0),
}
