"""Uncertainty of scores (Wilson, unit bootstrap), paired comparisons, and statistical regression limits."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from pytest_mllm.record import new_record
from pytest_mllm.scoring.gates import GateSyntaxError, evaluate_regressions, parse_max_drop

np = pytest.importorskip("numpy")
scipy_stats = pytest.importorskip("scipy.stats")

from pytest_mllm.scoring.significance import PairedComparison  # noqa: E402
from pytest_mllm.scoring.uncertainty import (  # noqa: E402
    MetricSetup,
    intervals,
    minimum_detectable_effect,
    position_strata,
    renamed,
    unit_of,
    wilson,
)

MME_LIKE = MetricSetup(("accuracy", "accuracy_plus", "mme_score", "pope"), {"perception": ["existence", "count"]},
                       ("existence", "count"), "accuracy")


def pair_records(outcomes: list[tuple[bool, bool]], task: str = "existence", prefix: str = "") -> list[dict[str, Any]]:
    """Two yes/no questions per image (answers yes, no), right or wrong as given, MME-style."""
    records = []
    for n, pair in enumerate(outcomes):
        for q, (answer, right) in enumerate(zip(("yes", "no"), pair)):
            parsed = answer if right else ("no" if answer == "yes" else "yes")
            records.append(new_record(
                id=f"{task}::{prefix}{n}::q{q}", benchmark="b", task=task, answer=answer, group="perception",
                image=f"{prefix}{n}.png", pair_group=f"{task}::{prefix}{n}", parsed=parsed, correct=right,
                status="correct" if right else "incorrect", order=len(records)))
    return records


def random_outcomes(n: int, p: float, seed: int) -> list[tuple[bool, bool]]:
    rng = random.Random(seed)
    return [(rng.random() < p, rng.random() < p) for _ in range(n)]


# -- Wilson ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (179, 360), (55, 80), (1, 1), (2374, 2374), (17, 40)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    proportion = pytest.importorskip("statsmodels.stats.proportion")
    low, high = proportion.proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson(k, n) == pytest.approx((low, high), abs=1e-9)


@pytest.mark.parametrize(("k", "n", "level"), [(0, 10, 0.95), (3, 10, 0.95), (179, 360, 0.9), (40, 40, 0.99), (1, 2, 0.95)])
def test_wilson_matches_scipy(k: int, n: int, level: float) -> None:
    ci = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
    assert wilson(k, n, level) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_recorded_wilson_case() -> None:
    """Recorded from statsmodels 0.15 (`proportion_confint(k, n, method="wilson")`): holds without statsmodels too."""
    assert wilson(179, 360) == pytest.approx((0.4458761317576563, 0.548626968558392), abs=1e-12)
    assert wilson(3, 10) == pytest.approx((0.10779126740630104, 0.6032218525388546), abs=1e-12)


def test_accuracies_get_wilson_and_the_rest_a_bootstrap() -> None:
    records = pair_records(random_outcomes(40, 0.7, 1)) + pair_records(random_outcomes(40, 0.6, 2), task="count")
    found = intervals(records, MME_LIKE, samples=200)
    flat = MME_LIKE.flat(records)
    k = sum(1 for r in records if r["correct"])
    assert found["accuracy"]["method"] == "wilson" and found["accuracy"]["ci"] == pytest.approx(list(wilson(k, 160)))
    assert found["accuracy"]["se"] == pytest.approx((k / 160 * (1 - k / 160) / 160) ** 0.5)
    assert found["existence.accuracy"]["method"] == "wilson"
    for key in ("accuracy_plus", "score", "perception.score", "existence.score", "f1"):
        assert found[key]["method"] == "bootstrap" and found[key]["value"] == flat[key]
        low, high = found[key]["ci"]
        assert low <= flat[key] <= high and found[key]["se"] > 0
    assert found["existence"] == found["existence.accuracy"]  # a scope's headline alias
    assert "count" not in found and "existence.errors" not in found


def test_the_bootstrap_is_seeded() -> None:
    records = pair_records(random_outcomes(30, 0.6, 3))
    first, again = intervals(records, MME_LIKE, samples=100), intervals(records, MME_LIKE, samples=100)
    other = intervals(records, MME_LIKE, samples=100, seed=1)
    assert first == again and first["accuracy_plus"] != other["accuracy_plus"]


def test_bootstrap_matches_scipy_on_a_recorded_case() -> None:
    """accuracy+ is the mean over pair groups of 'both right': scipy's percentile bootstrap over those
    groups gives the same interval up to resampling noise."""
    outcomes = random_outcomes(60, 0.75, 7)
    records = pair_records(outcomes)
    ours = intervals(records, MetricSetup(("accuracy", "accuracy_plus")), samples=4000, seed=0)["accuracy_plus"]
    both = np.array([a and b for a, b in outcomes], dtype=float)
    theirs = scipy_stats.bootstrap((both,), np.mean, n_resamples=4000, method="percentile", random_state=0,
                                   confidence_level=0.95)
    assert ours["value"] == pytest.approx(both.mean())
    assert ours["ci"] == pytest.approx([theirs.confidence_interval.low, theirs.confidence_interval.high], abs=0.02)
    assert ours["se"] == pytest.approx(theirs.standard_error, rel=0.08)


def test_units_are_pair_groups_sources_or_images() -> None:
    records = pair_records([(True, False)])
    assert unit_of(records[0]) == unit_of(records[1]) == "pair_group:existence::0"
    vrp = new_record(id="v1", benchmark="b", task="color", variant={"source": "color::a.png"})
    assert unit_of(vrp) == "source:color::a.png"
    assert unit_of(new_record(id="x", benchmark="b", task="t", image="a.png")) == "image:t:a.png"
    assert unit_of(new_record(id="x", benchmark="b", task="t")) == "id:x"
    layers = position_strata(pair_records([(True, True)] * 3) + pair_records([(True, True)] * 2, task="count"))
    assert [len(units) for units in layers] == [3, 2] and all(len(unit) == 2 for units in layers for unit in units)


def test_a_unit_drawn_twice_counts_twice() -> None:
    records = pair_records([(True, True)])
    copies = records + [renamed(r, 1) for r in records]
    assert copies[2]["pair_group"] != copies[0]["pair_group"] and copies[2]["id"] == "existence::0#1::q0"
    assert renamed(new_record(id="plain", benchmark="b", task="t"), 2)["id"] == "plain#2"
    from pytest_mllm.scoring.mme import accuracy_plus

    wrong = pair_records([(False, True)], prefix="w")
    assert accuracy_plus(copies + wrong) == pytest.approx(2 / 3)  # the copy is a pair group of its own
    assert renamed(records[0], 0) is records[0]


def test_metric_setup_from_a_document_matches_the_spec() -> None:
    records = pair_records(random_outcomes(10, 0.6, 4)) + pair_records(random_outcomes(10, 0.6, 5), task="count")
    from pytest_mllm.scoring.metrics import benchmark_metrics

    scopes = benchmark_metrics(records, MME_LIKE.declared, MME_LIKE.groups, MME_LIKE.task_order)
    flat = MME_LIKE.flat(records)
    inferred = MetricSetup.from_document({"metrics": flat, "scopes": scopes, "headline": "accuracy"}, records)
    assert inferred.flat(records) == flat
    stated = MetricSetup.from_document({"setup": {"metrics": list(MME_LIKE.declared), "groups": MME_LIKE.groups,
                                                  "task_order": list(MME_LIKE.task_order)}, "headline": "accuracy"}, records)
    assert stated == MME_LIKE


def test_minimum_detectable_effect() -> None:
    assert minimum_detectable_effect(360) == pytest.approx(2.8016 * (0.5 / 360) ** 0.5, rel=1e-3)
    assert minimum_detectable_effect(360, discordant=0.1) < minimum_detectable_effect(360)


# -- paired comparisons ------------------------------------------------------------------------


def test_mcnemar_on_the_discordant_pairs_and_one_sided_samples() -> None:
    base = pair_records([(True, True)] * 30 + [(False, False)] * 10)
    head_outcomes = [(False, True)] * 8 + [(True, True)] * 22 + [(True, False)] * 2 + [(False, False)] * 8
    head = pair_records(head_outcomes)
    head = head[:-2] + pair_records([(True, True)], prefix="new")  # the last pair ran in base only; a new one in head
    comparison = PairedComparison(base, head, MME_LIKE, samples=200)
    assert comparison.shared == 78 and len(comparison.only_base) == 2 and len(comparison.only_head) == 2
    test = comparison.mcnemar("accuracy")
    assert (test["b"], test["c"]) == (8, 2)
    assert test["p"] == pytest.approx(scipy_stats.binomtest(2, 10, 0.5).pvalue)
    stat = comparison.metric("accuracy")
    assert stat["method"] == "mcnemar" and stat["diff"] == pytest.approx(-6 / 78)
    assert stat["ci"][0] < stat["diff"] < stat["ci"][1]
    assert comparison.metric("accuracy_plus")["method"] == "bootstrap"
    assert comparison.mcnemar("existence.accuracy") == test and comparison.mcnemar("perception.accuracy") == test


def test_identical_runs_show_no_change() -> None:
    records = pair_records(random_outcomes(20, 0.6, 6))
    comparison = PairedComparison(records, [dict(r) for r in records], MME_LIKE, samples=100)
    for key in ("accuracy", "accuracy_plus", "score"):
        stat = comparison.metric(key)
        assert stat["diff"] == 0 and stat["p"] == 1.0 and stat["ci"] == [0.0, 0.0]


def test_statistical_limits_parse() -> None:
    gate = parse_max_drop("mme.perception=significant")
    assert (gate.significant, gate.alpha, gate.max_drop) == (True, 0.05, 0.0)
    gate = parse_max_drop("mme.perception = 20@0.05")
    assert (gate.significant, gate.alpha, gate.max_drop, gate.key) == (False, 0.05, 20.0, "perception")
    assert parse_max_drop("mme.perception=significant@0.01").alpha == 0.01
    plain = parse_max_drop("0.02")
    assert (plain.alpha, plain.max_drop, plain.benchmark) == (None, 0.02, "*")
    for bad in ("mme.perception=20@1.5", "mme.perception=significantly", "mme.perception=@0.05"):
        with pytest.raises(GateSyntaxError):
            parse_max_drop(bad)


def _verdicts(base: list[dict[str, Any]], head: list[dict[str, Any]], *texts: str) -> list[Any]:
    comparison = PairedComparison(base, head, MME_LIKE, samples=300)
    limits = [parse_max_drop(t) for t in texts]
    return evaluate_regressions(limits, {"b": MME_LIKE.flat(head)}, {"b": MME_LIKE.flat(base)}, {"b": "accuracy"},
                                lambda name: comparison)


def test_significance_gate_tells_noise_from_a_drop() -> None:
    base = pair_records(random_outcomes(100, 0.7, 8))
    noisy = [dict(r) for r in base]
    for record in noisy[:6]:  # three wrong → right and three right → wrong, roughly: no real change
        record["correct"] = not record["correct"]
    dropped = [dict(r) for r in base]
    flipped = 0
    for record in dropped:
        if record["correct"] and flipped < 20:
            record.update(correct=False, status="incorrect")
            flipped += 1
    texts = ("b.accuracy=significant", "b.accuracy=0.05@0.05", "b.accuracy=0.2@0.05", "b.score=significant")
    assert [v.verdict for v in _verdicts(base, base, *texts)] == ["pass"] * 4
    drop = _verdicts(base, dropped, *texts)
    assert [v.verdict for v in drop] == ["fail", "fail", "pass", "fail"]
    assert "p=" in drop[0].note and "mcnemar" in drop[0].note and "200 shared samples" in drop[0].note
    assert drop[0].gate.text == "b.accuracy drop significant@0.05" and drop[0].limit is None
    assert "drop ≥" in drop[1].note and drop[1].gate.text == "b.accuracy drop<=0.05@0.05"


def test_statistical_limit_without_records_fails_and_says_why() -> None:
    verdicts = evaluate_regressions([parse_max_drop("b.accuracy=significant")], {"b": {"accuracy": 0.5}},
                                    {"b": {"accuracy": 0.5}}, {"b": "accuracy"},
                                    lambda name: "the baseline has no per-sample records of 'b'")
    assert verdicts[0].verdict == "fail" and "no per-sample records" in verdicts[0].note
    plain = evaluate_regressions([parse_max_drop("b.accuracy=0.1")], {"b": {"accuracy": 0.5}},
                                 {"b": {"accuracy": 0.55}}, {"b": "accuracy"})
    assert plain[0].verdict == "pass" and plain[0].limit == pytest.approx(0.45)


def test_circular_accuracy_gets_a_bootstrap_over_questions() -> None:
    """MMBench: the passes of a question share a pair group; a copied question keeps its pass index."""
    records = []
    rng = random.Random(9)
    for question in range(40):
        right = rng.random() < 0.6
        for k in range(4):
            index = question + k * 1_000_000
            ok = right or (k > 0 and rng.random() < 0.5)
            records.append(new_record(id=f"mmb::{index}", benchmark="b", task="mmb", answer="A", answer_type="choice",
                                      pair_group=f"mmb::{question}", parsed="A" if ok else "B", correct=ok,
                                      status="correct" if ok else "incorrect"))
    setup = MetricSetup(("accuracy", "circular"), headline="circular_accuracy")
    flat = setup.flat(records)
    found = intervals(records, setup, samples=300)
    assert found["circular_accuracy"]["method"] == "bootstrap" and "circular_count" not in found
    low, high = found["circular_accuracy"]["ci"]
    assert low < flat["circular_accuracy"] < high and found["circular_accuracy"]["se"] > 0.04
    assert found["vanilla_accuracy"]["method"] == "bootstrap"


# -- POPE: inline images name no image -----------------------------------------------------------

POPE_SPLITS = Path(__file__).resolve().parents[2] / "fixtures" / "pope_splits"


def pope_splits_records() -> list[dict[str, Any]]:
    """POPE on fixtures/pope_splits answered by its recorded responses, through the core as a run does it
    (images inline in POPE.tsv: every record's `image` is "<base64>")."""
    from pytest_mllm.engine.spec import find_spec
    from pytest_mllm.evaluation import Evaluation, EvaluationSettings

    evaluation = Evaluation(EvaluationSettings(model=f"replay:{POPE_SPLITS / 'responses.jsonl'}",
                                               data={"pope": str(POPE_SPLITS)}, cache_mode="off"))
    spec = evaluation.spec(find_spec("pope"))
    records = evaluation.answer([(s, spec) for s in evaluation.samples_for(spec)])
    for order, record in enumerate(records):
        record["order"] = order
    return records  # type: ignore[return-value]


POPE_SETUP = MetricSetup(("accuracy", "pope"), {}, ("adversarial", "popular", "random"), "mean_f1")


def test_a_record_whose_image_has_no_name_is_a_unit_of_its_own() -> None:
    """Regression: all of a task's inline images read "<base64>" and made the task one unit, so every
    resample was the task itself and POPE's F1 came out "±0.0"."""
    assert unit_of(new_record(id="t::1", benchmark="b", task="t", image="<base64>")) == "id:t::1"
    records = pope_splits_records()
    assert {r["image"] for r in records} == {"<base64>"}
    assert [len(units) for units in position_strata(records)] == [10, 10, 10]


def test_pope_f1_gets_an_interval_of_positive_width() -> None:
    records = pope_splits_records()
    flat = POPE_SETUP.flat(records)
    found = intervals(records, POPE_SETUP, flat, samples=500)
    for key in ("mean_f1", "f1", "pooled_f1", "precision", "recall", "adversarial.f1", "popular.f1", "random.f1"):
        low, high = found[key]["ci"]
        assert found[key]["method"] == "bootstrap" and found[key]["value"] == flat[key]
        assert high - low > 0.1 and found[key]["se"] > 0.03 and low <= flat[key] <= high, key


def test_pope_f1_interval_matches_scipy_on_a_recorded_case() -> None:
    """One split of fixtures/pope_splits (a stratum of its own): scipy's percentile bootstrap of F1 over its
    questions gives an interval as wide as ours, up to resampling noise."""
    from pytest_mllm.scoring.pope import pope_metrics

    records = [r for r in pope_splits_records() if r["task"] == "popular"]
    ours = intervals(records, POPE_SETUP, samples=4000, seed=0)["popular.f1"]
    yes_said = np.array([r["parsed"] == "yes" for r in records])
    yes_true = np.array([r["answer"] == "yes" for r in records])

    def f1(said: Any, true: Any) -> float:  # undefined (no true positive): NaN, left out as ours leaves it out
        return pope_metrics([{"parsed": "yes" if s else "no", "answer": "yes" if t else "no"}  # type: ignore[misc]
                             for s, t in zip(said, true)]).get("f1", np.nan)

    theirs = scipy_stats.bootstrap((yes_said, yes_true), f1, paired=True, vectorized=False, n_resamples=4000,
                                   method="percentile", random_state=0, confidence_level=0.95)
    distribution = theirs.bootstrap_distribution[~np.isnan(theirs.bootstrap_distribution)]
    low, high = np.quantile(distribution, [0.025, 0.975])
    assert ours["value"] == pytest.approx(f1(yes_said, yes_true))
    assert ours["ci"][1] - ours["ci"][0] == pytest.approx(high - low, abs=0.04)
    assert ours["ci"] == pytest.approx([low, high], abs=0.04)
    assert ours["se"] == pytest.approx(np.std(distribution, ddof=1), rel=0.1)
