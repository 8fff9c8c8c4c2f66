"""Output paths, checked before any work and written safely: one policy for every file a run, a merge,
a comparison or a curation writes or appends to.

Before a run (or a merge, or a comparison) starts, every output path is resolved and refused when
it is one of the inputs (a data file, a spec, a baseline, a recording, a shard), an existing file
inside a benchmark's data folder (unless an earlier output of pytest-mllm), or the path of another
output; when it is anything but a regular file or a new path (a device such as /dev/null, a FIFO, a
socket, a folder, or a symbolic link leading out of its folder such as /dev/stdout); and its folder is
proven writable by creating and removing a probe file there (`os.access` says yes to root even on /proc).

Every output is written to a temporary file in its folder and renamed over the old one: a write
that fails (a full disk, a folder gone) is one `OutputWriteError`, and the previous file survives.
A file that is only appended to (GitHub's job summary) is checked the same way (`append_problem`),
and an append that fails is undone (`append_atomically`).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


class OutputError(ValueError):
    """An output path that cannot or must not be written; the message names the option and the fix."""


class OutputWriteError(RuntimeError):
    """Writing an output failed at the end of a run; the previous file, if any, is unchanged."""


@dataclass(frozen=True)
class Output:
    """One output: the option that names it, its path, and whether it is a folder of files."""

    option: str
    path: Path
    folder: bool = False
    suffix: str = ""  # the file's usual suffix, for an example path (default: --mllm-json's and --mllm-html's)


@dataclass(frozen=True)
class Input:
    """One input a run reads: what it is (for the message), its path, and whether it is a folder whose
    existing files are all inputs (a benchmark's data root)."""

    what: str
    path: Path
    folder: bool = False


def check_outputs(outputs: Sequence[Output], inputs: Iterable[Input] = ()) -> None:
    """OutputError unless each output is distinct from every input and every other output, and writable."""
    inputs = list(inputs)
    for n, output in enumerate(outputs):
        target = _resolved(output.path)
        for source in inputs:
            if _same(target, source.path):
                raise OutputError(f"{output.option}={output.path}: that is {source.what}; writing there would "
                                  "destroy it: give another path")
        for source in inputs:
            if (source.folder and not output.folder and target.is_file() and not _earlier_output(target)
                    and target.is_relative_to(_resolved(source.path))):
                raise OutputError(f"{output.option}={output.path}: that file is inside {source.what} "
                                  f"({source.path}); writing there would replace a data file: give a path outside it")
        for other in outputs[:n]:
            if _same(target, other.path):
                raise OutputError(f"{other.option} and {output.option} both name {output.path}: one would replace "
                                  "the other; give each its own path")
    for output in outputs:
        probe_writable(output)


def path_problem(path: Path) -> str | None:
    """Why an existing `path` must not be replaced by an output: it is no regular file (a device, a FIFO,
    a socket, a folder) or a symbolic link leading out of its folder; None for a regular file, a link to
    one beside it, or a path where nothing is."""
    path = Path(path).expanduser()
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # nothing there (the write reports a folder that is gone)
        return None
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        target = _resolved(path)
        if target.parent != _resolved(path.parent):
            return f"is a symbolic link to {target}, outside its folder"
        try:
            info = os.stat(path)
        except OSError:
            return None  # a dangling link beside its target: the output replaces the link
    kind = _KINDS.get(stat.S_IFMT(info.st_mode))
    return None if kind is None else f"is {kind}, not a regular file"


_KINDS = {stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFIFO: "a FIFO (named pipe)",
          stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}


def probe_writable(output: Output) -> None:
    """The output's folder exists (made now) and a file can be created and removed in it."""
    option, path = output.option, output.path
    if output.folder:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{option}={path}: a file is in the way; give a folder path (it is created)")
        folder = path
    else:
        if path.is_dir():
            raise OutputError(f"{option}={path}: is a folder; give a file path, e.g. {path / 'results'}"
                              f"{path.suffix or output.suffix or _SUFFIX.get(option, '')}")
        problem = path_problem(path)
        if problem is not None:
            raise OutputError(f"{option}={path}: {problem}; only a regular file (or a new path) is written: "
                              "give another path")
        folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{option}={path}: cannot create the folder {folder} ({exc.strerror or exc}); "
                          "give a path in a writable folder") from None
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".pytest-mllm-probe-")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(f"{option}={path}: the folder {folder} is not writable ({exc.strerror or exc}); "
                          "give a path in a writable folder") from None
    if path.exists() and not output.folder:
        try:
            with open(path, "ab"):
                pass
        except OSError as exc:
            raise OutputError(f"{option}={path}: the file exists and cannot be written "
                              f"({exc.strerror or exc}); give another path") from None


def write_atomically(path: Path, data: str | bytes, *, what: str = "") -> None:
    """Write `data` to a temporary file beside `path`, then rename it over `path`.

    OutputWriteError (naming `what`, the path and the reason) when any step fails; the temporary file
    is removed and an earlier file at `path` is left as it was.
    """
    # text is made well-formed where it enters (`echo.well_formed`); a lone surrogate that got past that
    # becomes "?" here rather than losing the file
    payload = data.encode("utf-8", "replace") if isinstance(data, str) else data
    path = Path(path)
    problem = path_problem(path)
    if problem is not None:
        raise OutputWriteError(f"cannot write {what + ' ' if what else ''}{path}: it {problem}; nothing was written")
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.chmod(temporary, _mode_for(path))
        os.replace(temporary, path)
    except OSError as exc:
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        kept = "the previous file is unchanged" if path.exists() else "nothing was written"
        raise OutputWriteError(f"cannot write {what + ' ' if what else ''}{path} "
                               f"({exc.strerror or exc}); {kept}") from None


