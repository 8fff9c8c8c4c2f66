#!/usr/bin/env python
"""Scale check of the parquet loader: collection time and memory on a large HF-style dataset,
against the time to answer the first batch.

Writes a dataset folder (README.md with HF front matter, data/test-0000k-of-0000n.parquet, image
structs of small PNGs, several row groups per file) and a spec for it, then times

  1. `pytest --collect-only -q` over it (wall time, peak RSS of the pytest process), and
  2. a run of the first batch (8 tests, `-k` selecting them) with `--mllm=MODEL` (default tiny-llava);
     its wall time includes collecting the whole dataset again, so the batch's own share is the
     difference, and the JSON records' latencies are shown too.

    python scripts/parquet_scale.py                         # 100,000 rows in /tmp/pytest-mllm-parquet-scale
    python scripts/parquet_scale.py --rows 20000 --model baseline:yes
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

SPEC = """name: scale
loader: parquet
data:
  root: {root}
loader_options:
  columns: {{id: question_id, task: category}}
parser: yes_no_lenient
prompt: "{{question}} Answer yes or no."
max_new_tokens: 4
"""

CARD = """---
dataset_info:
  features:
  - name: question_id
    dtype: string
  - name: category
    dtype: string
  - name: question
    dtype: string
  - name: answer
    dtype: string
  - name: image
    dtype: image
configs:
- config_name: default
  data_files:
  - split: test
    path: data/test-*
---
"""


def generate(root: Path, rows: int, files: int, row_group: int, size: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image, ImageDraw

    image = pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    schema = pa.schema([("question_id", pa.string()), ("category", pa.string()), ("question", pa.string()),
                        ("answer", pa.string()), ("image", image)])
    (root / "data").mkdir(parents=True, exist_ok=True)
    per_file = -(-rows // files)
    for number in range(files):
        start, stop = number * per_file, min(rows, (number + 1) * per_file)
        batch = []
        for i in range(start, stop):
            im = Image.new("RGB", (size, size), (245, 245, 245))
            d = ImageDraw.Draw(im)
            colour = ((i * 37) % 256, (i * 91) % 256, (i * 53) % 256)
            d.rectangle((i % 17, i % 13, size - 1 - i % 11, size - 1 - i % 7), fill=colour)
            buffer = io.BytesIO()
            im.save(buffer, "PNG")
            batch.append({"question_id": f"r{i:06d}", "category": f"cat{i % 10}",
                          "question": f"Is the rectangle number {i} red?", "answer": "yes" if colour[0] > 127 else "no",
                          "image": {"bytes": buffer.getvalue(), "path": f"r{i:06d}.png"}})
        pq.write_table(pa.Table.from_pylist(batch, schema=schema),
                       root / "data" / f"test-{number:05d}-of-{files:05d}.parquet", row_group_size=row_group)
    (root / "README.md").write_text(CARD, encoding="utf-8")


def timed(command: list[str], cwd: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) and the output tail of `command`, run under /usr/bin/time -v."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *command], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}")
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return wall, int(peak.group(1)) if peak else -1, done.stdout[-400:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pytest-mllm-parquet-scale"))
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--row-group", type=int, default=1000, help="rows per row group")
    parser.add_argument("--size", type=int, default=64, help="image side in pixels")
    parser.add_argument("--model", default="tiny-llava")
    parser.add_argument("--regenerate", action="store_true")
    args = parser.parse_args()

    root = args.dir / "dataset"
    if args.regenerate or not (root / "README.md").is_file():
        start = time.perf_counter()
        generate(root, args.rows, args.files, args.row_group, args.size)
        print(f"generated {args.rows} rows in {args.files} files in {time.perf_counter() - start:.1f} s")
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    print(f"dataset: {root} ({size / 2**20:.1f} MiB)")
    spec = args.dir / "scale.yaml"
    spec.write_text(SPEC.format(root=root), encoding="utf-8")

    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(spec)]
    wall, rss, tail = timed(pytest + ["--collect-only", "-q", "--mllm=baseline:yes"], args.dir)
    print(f"collect-only: {wall:.2f} s wall, peak RSS {rss / 1024:.0f} MiB; {tail.strip().splitlines()[-1]}")

    first_batch(pytest, args.model, " or ".join(f"r{i:06d}" for i in range(8)), args.dir, wall)
    return 0


def first_batch(pytest: list[str], model: str, selection: str, cwd: Path, collect_wall: float) -> None:
    """Run the first batch (8 samples, `-k selection`) with `model` and print its time, memory and latency."""
    out = cwd / "first_batch.json"
    wall_run, rss_run, _ = timed(pytest + [f"--mllm={model}", "--mllm-cache=off", "--mllm-batch-size=8",
                                           "-k", selection, f"--mllm-json={out}", "-q"], cwd)
    records = json.loads(out.read_text())["records"]
    latency = sum(r.get("latency_s") or 0 for r in records)
    print(f"first batch of {len(records)} with {model}: {wall_run:.2f} s wall for the whole run "
          f"(collection included), peak RSS {rss_run / 1024:.0f} MiB; recorded model latency {latency:.2f} s; "
          f"run minus collect-only: {wall_run - collect_wall:.2f} s")


if __name__ == "__main__":
    raise SystemExit(main())
