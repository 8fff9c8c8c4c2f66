#!/usr/bin/env python
"""Scale check of the TSV loader: collection time and memory on a TSV of several hundred MB,
against the time to answer the first batch.

Writes a VLMEvalKit-style multiple-choice TSV (index, question, hint, A-D, answer, category,
l2-category, split, image as base64 JPEG of a few tens of KB; every `--reference-every`-th row's
image cell names the previous row's index instead of holding data, as MMBench's circular passes do)
and a spec for it, then times, `--repeat` times each,

  1. `pytest --collect-only -q` over it (wall time, peak RSS of the pytest process), and
  2. a run of the first batch (8 tests, `-k` selecting them) with `--mllm=MODEL` (default tiny-llava);
     its wall time includes collecting the whole TSV again, so the batch's own share is the
     difference, and the JSON records' latencies are shown too.

    python scripts/tsv_scale.py                         # 10,000 rows (~400 MB) in /tmp/pytest-mllm-tsv-scale
    python scripts/tsv_scale.py --rows 2000 --model baseline:yes --repeat 1
"""

from __future__ import annotations

import argparse
import base64
import io
import random
import statistics
import sys
import time
from pathlib import Path

from parquet_scale import first_batch, timed

SPEC = """name: tsvscale
loader: tsv
data:
  root: {root}
  file: SCALE.tsv
loader_options:
  task_column: category
parser: choice
prompt: "{{hint}}{{question}}\\n{{options}}\\nAnswer with the option's letter."
max_new_tokens: 8
metrics: [accuracy]
"""

COLUMNS = ["index", "question", "hint", "A", "B", "C", "D", "answer", "category", "l2-category", "split", "image"]
FIRST_INDEX = 100_000  # six-digit indexes: `-k 100003` selects one row


def _image(number: int, side: int, rng: random.Random) -> str:
    """A JPEG of smooth colour noise (a photograph's size on disk), base64-encoded."""
    from PIL import Image, ImageDraw

    coarse = Image.frombytes("RGB", (side // 6, side // 6), rng.randbytes((side // 6) ** 2 * 3))
    image = coarse.resize((side, side), Image.BILINEAR)
    ImageDraw.Draw(image).text((4, 4), str(number), fill=(255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=85)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def generate(path: Path, rows: int, side: int, reference_every: int) -> None:
    rng = random.Random(0)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        out.write("\t".join(COLUMNS) + "\n")
        for i in range(rows):
            index = FIRST_INDEX + i
            shares = reference_every and i % reference_every == reference_every - 1
            image = str(index - 1) if shares else _image(i, side, rng)
            cells = [str(index), f"Which colour dominates picture {i}?", "Look at the whole picture." if i % 3 else "",
                     "red", "green", "blue", "grey", "ABCD"[i % 4], f"cat{i % 8}", f"l2cat{i % 3}", "dev", image]
            out.write("\t".join(cells) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pytest-mllm-tsv-scale"))
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--size", type=int, default=384, help="image side in pixels")
    parser.add_argument("--reference-every", type=int, default=10,
                        help="every n-th row's image cell names the previous row (0: none)")
    parser.add_argument("--model", default="tiny-llava")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--regenerate", action="store_true")
    args = parser.parse_args()

    root = args.dir / "data"
    tsv = root / "SCALE.tsv"
    if args.regenerate or not tsv.is_file():
        start = time.perf_counter()
        generate(tsv, args.rows, args.size, args.reference_every)
        print(f"generated {args.rows} rows in {time.perf_counter() - start:.1f} s")
    print(f"TSV: {tsv} ({tsv.stat().st_size / 2**20:.1f} MiB)")
    spec = args.dir / "tsvscale.yaml"
    spec.write_text(SPEC.format(root=root), encoding="utf-8")

    pytest = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(spec)]
    walls, peaks = [], []
    for _ in range(args.repeat):
        wall, rss, tail = timed(pytest + ["--collect-only", "-q", "--mllm=baseline:yes"], args.dir)
        walls.append(wall)
        peaks.append(rss)
        print(f"collect-only: {wall:.2f} s wall, peak RSS {rss / 1024:.0f} MiB; {tail.strip().splitlines()[-1]}")
    print(f"collect-only over {args.repeat}: median {statistics.median(walls):.2f} s, "
          f"peak RSS max {max(peaks) / 1024:.0f} MiB")

    first = " or ".join(str(FIRST_INDEX + i) for i in range(8))
    for _ in range(args.repeat):
        first_batch(pytest, args.model, first, args.dir, statistics.median(walls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
