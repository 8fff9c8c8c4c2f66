"""TP-Eval for real: SmolLM2-135M-Instruct (served by `transformers serve`) optimizes the prompts of
the tiny LLaVA (random weights, so its accuracy barely moves: this checks the protocol and the
bookkeeping, not the model). Exact numbers live in test_tp_eval.py."""

from __future__ import annotations

import json

import pytest
import yaml

pytest.importorskip("sentence_transformers", reason="needs the tpeval extra: pip install 'pytest-mllm[tpeval]'")
pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("gguf", reason="needs gguf to read the GGUF weights: pip install 'pytest-mllm[test]'")

from local_serve import Server  # noqa: E402

RUN_TIMEOUT_S = 480


def test_smollm2_customizes_the_tiny_llava_prompts_and_a_rerun_is_free(
        pytester: pytest.Pytester, smollm2_server: Server) -> None:
    args = ("-p", "no:cacheprovider", "--mllm=tiny-llava", "--mllm-bench=shapes", "-k", "choice",
            "--mllm-optimize=prompts.yaml", f"--mllm-optimizer=openai:{smollm2_server.model}",
            f"--mllm-optimizer-base-url={smollm2_server.base_url}", "--mllm-optimizer-max-tokens=48",
            "--mllm-tp-rounds=2", "--mllm-tp-per-round=2", "--mllm-tp-few=4", "--mllm-concurrency=2",
            "--mllm-timeout=300", "--mllm-max-retries=0", f"--mllm-cache-dir={pytester.path / 'cache'}")
    first = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    out = first.stdout.str()
    assert first.ret == 0, out + first.stderr.str()
    document = yaml.safe_load((pytester.path / "prompts.yaml").read_text())
    assert (document["model"], document["optimizer"]) == ("tiny-llava", f"openai:{smollm2_server.model}")
    task = document["tasks"]["choice"]
    assert task["mode"] == "prompt" and task["original"] == "Answer with the option's letter from the given choices directly."
    assert task["template"].startswith("{question}\n{options}\n") and len(task["d_few"]) == 4
    history = task["history"]
    assert history[0]["round"] == 0 and history[0]["prompt"] == task["original"] and history[0]["similarity"] == 1.0
    for entry in history:  # every scored prompt: accuracy on 4 samples, score = 0.8·acc + 0.2·sim
        assert entry["accuracy"] in (0.0, 0.25, 0.5, 0.75, 1.0)
        assert entry["score"] == pytest.approx(0.8 * entry["accuracy"] + 0.2 * entry["similarity"], abs=1e-6)
    assert task["optimized"] in [h["prompt"] for h in history]
    assert "TP-Eval existence" not in out and "TP-Eval choice: round 2/2" in out

    # the same run again after losing the file: every optimizer reply and model answer comes from the cache
    (pytester.path / "prompts.yaml").unlink()
    second = pytester.runpytest_subprocess(*args, timeout=RUN_TIMEOUT_S)
    assert second.ret == 0, second.stdout.str()
    assert "TP-Eval choice: round 2/2 · calls made: optimizer 0, model 0" in second.stdout.str()
    assert yaml.safe_load((pytester.path / "prompts.yaml").read_text()) == document

    # and the test split is evaluated with the customized prompt, the D_few samples left out
    evaluated = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=tiny-llava", "--mllm-bench=shapes",
                                              "-k", "choice", "--mllm-prompts=prompts.yaml", "--mllm-json=out.json",
                                              f"--mllm-cache-dir={pytester.path / 'cache'}", timeout=RUN_TIMEOUT_S)
    assert evaluated.ret == 0, evaluated.stdout.str()
    records = json.loads((pytester.path / "out.json").read_text())["records"]
    assert len(records) == 36 and not {r["id"] for r in records} & set(task["d_few"])
    assert all(r["original"]["prompt"] != r["prompt"] for r in records) or task["optimized"] == task["original"]
