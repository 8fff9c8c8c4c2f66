"""Output paths, checked before any work and written safely.

Before a run (or a merge, or a comparison) starts, every output path is resolved and refused when
it is one of the inputs (a data file, a spec, a baseline, a recording, a shard), an existing file
inside a benchmark's data folder (unless an earlier output of pytest-mllm), or the path of another
output; and its folder is proven writable
by creating and removing a probe file there (`os.access` says yes to root even on /proc).

Every output is written to a temporary file in its folder and renamed over the old one: a write
that fails (a full disk, a folder gone) is one `OutputWriteError`, and the previous file survives.
"""

from __future__ import annotations

import os
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
                              f"{path.suffix or _SUFFIX.get(option, '')}")
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
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path = Path(path)
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


_SUFFIX = {"--mllm-json": ".json", "--mllm-html": ".html", "--mllm-vrp-radar": ".png"}


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
