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
import stat
import sys
import tempfile
from pathlib import Path

from placement.core.errors import InputError

__all__ = ["STDOUT", "check_writable", "write_atomic", "write_bytes_atomic"]

#: The output path that means standard output.
STDOUT = "-"


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it; done once, at import (single-threaded)
    os.umask(mask)
    return mask


#: mkstemp creates 0600 files; a plan should get the mode any other new file would (or keep the old one's).
_NEW_FILE_MODE = 0o666 & ~_read_umask()


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
        if out is None:
            sys.stdout.write(data.decode("utf-8"))
        else:
            out.write(data)
        sys.stdout.flush()
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
