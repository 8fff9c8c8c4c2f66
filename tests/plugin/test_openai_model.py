"""`--mllm=openai:<model>` for real: the tiny LLaVA served by `transformers serve` on loopback."""

from __future__ import annotations

import json
from typing import Iterator

import pytest
from PIL import Image

pytest.importorskip("fastapi", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")
pytest.importorskip("uvicorn", reason="needs the serve extra: pip install 'pytest-mllm[serve]'")

from local_serve import Server, ServerDidNotStart, start_transformers_serve  # noqa: E402

from pytest_mllm.engine.endpoint import Endpoint  # noqa: E402
from pytest_mllm.models.openai import OpenAIModel  # noqa: E402
from pytest_mllm.models.tiny import ensure_tiny_llava  # noqa: E402
from pytest_mllm.sample import Request, Sample  # noqa: E402

SECRET = "sk-test-secret"
START_TIMEOUT_S = 90


@pytest.fixture(scope="session")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`transformers serve` pinned to a freshly built tiny LLaVA, on 127.0.0.1; stopped at teardown."""
    root = tmp_path_factory.mktemp("openai-serve")
    try:
        server = start_transformers_serve(ensure_tiny_llava(root / "tiny"), root, timeout_s=START_TIMEOUT_S)
    except ServerDidNotStart as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


def test_the_plugin_runs_a_benchmark_against_the_server(
    tiny_server: Server, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", tiny_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--mllm=openai:{tiny_server.model}",
                                           "--mllm-bench=shapes", "-k", "img_000 or img_001", f"--mllm-json={out}")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.OK, output
    records = json.loads(out.read_text())["records"]
    assert len(records) == 18
    assert all(isinstance(r["response"], str) and r["status"] != "error" for r in records), records
    assert {r["model"] for r in records} == {f"openai:{tiny_server.model}"}
    assert SECRET not in output
    leaks = [p for p in pytester.path.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]
    assert not leaks  # out.json, the response cache, anything else the run wrote


def test_generate_sends_images_and_answers_in_order(tiny_server: Server) -> None:
    model = OpenAIModel(tiny_server.model, Endpoint(tiny_server.base_url, SECRET, concurrency=2))
    sample = Sample(id="s", benchmark="b", task="t", question="Is there a red circle?", answer="yes")
    red, blue = Image.new("RGB", (40, 30), "red"), Image.new("RGB", (20, 20), "blue")
    requests = [Request(sample, "Is there a red circle? Answer yes or no.", [red], max_new_tokens=4),
                Request(sample, "What color is the shape?", [blue, red], max_new_tokens=8)]
    responses = model.generate(requests)
    assert len(responses) == 2
    assert all(isinstance(r.text, str) and r.latency_s > 0 for r in responses)
    alone = [model.generate([request])[0].text for request in requests]  # greedy: the same answers
    assert [r.text for r in responses] == alone
    # the served identity: what `GET /v1/models` says of the model, less its "status" (loaded by now,
    # "unloaded" when the model was made) and "created"
    assert model.server_info == {"id": tiny_server.model, "owned_by": "local"}
    assert model.identity.startswith(f"openai:{tiny_server.model}@{tiny_server.base_url}#server=")
    assert OpenAIModel(tiny_server.model, Endpoint(tiny_server.base_url, SECRET)).identity == model.identity
    assert SECRET not in repr(model)