def append_problem(path: Path, option: str, inputs: Iterable[Input] = (), outputs: Sequence[Output] = ()) -> str | None:
    """Why `text` cannot be appended to `path` (named by `option`, e.g. $GITHUB_STEP_SUMMARY): it is an input
    or another output, no regular file, its folder is missing or not writable, or the file cannot be
    written; None when it can. The folder is never created: a file appended to is the caller's."""
    path = Path(path).expanduser()
    inputs = list(inputs)
    for source in inputs:
        if _same(path, source.path):
            return f"{option}={path}: that is {source.what}; appending there would change it"
    for source in inputs:
        if source.folder and _resolved(path).is_relative_to(_resolved(source.path)):
            return f"{option}={path}: that is inside {source.what} ({source.path}); appending there would change it"
    for other in outputs:
        if _same(path, other.path) or (other.folder and _resolved(path).is_relative_to(_resolved(other.path))):
            return f"{option}={path}: {other.option} writes there too; give each its own path"
    problem = path_problem(path)
    if problem is not None:
        return f"{option}={path}: {problem}; only a regular file is appended to"
    if not path.parent.is_dir():
        return f"{option}={path}: its folder {path.parent} does not exist"
    try:
        if path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        else:
            handle, probe = tempfile.mkstemp(dir=path.parent, prefix=".pytest-mllm-probe-")
            os.close(handle)
            os.unlink(probe)
    except OSError as exc:
        return f"{option}={path}: cannot be appended to ({exc.strerror or exc})"
    return None


def append_atomically(path: Path, text: str, *, what: str = "") -> None:
    """Append `text` to the regular file at `path` (created if missing) all at once or not at all: a write
    that fails (a full disk) is cut back to the file's earlier end, and OutputWriteError names what failed."""
    payload = text.encode("utf-8", "replace")
    path = Path(path).expanduser()
    problem = path_problem(path)
    if problem is not None:
        raise OutputWriteError(f"cannot append to {what + ' ' if what else ''}{path}: it {problem}")
    try:
        handle = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    except OSError as exc:
        raise OutputWriteError(f"cannot append to {what + ' ' if what else ''}{path} ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise OutputWriteError(f"cannot append to {what + ' ' if what else ''}{path}: it is not a regular file")
        end = os.lseek(handle, 0, os.SEEK_END)
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(handle, view):]
        except OSError as exc:
            try:
                os.ftruncate(handle, end)
            except OSError:
                pass
            raise OutputWriteError(f"cannot append to {what + ' ' if what else ''}{path} ({exc.strerror or exc}); "
                                   "the file is as it was") from None
    finally:
        os.close(handle)


def _mode_for(path: Path) -> int:
    """The permissions of the file being replaced, else the default ones (0666 less the umask)."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _earlier_output(path: Path) -> bool:
    """Whether an existing file is one pytest-mllm wrote (a results JSON, an HTML report): a run may
    write it again even inside a data folder (a spec with `data: {root: .}` and its outputs beside it)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return False
    return b'"pytest_mllm"' in head or b"pytest-mllm" in head


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def _same(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same resolved path, or (hard links) the same inode."""
    if _resolved(a) == _resolved(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_SUFFIX = {"--mllm-json": ".json", "--mllm-html": ".html"}


def file_name_problem(name: str) -> str | None:
    """Why `name` (a task name, from data) cannot be one file name in a folder; None when it can."""
    if not name or name in (".", ".."):
        return "is empty, '.' or '..'"
    bad = sorted({c for c in name if c in "/\\\0" or not c.isprintable()})
    if bad:
        return f"holds {', '.join(repr(c) for c in bad)}, which a file name cannot"
    if len(name.encode("utf-8")) > _LONGEST_NAME:
        return f"is longer than {_LONGEST_NAME} bytes"
    return None


def path_component_problem(name: str) -> str | None:
    """Why `name` could not stay one path component (empty, '.', '..', a separator, NUL); None when it can.
    Looser than `file_name_problem`: whitespace and other characters real data holds (ScienceQA's
    categories end in a tab) are kept, and only a file actually written from them checks the rest."""
    if not name or name in (".", ".."):
        return "is empty, '.' or '..'"
    bad = sorted({c for c in name if c in "/\\\0"})
    return f"holds {', '.join(repr(c) for c in bad)}, which would leave its folder" if bad else None


def inside_folder(folder: Path, name: str) -> Path:
    """`folder / name` for a file name from data, checked to be one component that stays in `folder`."""
    problem = file_name_problem(name)
    target = folder / name
    if problem is None and _resolved(target).parent != _resolved(folder):
        problem = "leads outside the folder"
    if problem is not None:
        from pytest_mllm.echo import excerpt

        raise OutputError(f"file name {excerpt(name)} in {folder} {problem}")
    return target


_LONGEST_NAME = 200  # bytes; file systems allow 255, and a suffix is added
