"""Output paths (`engine/output_paths.py`), file names from data, bounded messages (`echo.py`) and YAML's
limits (`safe_yaml.py`): pure logic, on real files."""

from __future__ import annotations

import os
import re
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
    append_atomically,
    append_problem,
    check_outputs,
    file_name_problem,
    inside_folder,
    path_problem,
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


# -- only regular files are written; the job summary is appended to ---------------------------------


@pytest.fixture
def specials(tmp_path: Path) -> dict[str, Path]:
    """A FIFO, a socket, a link out of its folder and one beside its target, in tmp."""
    import socket

    os.mkfifo(tmp_path / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "stdout").symlink_to("/dev/stdout")
    (tmp_path / "out" / "outside").symlink_to(tmp_path / "elsewhere.json")
    (tmp_path / "out" / "real.json").write_text("{}")
    (tmp_path / "out" / "beside").symlink_to(tmp_path / "out" / "real.json")
    return {name: tmp_path / name for name in ("fifo", "sock")} | {
        name: tmp_path / "out" / name for name in ("stdout", "outside", "beside", "real.json")}


@pytest.mark.parametrize(("name", "problem"), [
    ("fifo", "is a FIFO (named pipe), not a regular file"), ("sock", "is a socket, not a regular file"),
    ("stdout", "is a symbolic link to "), ("outside", "is a symbolic link to "),
])
def test_an_output_that_is_no_regular_file_is_refused_naming_the_option(specials: dict[str, Path], name: str,
                                                                        problem: str) -> None:
    with pytest.raises(OutputError, match=f"--mllm-html={specials[name]}: {re.escape(problem)}"):
        check_outputs([Output("--mllm-html", specials[name])])
    with pytest.raises(OutputWriteError, match=re.escape(problem)):  # checked again when written
        write_atomically(specials[name], "x")
    assert specials[name].is_symlink() if name in ("stdout", "outside") else not specials[name].is_file()  # untouched


def test_a_device_is_never_replaced_and_regular_files_and_links_beside_them_are(specials: dict[str, Path]) -> None:
    assert path_problem(Path("/dev/null")) == "is a character device, not a regular file"
    with pytest.raises(OutputError, match="--mllm-json=/dev/null: is a character device"):
        check_outputs([Output("--mllm-json", Path("/dev/null"))])
    assert path_problem(specials["beside"]) is None and path_problem(specials["real.json"]) is None
    assert path_problem(specials["real.json"].parent / "new.json") is None


def test_the_job_summary_is_refused_when_it_is_an_input_an_output_or_no_regular_file(
        tmp_path: Path, specials: dict[str, Path]) -> None:
    inputs = _data(tmp_path)
    option = "$GITHUB_STEP_SUMMARY"
    assert "that is the data file of benchmark 'mine'" in append_problem(tmp_path / "data" / "b.jsonl", option, inputs)
    assert "that is inside the data folder" in append_problem(tmp_path / "data" / "new.md", option, inputs)
    assert "--mllm-json writes there too" in append_problem(
        tmp_path / "r.json", option, outputs=[Output("--mllm-json", tmp_path / "r.json")])
    assert "is a FIFO" in append_problem(specials["fifo"], option)
    assert "its folder" in append_problem(tmp_path / "missing" / "s.md", option)
    assert "cannot be appended to" in append_problem(Path("/proc/summary.md"), option)
    assert append_problem(tmp_path / "summary.md", option, inputs) is None
    assert not (tmp_path / "summary.md").exists()  # checking creates nothing


def test_an_append_is_whole_or_undone(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    append_atomically(summary, "## ours\n")
    assert summary.read_text() == "earlier step\n## ours\n"
    with file_size_limit(summary.stat().st_size + 10), pytest.raises(OutputWriteError, match="the file is as it was"):
        append_atomically(summary, "x" * 10_000, what="the job summary")
    assert summary.read_text() == "earlier step\n## ours\n"


def test_outputs_leave_out_a_job_summary_they_cannot_append_to_with_a_warning(tmp_path: Path) -> None:
    from pytest_mllm.report.outputs import Outputs

    outputs = Outputs(json_path=tmp_path / "r.json", markdown_path=tmp_path / "s.md", step_summary=tmp_path / "r.json")
    checked = outputs.check()
    assert checked.step_summary is None
    assert checked.step_summary_problem.startswith(f"$GITHUB_STEP_SUMMARY={tmp_path / 'r.json'}: --mllm-json writes")
    assert "the run and its other outputs are not affected" in checked.step_summary_problem
    written, warning = checked.write_summary("## summary")
    assert written == [("Markdown summary", tmp_path / "s.md")] and warning == checked.step_summary_problem
    (tmp_path / "job.md").write_text("before\n")
    written, warning = Outputs(step_summary=tmp_path / "job.md").check().write_summary("## summary")
    assert warning is None and (tmp_path / "job.md").read_text() == "before\n## summary\n"
