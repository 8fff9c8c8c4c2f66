"""Open-ended VQA as a JSON list: the shape of Tiny LVLM-eHub's sampled datasets and many VQA sets.

Each entry (a JSON object) has:

* ``question_id`` or ``id``: its id (default ``row<n>``, the entry's 1-based position);
* ``image`` or ``image_path``: the image, a path relative to the data root;
* ``question``;
* the reference answers, one of: ``answers`` (a list), ``answer`` (one string) or
  ``gt_answers`` (Tiny LVLM-eHub's name; a string or a list); any one reference is right. They
  are kept as written (the scorer prepares them), empty ones included; a number is read as its
  text (the authors' ``VQAEval`` stops with an AttributeError at a number, so no score disagrees);
* optionally ``dataset`` or ``task`` (the task; default the benchmark's name), ``category``,
  ``human_label`` (true/false: a person's verdict on a recorded answer, for agreement
  studies) and ``metadata`` (a mapping, kept).

Samples are open-ended (``answer_type="open"``); ``answer`` is the first reference and
``metadata`` holds ``references`` (all of them), ``human_label`` (None when absent) and
``source_id``. An entry that cannot be read, or whose image path leaves the data root,
becomes a BadSample.

``loader_options: {per_dataset: 50, seed: 20230719}`` keeps 50 entries per task as Tiny
LVLM-eHub's ``sample_dataset`` draws them (tiny_lvlm_evaluation/sample_dataset.py): NumPy's
legacy ``np.random.seed(seed); np.random.choice(len(entries), 50, replace=False)`` per task, the
task's entries in file order, reproduced in plain Python (`legacy_numpy_choice`); kept in file
order. A task with no more entries than that keeps them all (NumPy refuses that draw).
``picks: {task: [positions]}``: for these tasks the draw is of max(positions) + 1 entries, of which
those positions are kept: Tiny LVLM-eHub's draw for the datasets in its
``bard_RandomSeed20230719_50samples_per_dataset.jsonl`` (the samples Bard answered), as
``sample_dataset`` made the released subset (commit dd3839d); a task with no more entries than
that is drawn as the others (the authors' draw would stop there). Not reproduced: the later
``sample_dataset`` (commit d4447c1 on), which keeps the 100 entries after Bard's for the
Ability-level benchmark, not Tiny LVLM-eHub's 50.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from pytest_mllm.echo import json_loads
from pytest_mllm.engine.images import ImageError, resolve_inside
from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, loader
from pytest_mllm.sample import BadSample, ImageRef, Sample

_FIELDS = {"question_id", "id", "image", "image_path", "question", "answers", "answer", "gt_answers",
           "dataset", "task", "category", "human_label", "metadata"}
_OPTIONS = {"per_dataset", "seed", "picks"}

@loader("vqa", about="Tiny LVLM-eHub JSON", data_file="", options={"per_dataset": "", "seed": "", "picks": ""})
def load_vqa(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of the JSON list `data.file` (relative to the data root), subsampled per task if asked."""
    assert root is not None
    per_dataset, seed, picks = _options(spec)
    if not spec.data_file:
        raise SpecError(f"{spec.path}: field 'data.file': the vqa loader needs the file name")
    path = resolve_inside(root, spec.data_file)
    if not path.is_file():
        raise SpecError(f"benchmark {spec.name!r}: samples file not found: {path}")
    try:
        entries = json_loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SpecError(f"benchmark {spec.name!r}: {path} is not valid JSON: {exc}") from None
    if not isinstance(entries, list):
        raise SpecError(f"benchmark {spec.name!r}: {path} must hold a JSON list of samples")
    rows: list[tuple[str, str, Sample | BadSample]] = []
    for number, entry in enumerate(entries, start=1):
        fields = entry if isinstance(entry, dict) else {}
        source_id = _first(fields, "question_id", "id")
        source_id = f"row{number}" if source_id is None else str(source_id)
        task = _first(fields, "dataset", "task")
        task = task if isinstance(task, str) and task else spec.name
        try:
            sample: Sample | BadSample = _sample(spec, entry, root, task, source_id)
        except (ValueError, TypeError, ImageError) as exc:
            sample = BadSample(f"{task}::{source_id}", spec.name, task, f"{path}: entry {number}: {exc}")
        rows.append((task, source_id, sample))
    keep = _subsample([(task, source_id) for task, source_id, _ in rows], per_dataset, seed, picks)
    return [sample for i, (_, _, sample) in enumerate(rows) if i in keep]


def _options(spec: BenchmarkSpec) -> tuple[int | None, int, dict[str, list[int]]]:
    options = dict(spec.loader_options)
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise SpecError(f"{spec.path}: field 'loader_options.{unknown[0]}': unknown; "
                        f"the vqa loader takes {', '.join(sorted(_OPTIONS))}")
    per_dataset, seed = options.get("per_dataset"), options.get("seed", 0)
    if per_dataset is not None and (not isinstance(per_dataset, int) or isinstance(per_dataset, bool)
                                    or per_dataset < 1):
        raise SpecError(f"{spec.path}: field 'loader_options.per_dataset': {per_dataset!r} must be a positive integer")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SpecError(f"{spec.path}: field 'loader_options.seed': {seed!r} must be an integer")
    picks = options.get("picks") or {}
    if picks and per_dataset is None:
        raise SpecError(f"{spec.path}: field 'loader_options.picks' needs loader_options.per_dataset")
    if not isinstance(picks, dict):
        raise SpecError(f"{spec.path}: field 'loader_options.picks' must map task names to lists of positions")
    for task, positions in picks.items():
        if (not isinstance(positions, list) or not positions or len(set(positions)) != len(positions)
                or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in positions)):
            raise SpecError(f"{spec.path}: field 'loader_options.picks.{task}' must be a list of distinct "
                            "non-negative integers")
    return per_dataset, seed, picks


