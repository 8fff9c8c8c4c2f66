"""The official MME release folder (MME_Benchmark_release_version).

Two layouts live side by side in the release: subtask folders holding each image next
to its `<stem>.txt`, and subtask folders with `images/` and `questions_answers_YN/`.
Each txt holds two "question<TAB>Yes|No" lines about its image.
"""

from __future__ import annotations

from pathlib import Path

from pytest_mllm.engine.spec import BenchmarkSpec, SpecError, loader
from pytest_mllm.loaders.mme_results import read_mme_results
from pytest_mllm.sample import BadSample, ImageRef, Sample

IMAGE_SUFFIXES = (".jpg", ".png", ".jpeg", ".JPG", ".PNG", ".JPEG")


def task_folders(root: Path, order: tuple[str, ...]) -> list[Path]:
    """Subtask folders: the spec's order first, any others after, sorted by name."""
    present = {p.name: p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")}
    return [present[t] for t in order if t in present] + [
        present[t] for t in sorted(present) if t not in order
    ]


@loader("mme", about="MME's release folder")
def load_mme_folder(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Samples of every subtask folder under `root`, ids like `existence::0001.jpg::q2`."""
    assert root is not None
    folders = task_folders(root, spec.task_order)
    if not folders:
        raise SpecError(f"no MME subtask folders found in {root}; point --mllm-data at MME_Benchmark_release_version")
    samples: list[Sample | BadSample] = []
    for folder in folders:
        if (folder / "images").is_dir():
            image_dir, qa_dir = folder / "images", folder / "questions_answers_YN"
        else:
            image_dir = qa_dir = folder
        if not qa_dir.is_dir():
            samples.append(BadSample(f"{folder.name}::questions", spec.name, folder.name, f"missing folder {qa_dir}"))
            continue
        for qa_file in sorted(qa_dir.glob("*.txt")):
            samples.extend(_pair(spec.name, folder.name, qa_file, image_dir, root))
    return samples


def _image_name(image_dir: Path, stem: str) -> str:
    for suffix in IMAGE_SUFFIXES:
        if (image_dir / (stem + suffix)).is_file():
            return stem + suffix
    return stem + ".jpg"  # missing: the sample errors when its image is read


def _pair(benchmark: str, task: str, qa_file: Path, image_dir: Path, root: Path) -> list[Sample | BadSample]:
    image = _image_name(image_dir, qa_file.stem)
    image_ref = ImageRef("path", str((image_dir / image).relative_to(root)), root=root)
    out: list[Sample | BadSample] = []
    # as readlines(); a byte-order mark is no part of the first question: the questions MME's evaluation
    # scores are its eval_tool's Your_Results templates, which hold none
    lines = [line for line in qa_file.read_text(encoding="utf-8-sig").split("\n") if line.strip()]
    for number, line in enumerate(lines, start=1):
        sample_id = f"{task}::{image}::q{number}"
        question, sep, answer = line.strip().rpartition("\t")
        if not sep or answer.strip().lower() not in ("yes", "no"):
            out.append(BadSample(sample_id, benchmark, task,
                                 f"{qa_file}:{number}: expected 'question<TAB>Yes|No', got {line!r}",
                                 pair_group=f"{task}::{image}"))
            continue
        out.append(Sample(
            id=sample_id, benchmark=benchmark, task=task, question=question, answer=answer.strip(),
            answer_type="yes_no", images=(image_ref,), pair_group=f"{task}::{image}",
        ))
    return out


@loader("mme_results", about="MME's results format")
def load_mme_results_folder(spec: BenchmarkSpec, root: Path | None) -> list[Sample | BadSample]:
    """Questions and ground truth of an MME *results* folder, paired by consecutive lines
    exactly as MME's script pairs them (so another tool's outputs can be rescored)."""
    assert root is not None
    try:
        lines = read_mme_results(root)
    except ValueError as exc:
        raise SpecError(str(exc)) from None
    order = {task: i for i, task in enumerate(spec.task_order)}
    by_task: dict[str, list] = {}
    for line in lines:
        by_task.setdefault(line.task, []).append(line)
    strip = "strip_cells" in spec.deviations
    samples: list[Sample | BadSample] = []
    for task in sorted(by_task, key=lambda t: (order.get(t, len(order)), t)):
        task_lines = by_task[task]
        for position, line in enumerate(task_lines):
            pair, member = divmod(position, 2)
            sample_id = f"{task}::{line.image}::q{member + 1}"
            where = f"{root / (task + '.txt')}: line {position + 1}"
            if member == 0 and position == len(task_lines) - 1:
                samples.append(BadSample(sample_id, spec.name, task, f"{where} has no pair line; MME's "
                                         "calculation.py cannot score the file either (it reads lines two by two)"))
                continue
            truth = line.answer.strip() if strip else line.answer
            if truth.lower() not in ("yes", "no"):
                samples.append(BadSample(sample_id, spec.name, task, _truth_problem(where, line.answer),
                                         pair_group=f"{task}::pair{pair}"))
                continue
            samples.append(Sample(
                id=sample_id, benchmark=spec.name, task=task, question=line.question,
                answer=truth, answer_type="yes_no",
                images=(ImageRef("path", line.image, root=root),), pair_group=f"{task}::pair{pair}",
            ))
    return samples


def _truth_problem(where: str, truth: str) -> str:
    """Why a ground-truth cell cannot be scored: MME's script lowercases it and stops at anything but yes/no."""
    fix = ("remove the spaces around it, or list `strip_cells` in the spec's `deviations`"
           if truth.strip().lower() in ("yes", "no") else "write Yes or No")
    return (f"{where}: ground truth {truth!r} is not Yes or No; MME's calculation.py cannot score the file "
            f"either (it stops at any other ground truth): {fix}")
