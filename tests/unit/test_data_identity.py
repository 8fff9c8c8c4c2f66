"""What data a run's scores were computed on (`engine/data_identity.py`): the benchmark's digest of its
files and rows read, a sample's input digest, and `record.same_input`; on a real JSONL benchmark."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_mllm.engine.data_identity import data_identity, input_digest
from pytest_mllm.engine.spec import load_spec
from pytest_mllm.loaders import load_samples
from pytest_mllm.record import same_input
from pytest_mllm.sample import Sample

OK_PNG = (Path(__file__).resolve().parents[2] / "fixtures" / "bad" / "ok.png").read_bytes()
ROWS = [{"id": "a", "image": "ok.png", "question": "Red?", "answer": "yes"},
        {"id": "b", "image": "ok.png", "question": "Blue?", "answer": "no"}]


def bench(folder: Path, rows: list[dict[str, str]], image: bytes = OK_PNG) -> tuple[dict, list[str]]:
    """(data identity, input digests) of a JSONL benchmark of `rows` written in `folder`."""
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "ok.png").write_bytes(image)
    (folder / "data" / "b.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "mine.yaml").write_text("name: mine\nloader: jsonl\nparser: mme\ndata: {root: data, file: b.jsonl}\n")
    spec = load_spec.__wrapped__(folder / "mine.yaml")  # type: ignore[attr-defined]
    root = spec.resolve_data_root(None)
    samples = load_samples(spec, root)
    return data_identity(spec, root, samples), [input_digest(s) for s in samples if isinstance(s, Sample)]


def test_the_same_data_in_two_places_has_one_identity(tmp_path: Path) -> None:
    first, inputs = bench(tmp_path / "one", ROWS)
    second, again = bench(tmp_path / "two", ROWS)
    assert first == second and inputs == again
    assert first["rows"] == 2 and set(first["files"]) == {"b.jsonl"} and len(first["digest"]) == 16


def test_a_changed_row_changes_the_benchmarks_digest_and_that_samples_input_only(tmp_path: Path) -> None:
    before, inputs = bench(tmp_path / "one", ROWS)
    after, changed = bench(tmp_path / "two", [ROWS[0], {**ROWS[1], "answer": "yes"}])
    assert before["digest"] != after["digest"] and before["files"] != after["files"]
    assert inputs[0] == changed[0] and inputs[1] != changed[1]


def test_new_image_bytes_change_every_input_that_shows_the_image(tmp_path: Path) -> None:
    from PIL import Image
    import io

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), "blue").save(buffer, format="PNG")
    before, inputs = bench(tmp_path / "one", ROWS)
    after, changed = bench(tmp_path / "two", ROWS, image=buffer.getvalue())
    assert before["digest"] == after["digest"]  # a folder's images are identified per sample …
    assert inputs[0] != changed[0] and inputs[1] != changed[1]  # … here


def test_records_compare_by_input_digest_else_by_question_target_and_image() -> None:
    a = {"input_digest": "1", "question": "Q", "answer": "yes", "image": "x.png"}
    assert same_input(a, {**a}) and not same_input(a, {**a, "input_digest": "2"})
    assert same_input(a, {**a, "question": "other", "input_digest": "1"})  # the digest decides where both have one
    old = {"question": "Q", "answer": "yes", "image": "x.png"}  # written before there were digests
    assert same_input(old, {**old}) and not same_input(old, {**old, "answer": "no"})


def _run(digest: str, records: list[dict]) -> dict:
    correct = sum(r["status"] == "correct" for r in records)
    return {"benchmarks": {"bench": {"headline": "accuracy", "metrics": {"accuracy": correct / len(records)},
                                     "data": {"digest": digest, "rows": len(records), "files": {}}}},
            "records": [{"benchmark": "bench", "task": "t", "question": "Q", "answer": "yes", "image": "",
                         "answer_type": "yes_no", "pair_group": None, "category": None, "l2_category": None,
                         "parsed": "yes" if r["status"] == "correct" else "no", "correct": r["status"] == "correct",
                         **r} for r in records]}


def test_compare_tells_a_data_change_from_a_regression_and_flips_only_equal_inputs() -> None:
    from pytest_mllm.report.compare import compare, data_change_lines
    from pytest_mllm.scoring.gates import parse_max_drop

    base = _run("d1", [{"id": "a", "status": "correct", "input_digest": "x"},
                       {"id": "b", "status": "correct", "input_digest": "y"}])
    head = _run("d2", [{"id": "a", "status": "incorrect", "input_digest": "x"},  # the same input: a regression
                       {"id": "b", "status": "incorrect", "input_digest": "z"}])  # another target: left out
    result = compare([base, head], ["base", "head"], [parse_max_drop("bench.accuracy=0.1")])
    assert result["benchmarks"]["bench"]["data_changed"] == [None, True]
    assert [f["id"] for f in result["flips"]] == ["a"]
    assert result["flip_counts"]["head"] == {"compared": 1, "changed_inputs": 1, "regressed": 1, "fixed": 0}
    gate = result["gates"][0]
    assert gate["verdict"] == "not run" and gate["data_changed"] and "a data change, not a model's" in gate["note"]
    assert data_change_lines(result) == ["bench: head ran on other data than base (data digest d2 vs d1): its deltas "
                                         "are a data change, not the model's"]
    same = compare([base, _run("d1", head["records"])], ["base", "head"], [parse_max_drop("bench.accuracy=0.1")])
    assert same["benchmarks"]["bench"]["data_changed"] == [None, False] and same["gates"][0]["verdict"] == "fail"
