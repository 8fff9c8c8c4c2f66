"""Speed of pytest-mllm: its overhead against plain pytest, its throughput against raw loops, and
its peers (lmms-eval, VLMEvalKit).

    python scripts/perf.py [--suite {core,hotpath,throughput,all}] [--samples 10000] [--repeat 3] [--json out.json]
    python scripts/perf.py --suite peers [--repeat 3] [--peer-images 56] [--json out.json]

The suites live in the package beside this file, `scripts/perf/` (what each figure measures: its
`__init__.py`); this file is their command line and the entry of their worker modes.
"""

import sys

from perf.cli import main

if __name__ == "__main__":
    sys.exit(main())
