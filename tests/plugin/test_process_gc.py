"""The run keeps the garbage collector off the objects that live to its end (`harness/collector.py`):
frozen after the first batch, and once more at interpreter exit after one last collection."""

from __future__ import annotations

import json

import pytest

# loaded with -p: a conftest's per-test hooks would not apply to the bundled spec's tests
PROBE_PLUGIN = """
    import atexit
    import gc
    import json
    from pathlib import Path

    OUT = Path(__file__).parent / "gc.json"
    seen = {"before_run": gc.get_freeze_count()}


    def _at_exit():
        # registered before the plugin's own handler, so it runs after it (atexit runs last-in first-out)
        seen["at_exit"] = gc.get_freeze_count()
        seen["garbage_left"] = len(gc.garbage)
        OUT.write_text(json.dumps(seen))


    atexit.register(_at_exit)


    def pytest_runtest_logfinish(nodeid, location):
        seen.setdefault("after_first_test", gc.get_freeze_count())


    def pytest_sessionfinish(session):
        seen["session_end"] = gc.get_freeze_count()
"""


def test_survivors_are_frozen_after_the_first_batch_and_at_exit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gc_probe=PROBE_PLUGIN)
    result = pytester.runpytest_subprocess("-p", "gc_probe", "-p", "no:cacheprovider", "--mllm=baseline:yes",
                                           "--mllm-bench=shapes", "-k", "existence", "--mllm-batch-size=8")
    assert result.ret == pytest.ExitCode.OK
    seen = json.loads((pytester.path / "gc.json").read_text())
    assert seen["before_run"] == 0
    assert seen["after_first_test"] > 1000  # the interpreter, pytest, the plugin and the collected tests
    assert seen["session_end"] > 1000  # still frozen (frozen objects are freed as usual when unreferenced)
    assert seen["at_exit"] > seen["session_end"]  # what the run made since, frozen after one collection
    assert seen["garbage_left"] == 0


def test_a_run_without_a_first_batch_freezes_only_at_exit(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gc_probe=PROBE_PLUGIN)
    result = pytester.runpytest_subprocess("-p", "gc_probe", "-p", "no:cacheprovider", "--mllm=baseline:yes",
                                           "--mllm-bench=shapes", "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    seen = json.loads((pytester.path / "gc.json").read_text())
    assert "after_first_test" not in seen and seen["session_end"] == 0
    assert seen["at_exit"] > 0
