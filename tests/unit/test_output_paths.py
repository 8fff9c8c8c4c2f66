"""Output paths (`engine/output_paths.py`), file names from data, bounded messages (`echo.py`) and YAML's
limits (`safe_yaml.py`): pure logic, on real files."""

from __future__ import annotations

import os
import resource
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from pytest_mllm.echo import excerpt, printable
from pytest_mllm.engine.output_paths import (
    Input,
    Output,
    OutputError,
    OutputWriteError,
    check_outputs,
    file_name_problem,
    inside_folder,
    write_atomically,
)
from pytest_mllm.safe_yaml import MAX_ITEMS, load_yaml


@contextmanager
def file_size_limit(size: int) -> Iterator[None]:
    """Writes past `size` bytes fail with EFBIG, as writes on a full disk fail with ENOSPC."""
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old_handler)


def test_an_atomic_write_replaces_the_file_keeps_its_mode_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    write_atomically(target, "new content")
    assert target.read_text() == "new content"
    assert target.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_failed_write_is_one_error_and_the_previous_file_survives(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text('{"previous": true}')
    with file_size_limit(10), pytest.raises(OutputWriteError) as info:
        write_atomically(target, "x" * 10_000, what="the results")
    assert str(info.value).startswith(f"cannot write the results {target} (File too large); "
                                      "the previous file is unchanged")
    assert target.read_text() == '{"previous": true}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # the temporary file is gone


def _data(tmp_path: Path) -> list[Input]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "b.jsonl").write_text("{}\n")
    (tmp_path / "data" / "ok.png").write_bytes(b"png")
    return [Input("the data folder of benchmark 'mine'", tmp_path / "data", folder=True),
            Input("the data file of benchmark 'mine'", tmp_path / "data" / "b.jsonl")]


@pytest.mark.parametrize(("path", "message"), [
    ("data/b.jsonl", "that is the data file of benchmark 'mine'"),
    ("data/../data/b.jsonl", "that is the data file of benchmark 'mine'"),
    ("link.json", "that is the data file of benchmark 'mine'"),
    ("hard.json", "that is the data file of benchmark 'mine'"),
    ("data/ok.png", "that file is inside the data folder of benchmark 'mine'"),
])
def test_an_output_that_is_an_input_is_refused(tmp_path: Path, path: str, message: str) -> None:
    inputs = _data(tmp_path)
    (tmp_path / "link.json").symlink_to(tmp_path / "data" / "b.jsonl")
    os.link(tmp_path / "data" / "b.jsonl", tmp_path / "hard.json")
    with pytest.raises(OutputError, match=f"--mllm-json={tmp_path / path}: {message}"):
        check_outputs([Output("--mllm-json", tmp_path / path)], inputs)


def test_two_outputs_at_one_path_and_an_unwritable_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="--mllm-json and --mllm-html both name"):
        check_outputs([Output("--mllm-json", tmp_path / "r"), Output("--mllm-html", tmp_path / "r")])
    with pytest.raises(OutputError, match="the folder /proc is not writable"):  # root passes os.access there
        check_outputs([Output("--mllm-json", Path("/proc/results.json"))])


def test_new_files_in_the_data_folder_and_distinct_outputs_pass(tmp_path: Path) -> None:
    inputs = _data(tmp_path)
    (tmp_path / "data" / "earlier.json").write_text('{\n "pytest_mllm": "0.1.0",\n "records": []\n}\n')
    check_outputs([Output("--mllm-json", tmp_path / "data" / "earlier.json")], inputs)  # a re-run writes it again
    (tmp_path / "data" / "earlier.json").unlink()
    check_outputs([Output("--mllm-json", tmp_path / "data" / "results.json"),
                   Output("--mllm-mme-results", tmp_path / "mme", folder=True)], inputs)
    assert (tmp_path / "mme").is_dir() and sorted(p.name for p in (tmp_path / "data").iterdir()) == ["b.jsonl", "ok.png"]


@pytest.mark.parametrize(("name", "problem"), [
    ("../x", "holds '/'"), ("/etc/passwd", "holds '/'"), ("a\\b", "holds '\\\\'"), ("..", "is empty, '.' or '..'"),
    ("", "is empty"), ("\x1b[2J", "holds '\\x1b'"), ("x" * 300, "is longer than 200 bytes"),
])
def test_a_name_that_cannot_be_one_file_is_refused(tmp_path: Path, name: str, problem: str) -> None:
    assert problem in (file_name_problem(name) or "")
    with pytest.raises(OutputError, match="file name"):
        inside_folder(tmp_path, name)


def test_real_task_names_are_file_names(tmp_path: Path) -> None:
    for name in ("Scene Understanding", "code_reasoning", "Artistic Text Recognition", "fine-grained perception", "é"):
        assert inside_folder(tmp_path, f"{name}.txt") == tmp_path / f"{name}.txt"


def _bomb(levels: int) -> str:
    expr = "&a0 [" + ", ".join(["lol"] * 10) + "]"
    for level in range(1, levels + 1):
        expr = f"&a{level} [{expr}, " + ", ".join([f"*a{level - 1}"] * 9) + "]"
    return f"value: {expr}\n"


def test_yaml_alias_bombs_deep_nesting_and_cycles_are_yaml_errors_at_once() -> None:
    start = time.perf_counter()
    with pytest.raises(yaml.YAMLError, match="expand to 11,111,111,113 values"):
        load_yaml(_bomb(9))
    with pytest.raises(yaml.YAMLError, match="nested more than 200 levels deep"):
        load_yaml("[" * 20_000 + "]" * 20_000)
    with pytest.raises(yaml.YAMLError, match="a value inside itself"):
        load_yaml("a: &a [1, *a]")
    assert time.perf_counter() - start < 10
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}
    assert len(load_yaml(_bomb(4))["value"]) == 10  # 111,111 values: under MAX_ITEMS, read
    assert MAX_ITEMS == 1_000_000


def test_excerpts_are_bounded_and_escapes_escaped() -> None:
    huge = [["x" * 100] * 1000] * 1000  # a million strings by reference, as an alias bomb builds them
    shown = excerpt(huge)
    assert shown.startswith("list [[") and len(shown) <= 90
    assert excerpt(True) == "True" and excerpt("ab") == "'ab'" and excerpt(10 ** 5000) == "int of 16610 bits"
    assert printable("a\x1b[2Jb\u202e") == "a\\x1b[2Jb\\u202e"
    assert printable("line 1\nline 2\x07", keep_lines=True) == "line 1\nline 2\\x07"
