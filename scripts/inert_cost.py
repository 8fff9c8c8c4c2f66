"""What the installed plugin costs a pytest run that does not use it (no --mllm, no benchmark file).

    OMP_NUM_THREADS=1 python scripts/inert_cost.py [--tests 1,2000] [--repeat 11]

For each size, a folder of that many trivial tests (one function each, `assert True`) runs in a fresh
`python -m pytest -q -p no:cacheprovider` process with the plugin loaded as installed, and with
`-p no:mllm`; the two alternate within each repetition (a first, untimed round warms the file system
and the bytecode caches). Printed, for the wall time and for the process's CPU time (user + system,
which other work on a shared machine disturbs less): the median and smallest of each, the plugin's
cost (difference of the medians, median of the differences within a repetition, ratio), and the
package's modules a plain run imports. PYTHONPATH=DIR measures the package in DIR instead.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTEST = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
COUNT_MODULES = """
import sys, pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", "test_trivial.py"])
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "pytest_mllm")))
sys.exit(code)
"""


def write_tests(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "test_trivial.py").write_text("".join(f"def test_{i}():\n    assert True\n\n\n" for i in range(count)))


def timed_run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one pytest process."""
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    elapsed = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed in {cwd}:\n{output}")
    return elapsed, usage.ru_utime + usage.ru_stime


def package_modules(cwd: Path, env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", "import json\n" + COUNT_MODULES], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stdout + done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", default="1,2000", help="sizes, comma-separated (default 1,2000)")
    parser.add_argument("--repeat", type=int, default=11, help="timed repetitions per size (default 11)")
    args = parser.parse_args()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTEST_ADDOPTS": ""}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    with tempfile.TemporaryDirectory(prefix="inert-cost-") as tmp:
        root = Path(tmp)
        for count in (int(c) for c in args.tests.split(",")):
            folder = root / f"tests_{count}"
            write_tests(folder, count)
            variants = {"plugin": PYTEST, "no:mllm": [*PYTEST, "-p", "no:mllm"]}
            times: dict[str, dict[str, list[float]]] = {kind: {name: [] for name in variants} for kind in ("wall", "CPU")}
            for round_ in range(args.repeat + 1):
                order = list(variants) if round_ % 2 else list(reversed(variants))
                for name in order:
                    wall, cpu = timed_run(variants[name], folder, env)
                    if round_:
                        times["wall"][name].append(wall)
                        times["CPU"][name].append(cpu)
            print(f"{count} tests, {args.repeat} repetitions (OMP_NUM_THREADS=1):")
            for kind, by_variant in times.items():
                on, off = statistics.median(by_variant["plugin"]), statistics.median(by_variant["no:mllm"])
                for name, values in by_variant.items():
                    print(f"  {kind:4} {name:8} median {statistics.median(values) * 1000:7.1f} ms, "
                          f"min {min(values) * 1000:7.1f} ms")
                paired = statistics.median(a - b for a, b in zip(by_variant["plugin"], by_variant["no:mllm"]))
                print(f"  {kind:4} plugin's cost: {(on - off) * 1000:+.1f} ms (difference of medians), "
                      f"{paired * 1000:+.1f} ms (median of the paired differences), ratio of medians {on / off:.3f}")
        modules = package_modules(root / f"tests_{args.tests.split(',')[0]}", env)
        print(f"package modules a plain run imports: {len(modules)} ({', '.join(modules)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
