"""What data a run's scores were computed on, so that a data change is never read as a model's change.

- `data_identity(spec, root, samples)`: the benchmark's entry `data` in the results JSON: a digest of
  its files (the data file, which holds the images of a TSV or parquet benchmark, and the subset file)
  and of every row read (ids, tasks, questions, targets, choices, image references). Every shard of a
  run reads the whole benchmark, so shards of one data agree on it (`report/merge.py` refuses others).
- `input_digest(sample)`: a record's `input_digest`, the sample's question, target, choices and image
  bytes; two runs' verdicts on a sample are compared only where it is equal (`record.same_input`).

A folder of image files (MME's) is identified per sample (through `input_digest`), not read whole
for the benchmark's digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_mllm.engine.cache import file_digest, image_digest
from pytest_mllm.engine.images import ImageError
from pytest_mllm.sample import BadSample, Sample, SkippedSample
from pytest_mllm.sections import run_metadata_keys

if TYPE_CHECKING:
    from pytest_mllm.engine.spec import BenchmarkSpec

_POSITIONS = frozenset({"row"})  # metadata saying where a row sat in its file, not what it says
DIGEST_CHARS = 16  # hex characters kept of a sha256: 64 bits, ample to tell two versions of a file apart


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=True).encode()).hexdigest()[:DIGEST_CHARS]


def _row(sample: Sample | BadSample | SkippedSample) -> list[Any]:
    """What a loader read for one sample (images by reference: their bytes are `input_digest`'s)."""
    if isinstance(sample, Sample):
        return [sample.id, sample.task, sample.question, sample.answer, sample.answer_type,
                [list(choice) for choice in sample.choices], [[ref.kind, ref.value] for ref in sample.images],
                sample.pair_group, sample.split, sample.category, sample.l2_category]
    return [sample.id, sample.task, type(sample).__name__, getattr(sample, "error", getattr(sample, "reason", ""))]


def data_identity(spec: BenchmarkSpec, root: Path | None,
                  samples: Sequence[Sample | BadSample | SkippedSample]) -> dict[str, Any]:
    """{"digest", "rows", "files": {name: digest}}: one digest of the files and the rows read, how many rows,
    and each file's own digest (a file that cannot be read is named with its reason instead)."""
    files: dict[str, str] = {}
    candidates = [root / spec.data_file if root is not None and spec.data_file else None, spec.subset_path]
    for path in candidates:
        if path is not None:
            try:
                files[path.name] = file_digest(path)[:DIGEST_CHARS]
            except OSError as exc:
                files[path.name] = f"unreadable: {exc.strerror or exc}"
    rows = _digest([_row(sample) for sample in samples])
    return {"digest": _digest({"files": files, "rows": rows}), "rows": len(samples), "files": files}


def input_digest(sample: Sample) -> str:
    """The digest of what a model is asked and what it is scored against: question, target, answer type,
    choices, the images' bytes (an image that cannot be read counts as "unreadable") and what the loader or a
    method adds in `metadata` (references, a hint, a visual-prompt variant), less where the row sat in its file
    and how a run chose it (a subset's draw: `sections.run_metadata_keys`)."""
    images = []
    for ref in sample.images:
        try:
            images.append(image_digest(ref))
        except (ImageError, OSError, ValueError):
            images.append("unreadable")
    left_out = _POSITIONS | run_metadata_keys()
    metadata = {key: value for key, value in sample.metadata.items() if key not in left_out}
    return _digest([sample.question, sample.answer, sample.answer_type, [list(c) for c in sample.choices], images,
                    json.dumps(metadata, sort_keys=True, default=lambda value: type(value).__name__)])
