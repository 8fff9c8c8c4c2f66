"""`--mllm-max-new-tokens=N` (ini `mllm_max_new_tokens`) overrides every spec's limit, is recorded in
the results, and keys the response cache: a new value generates again, the same value replays."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

PROBE = """
    import json
    from pytest_mllm.sample import Response

    class TokenProbe:
        '''Answers "Yes" and notes the token limit of each request.'''
        name = "token-probe"
        needs_images = False
        identity = "token-probe-v1"

        def generate(self, requests):
            with open("limits.jsonl", "a") as f:
                for r in requests:
                    f.write(json.dumps(r.max_new_tokens) + "\\n")
            return [Response("Yes") for _ in requests]

    def pytest_mllm_make_model(spec, config):
        return TokenProbe() if spec == "token-probe" else None
"""


def limits(pytester: pytest.Pytester) -> list[int]:
    path = pytester.path / "limits.jsonl"
    if not path.exists():
        return []
    found = [json.loads(line) for line in path.read_text().splitlines()]
    path.unlink()
    return found


def run(pytester: pytest.Pytester, *args: str) -> dict:
    out = pytester.path / "out.json"
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--mllm=token-probe", "--mllm-bench=shapes",
                                           "-k", "img_000", f"--mllm-cache-dir={pytester.path / 'cache'}",
                                           f"--mllm-json={out}", *args)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    return json.loads(out.read_text())


def test_the_override_reaches_the_model_and_keys_the_cache(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE)
    first = run(pytester, "--mllm-max-new-tokens=5")
    assert limits(pytester) == [5] * 9 and first["settings"]["max_new_tokens"] == 5
    assert not any(r["cached"] for r in first["records"])

    again = run(pytester, "--mllm-max-new-tokens=5")  # the same value: replayed
    assert limits(pytester) == [] and all(r["cached"] for r in again["records"])

    other = run(pytester, "--mllm-max-new-tokens=7")  # another value: generated again
    assert limits(pytester) == [7] * 9 and not any(r["cached"] for r in other["records"])

    spec_own = run(pytester)  # no override: the spec's own limit (8 in shapes.yaml), a third cache entry
    assert limits(pytester) == [8] * 9 and spec_own["settings"]["max_new_tokens"] is None

    pytester.makeini("[pytest]\nmllm_max_new_tokens = 7\n")  # the ini value: as the option, replayed
    from_ini = run(pytester)
    assert limits(pytester) == [] and all(r["cached"] for r in from_ini["records"])
    assert from_ini["settings"]["max_new_tokens"] == 7
    assert run(pytester, "--mllm-max-new-tokens=5")["settings"]["max_new_tokens"] == 5  # the option wins
    assert limits(pytester) == []


@pytest.mark.parametrize("args, ini, message", [
    (["--mllm-max-new-tokens=0"], None, "--mllm-max-new-tokens must be at least 1, got 0"),
    ([], "0", "mllm_max_new_tokens (ini) must be at least 1, got 0"),
    ([], "lots", "mllm_max_new_tokens (ini) must be a whole number*"),
])
def test_a_bad_limit_is_a_usage_error(pytester: pytest.Pytester, args: list[str], ini: str | None,
                                      message: str) -> None:
    if ini is not None:
        pytester.makeini(f"[pytest]\nmllm_max_new_tokens = {ini}\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--mllm=baseline:yes", "--mllm-bench=shapes", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])
