"""Writing outputs atomically, so no reader ever sees a half-written file.

``-`` means standard output. A target that exists and is not a regular file
(a device such as ``/dev/null``, a pipe, ``/dev/stdout``, a ``/proc`` link) is
written in place — renaming a file over it would replace the device or link
itself. A symbolic link to a regular file keeps its link: the file it points to
is replaced.

Examples
--------
>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "plan.json"
>>> write_atomic(p, "{}")
>>> p.read_text()
'{}'
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from placement.core.instance.errors import InputError

__all__ = ["STDOUT", "check_writable", "refuse_inputs", "write_atomic", "write_bytes_atomic", "write_folder_atomic"]

#: The output path that means standard output.
STDOUT = "-"


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it; done once, at import (single-threaded)
    os.umask(mask)
    return mask


_UMASK = _read_umask()
#: mkstemp creates 0600 files; a plan should get the mode any other new file would (or keep the old one's).
_NEW_FILE_MODE = 0o666 & ~_UMASK
#: Mode of a new folder or executable file (mkdtemp creates 0700 folders).
_NEW_EXEC_MODE = 0o777 & ~_UMASK


def check_writable(path: str | Path) -> None:
    """Fail early (before a long solve) if ``path`` cannot be written: missing folder, a folder itself."""
    if str(path) == STDOUT:
        return
    p = Path(path)
    if _special(p):
        return
    if p.parent and not p.parent.is_dir():
        what = "does not exist" if not p.parent.exists() else "is not a folder"
        raise InputError(f"folder {p.parent} {what}", file=str(p))
    if p.is_dir():
        raise InputError("is a directory; expected a file path", file=str(p))


def _identity(path: str | Path) -> tuple[int, int] | None:
    """(device, inode) of what ``path`` names, following links; None if it does not exist."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def refuse_inputs(outputs: dict[str, str | Path | None], inputs: list[str | Path]) -> None:
    """Raise :class:`InputError` naming the option when an output is one of the run's input files.

    ``outputs`` maps option names (``"--json"``) to paths; the same file reached through another
    spelling, a symbolic link or a hard link counts (same device and inode). Standard output and
    devices (``/dev/null`` twice is harmless) are not compared.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> inst = pathlib.Path(tempfile.mkdtemp()) / "x.yaml"
    >>> _ = inst.write_text("name: x")
    >>> refuse_inputs({"--json": inst.parent / "plan.json", "--csv": None}, [inst])
    >>> refuse_inputs({"--json": inst.parent / "." / "x.yaml"}, [inst])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --json: .../x.yaml is an input of this run (...x.yaml); refusing to overwrite it
    """
    known = {}
    for path in inputs:
        ident = _identity(path)
        if ident is not None and not _special(Path(path)):
            known[ident] = str(path)
    for option, path in outputs.items():
        if path is None or str(path) == STDOUT:
            continue
        ident = _identity(path)
        if ident in known:
            raise InputError(f"{path} is an input of this run ({known[ident]}); refusing to overwrite it",
                             field=option)