def _subsample(rows: list[tuple[str, str]], per_dataset: int | None, seed: int,
               picks: dict[str, list[int]]) -> set[int]:
    """Indices of the rows kept: all, or each task's seeded draw (its `picks` of a longer one)."""
    if per_dataset is None:
        return set(range(len(rows)))
    by_task: dict[str, list[int]] = {}
    for i, (task, _) in enumerate(rows):
        by_task.setdefault(task, []).append(i)

    kept: set[int] = set()
    for task, indices in by_task.items():
        positions = picks.get(task)
        if positions and len(indices) > max(positions):
            drawn = legacy_numpy_choice(len(indices), max(positions) + 1, seed)
            chosen: Sequence[int] = [drawn[p] for p in positions]
        elif len(indices) > per_dataset:
            chosen = legacy_numpy_choice(len(indices), per_dataset, seed)
        else:
            chosen = range(len(indices))
        kept.update(indices[k] for k in chosen)
    return kept


def legacy_numpy_choice(population: int, size: int, seed: int) -> list[int]:
    """``np.random.seed(seed); np.random.choice(population, size, replace=False)`` of NumPy's legacy
    RandomState, in plain Python: MT19937 seeded by ``init_genrand``, a Fisher-Yates shuffle of
    ``range(population)`` drawing each position by rejection from a bit mask, the first `size` kept."""
    import random

    if not 0 <= seed < 2 ** 32:
        raise ValueError(f"seed {seed} must be between 0 and 2**32 - 1, as NumPy's legacy seeding requires")
    state = [seed]
    for position in range(1, 624):
        state.append((1812433253 * (state[-1] ^ (state[-1] >> 30)) + position) & 0xFFFFFFFF)
    generator = random.Random()
    generator.setstate((3, (*state, 624), None))
    order = list(range(population))
    for i in reversed(range(1, population)):
        mask = (1 << i.bit_length()) - 1
        j = generator.getrandbits(32) & mask
        while j > i:
            j = generator.getrandbits(32) & mask
        order[i], order[j] = order[j], order[i]
    return order[:size]


def _first(entry: dict[str, Any], *names: str) -> Any:
    """The value of the first of `names` that the entry has (and is not null)."""
    return next((entry[n] for n in names if entry.get(n) is not None), None)


def _text(value: Any, field: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"field {field!r} must be text, not {type(value).__name__}")
    return str(value).strip()


def _reference(value: Any, field: str) -> str:
    """A reference answer as written (a number as its text, which only the lenient reading uses)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"field {field!r} must be text, not {type(value).__name__}")
    return value if isinstance(value, str) else str(value)


def _references(entry: dict[str, Any]) -> tuple[list[str], int | None]:
    """The references, and how many of them the authors' VQAEval reads before it stops at a number
    (None: it reads them all)."""
    given = [name for name in ("answers", "answer", "gt_answers") if entry.get(name) is not None]
    if len(given) != 1:
        raise ValueError("give the reference answer(s) in exactly one of 'answers', 'answer', 'gt_answers'"
                         + (f"; found {', '.join(given)}" if given else ""))
    value = entry[given[0]]
    values = value if isinstance(value, list) else [value]
    texts = [_reference(v, given[0]) for v in values]
    first_number = next((i for i, v in enumerate(values) if not isinstance(v, str)), None)
    refs = list(dict.fromkeys(texts))
    stops_at = None if first_number is None else len(dict.fromkeys(texts[:first_number]))
    return refs, stops_at


def _sample(spec: BenchmarkSpec, entry: Any, root: Path, task: str, source_id: str) -> Sample:
    if not isinstance(entry, dict):
        raise ValueError("each sample must be a JSON object")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r}; allowed: {', '.join(sorted(_FIELDS))}")
    given_task = _first(entry, "dataset", "task")
    if given_task is not None and (not isinstance(given_task, str) or not given_task):
        raise ValueError(f"field 'dataset' (or 'task') must be a name, not {given_task!r}")
    question = _text(entry.get("question", ""), "question")
    if not question:
        raise ValueError("missing field 'question'")
    image = _first(entry, "image", "image_path")
    if not isinstance(image, str) or not image:
        raise ValueError("field 'image' (or 'image_path') must be a path relative to the data root")
    resolve_inside(root, image)  # raises before the run for a path that escapes the root
    refs, stops_at = _references(entry)
    label = entry.get("human_label")
    if label is not None and not isinstance(label, bool):
        raise ValueError(f"field 'human_label' must be true or false, not {label!r}")
    category = entry.get("category")
    if category is not None and not isinstance(category, str):
        raise ValueError("field 'category' must be text")
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ValueError("field 'metadata' must be a mapping")
    return Sample(
        id=f"{task}::{source_id}", benchmark=spec.name, task=task, question=question,
        answer=refs[0] if refs else "", answer_type="open", images=(ImageRef("path", image, root=root),),
        category=category, metadata={**metadata, "references": refs, "human_label": label, "source_id": source_id,
                                     **({"vqaeval_stops_at": stops_at} if stops_at is not None else {})},
    )
