"""MME's official results format: one `<subtask>.txt` per subtask in a folder, lines of
"image<TAB>question<TAB>ground truth<TAB>response", the two questions of an image on
consecutive lines. We read it as recorded predictions and write it for MME's own script.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from pytest_mllm.loaders import Answers, results_folder


@dataclass(frozen=True)
class ResultLine:
    """One line of an MME results file."""

    task: str
    image: str
    question: str
    answer: str
    response: str


def read_mme_results(folder: Path) -> list[ResultLine]:
    """Every line of every `<subtask>.txt` in `folder`, in file then line order."""
    lines: list[ResultLine] = []
    files = sorted(folder.glob("*.txt"))
    if not files:
        raise ValueError(f"no MME results files (<subtask>.txt) in {folder}")
    for path in files:
        # Lines end at "\n" (and "\r", "\r\n": universal newlines) only, as the official script's
        # readlines() reads them: not at U+2028, a form feed or the other breaks str.splitlines() knows.
        # A byte-order mark is not part of the first image's name (the script never reads the name).
        # The file's last line break ends its last line; any other empty or blank line is a line of its own.
        text = path.read_text(encoding="utf-8-sig")
        for number, line in enumerate(text.removesuffix("\n").split("\n") if text else [], start=1):
            if not line.strip():
                raise ValueError(
                    f"{path}:{number}: a blank line; MME's calculation.py cannot score this file either (it "
                    "splits every line into image, question, ground truth and response, and stops at a blank "
                    "one, or, the last line, finds it without its pair): remove the blank lines"
                )
            parts = line.split("\t")
            if len(parts) != 4:
                raise ValueError(
                    f"{path}:{number}: expected 4 tab-separated columns "
                    f"(image, question, ground truth, response), got {len(parts)}; MME's calculation.py "
                    "cannot score this file either (it splits each line into exactly these four): a response "
                    "holding a tab or a line break must be written on one line without them"
                )
            lines.append(ResultLine(path.stem, *parts))
    return lines


@results_folder("mme_results", about="MME's official results format")
def recorded_answers(folder: Path) -> Answers:
    """The responses of an MME results folder, by (subtask, image, question)."""
    return {(line.task, line.image, line.question): line.response for line in read_mme_results(folder)}


def _one_line(text: str) -> str:
    """Tabs and newlines would break the format; as whitespace they never change MME's reading."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def write_mme_results(records: Iterable[Mapping[str, Any]], folder: Path) -> list[Path]:
    """Write yes/no records (in their order) as MME results files; returns the files written.

    A pair with an errored member is left out whole: MME's script reads lines in pairs.
    """
    records = [r for r in records if r.get("answer_type") == "yes_no"]
    broken = {r.get("pair_group") for r in records if r["status"] == "error"}
    by_task: dict[str, list[str]] = {}
    for record in records:
        if record.get("pair_group") in broken:
            continue
        row = "\t".join([
            record["image"], _one_line(record["question"]),
            record["answer"].capitalize(), _one_line(record["response"]),
        ])
        by_task.setdefault(record["task"], []).append(row)
    from pytest_mllm.engine.output_paths import inside_folder, write_atomically

    written = []
    for task, rows in by_task.items():
        path = inside_folder(folder, f"{task}.txt")
        write_atomically(path, "".join(row + "\n" for row in rows), what="MME results file")
        written.append(path)
    return written
