"""A model that fails to load is reported once: the first sample errors with the reason, the others
point to it, and `load_failure_line` gives the terminal summary's line (the run stops there)."""

from __future__ import annotations

from pytest_mllm.engine.evaluator import Evaluator, load_failure_line
from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples


def test_a_failed_load_is_reported_once_and_counted() -> None:
    spec = load_spec(find_spec("shapes"))
    samples = [s for s in load_samples(spec, spec.resolve_data_root(None))][:5]
    calls = []

    def broken() -> None:
        calls.append(1)
        raise OSError("weights.safetensors is truncated\n(at byte 1234)")

    evaluator = Evaluator(broken, model_name="broken")  # type: ignore[arg-type]
    records = evaluator.evaluate([(s, spec) for s in samples[:2]]) + evaluator.evaluate([(s, spec) for s in samples[2:]])
    first = f"{samples[0].benchmark}::{samples[0].id}"
    assert calls == [1]  # loaded once, not once per batch
    assert [r["status"] for r in records] == ["error"] * 5
    assert records[0]["error"] == "the model could not be loaded: weights.safetensors is truncated\n(at byte 1234)"
    assert [r["error"] for r in records[1:]] == [f"model not loaded (see {first})"] * 4
    assert load_failure_line(records) == ("the model could not be loaded: weights.safetensors is truncated "
                                          "(at byte 1234) (the run stopped at the first sample that needed it)")
    assert load_failure_line([{**records[1], "error": "image error: gone"}]) is None  # type: ignore[list-item]