def _special(p: Path) -> bool:
    """Whether ``p`` exists (following links) and is neither a regular file nor a folder."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_in_place(p: Path, data: bytes) -> None:
    try:
        with open(p, "wb") as f:
            f.write(data)
    except OSError as e:
        raise InputError(f"cannot write here: {e.strerror or e}", file=str(p)) from None


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over ``path``.

    ``-`` writes to standard output; a device, pipe or other special file is
    written in place; a link to a regular file has its target replaced.
    """
    if str(path) == STDOUT:
        out = getattr(sys.stdout, "buffer", None)
        try:
            if out is None:
                sys.stdout.write(data.decode("utf-8"))
            else:
                out.write(data)
            sys.stdout.flush()
        except OSError as e:  # a full device or a closed pipe behind standard output
            raise InputError(f"cannot write to standard output: {e.strerror or e}", file=STDOUT) from None
        return
    p = Path(path)
    if _special(p):
        _write_in_place(p, data)
        return
    if p.is_symlink():
        p = Path(os.path.realpath(p))
    if p.parent and not p.parent.exists():
        raise InputError(f"folder {p.parent} does not exist", file=str(p))
    if p.is_dir():
        raise InputError("is a directory; expected a file path", file=str(p))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent or ".")
    except OSError as e:
        raise InputError(f"cannot write here: {e.strerror or e}", file=str(p)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                mode = stat.S_IMODE(p.stat().st_mode)
            except OSError:
                mode = _NEW_FILE_MODE
            os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the rename must not land before the bytes do
        os.replace(tmp, p)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"cannot write here: {e.strerror or e}", file=str(p)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def _cannot(p: Path, e: OSError, field: str | None) -> InputError:
    return InputError(f"cannot write here: {e.strerror or e}", file=str(p), field=field)


def _refuse_foreign(p: Path, owned: Callable[[str], bool], field: str | None) -> None:
    """Refuse to replace ``p`` unless every entry in it is a regular file or folder ``owned`` accepts."""
    for root, dirs, names in os.walk(p):
        for name in dirs + names:
            full = Path(root) / name
            rel = full.relative_to(p).as_posix()
            ok = owned(rel + "/") if full.is_dir() else full.is_file() and owned(rel)
            if full.is_symlink() or not ok:
                raise InputError(f"holds {rel!r}, which is not a file written here; refusing to replace the folder "
                                 "(give a new or empty folder, or move it away)", file=str(p), field=field)


def _fill(folder: Path, files: Mapping[str, str], executable: Iterable[str]) -> None:
    """Write every file, each flushed to disk before the folder is renamed into place."""
    run = set(executable)
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as f:
            os.fchmod(f.fileno(), _NEW_EXEC_MODE if rel in run else _NEW_FILE_MODE)
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())


def write_folder_atomic(path: str | Path, files: Mapping[str, str], *, owned: Callable[[str], bool],
                        executable: Iterable[str] = (), field: str | None = None) -> None:
    """Write ``files`` (relative path -> text) as the folder ``path``, all at once.

    The files are written into a new folder beside ``path`` (the same file system), each flushed
    to disk, then that folder is renamed to ``path``: no reader sees a half-written folder, and a
    failure (a full disk) leaves nothing behind but the error. An existing ``path`` is replaced
    only when everything in it is a file or folder ``owned`` accepts (given its relative path, a
    folder's ending in ``/``: one this command writes): the old
    folder is renamed aside once the new one is complete, the new one renamed into place, then the
    old one removed — no stale file of an earlier run survives, and should the process die between
    the two renames the old folder is kept beside, as ``.NAME.old-…``. Errors name ``field``.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "deploy"
    >>> ours = {"a.yaml", "sub/", "sub/b.yaml"}.__contains__
    >>> write_folder_atomic(out, {"a.yaml": "a", "sub/b.yaml": "b"}, owned=ours)
    >>> write_folder_atomic(out, {"a.yaml": "new"}, owned=ours)
    >>> sorted(p.name for p in out.rglob("*")), (out / "a.yaml").read_text()
    (['a.yaml'], 'new')
    """
    p = Path(path)
    if p.is_symlink():
        raise InputError("is a symbolic link; expected the folder itself", file=str(p), field=field)
    if p.exists():
        if not p.is_dir():
            raise InputError("exists and is not a folder; expected a folder path", file=str(p), field=field)
        _refuse_foreign(p, owned, field)
    parent = p.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        fresh = Path(tempfile.mkdtemp(prefix=f".{p.name}.new-", dir=parent))
    except OSError as e:
        raise _cannot(p, e, field) from None
    held: Path | None = None
    try:
        os.chmod(fresh, _NEW_EXEC_MODE)
        _fill(fresh, files, executable)
        if p.exists():
            held = Path(tempfile.mkdtemp(prefix=f".{p.name}.old-", dir=parent))
            os.replace(p, held)  # onto the empty folder just made: POSIX rename replaces an empty folder
        try:
            os.replace(fresh, p)
        except OSError:
            if held is not None:
                os.replace(held, p)
                held = None
            raise
    except OSError as e:
        shutil.rmtree(fresh, ignore_errors=True)
        raise _cannot(p, e, field) from None
    except BaseException:
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    if held is not None:
        shutil.rmtree(held, ignore_errors=True)
