#!/usr/bin/env python
"""A regression gate that really trips: a late and an early stage of `shapes-llava`.

    python scripts/regression_demo.py [--good shapes-llava] [--bad shapes-llava@stage4]
                                      [--bench shapes] [--max-drop 0.05] [--out DIR]

1. runs the bundled suite with the good model and with the bad one (`--mllm-json` each);
2. compares them with `pytest-mllm-compare good.json bad.json --max-drop BENCH.accuracy=DROP`
   (exit status 1: the drop exceeds the limit);
3. gates the bad run on the good one inside pytest itself,
   `--mllm-baseline=good.json --mllm-max-drop=BENCH.accuracy=DROP` (exit status 1), and the
   good run on itself (exit status 0), the way a CI job on a pull request would.

Everything runs offline on CPU in about a minute.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(cmd: list[str], cwd: Path) -> int:
    print("$ " + " ".join(cmd[2:] if cmd[:2] == [sys.executable, "-m"] else cmd), flush=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    lines = result.stdout.splitlines()
    keep = [line for line in lines if any(k in line for k in ("accuracy", "gate", "FAIL", "drop", "passed", "│ overall"))]
    print("\n".join("    " + line for line in (keep or lines)[-14:]))
    print(f"    → exit status {result.returncode}\n", flush=True)
    return result.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--good", default="shapes-llava")
    parser.add_argument("--bad", default="shapes-llava@stage4")
    parser.add_argument("--bench", default="shapes")
    parser.add_argument("--max-drop", default="0.05", help="largest allowed fall of BENCH.accuracy (0–1)")
    parser.add_argument("--out", type=Path, help="keep the JSON files here (default: a temporary folder)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        good, bad = out / "good.json", out / "bad.json"
        pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm-bench={args.bench}",
                  "--mllm-cache=off"]
        limit = f"{args.bench}.accuracy={args.max_drop}"
        codes = {
            "good run": run(pytest + [f"--mllm={args.good}", f"--mllm-json={good}"], out),
            "bad run": run(pytest + [f"--mllm={args.bad}", f"--mllm-json={bad}"], out),
            "compare": run([sys.executable, "-m", "pytest_mllm.report.compare", str(good), str(bad),
                            "--max-drop", limit], out),
            "gate on bad": run(pytest + [f"--mllm={args.bad}", f"--mllm-baseline={good}", f"--mllm-max-drop={limit}"], out),
            "gate on good": run(pytest + [f"--mllm={args.good}", f"--mllm-baseline={good}", f"--mllm-max-drop={limit}"], out),
        }
        scores = {name: json.loads(path.read_text())["benchmarks"][args.bench]["metrics"]["accuracy"]
                  for name, path in ((args.good, good), (args.bad, bad))}
    print(f"{args.bench} accuracy: " + ", ".join(f"{k} {v:.3f}" for k, v in scores.items()))
    print("exit statuses: " + ", ".join(f"{k} {v}" for k, v in codes.items()))
    expected = {"good run": 0, "bad run": 0, "compare": 1, "gate on bad": 1, "gate on good": 0}
    ok = all(codes[k] == v for k, v in expected.items())
    print("the gate stops the regression and lets the good model through" if ok else "UNEXPECTED exit statuses")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
