"""Private temporary directories for solver files, and removal of those a killed ``placement`` left.

A command-line solver reads its model from, and writes its solution into, files
(PuLP's MPS, solution and log files). :func:`scratch_dir` makes a directory for
them and removes it afterwards, even on failure or a signal turned into an
exception. SIGKILL cannot be caught: its directory stays (its CBC child dies
with it, :mod:`solvers.backends.watchdog`). So each directory holds a lock
file, ``flock``-ed for as long as its solve runs — the kernel drops the lock
when the process dies, however it dies, and the lock works across PID
namespaces, unlike a PID in the name — and every new scratch directory first
removes the directories of the same prefix whose lock is free.

The lock file is created under a temporary name, locked, then renamed into
place, so a directory whose lock file exists is always either locked or
abandoned.

Examples
--------
>>> import os, tempfile
>>> parent = tempfile.mkdtemp()
>>> with scratch_dir(parent) as tmp:
...     sorted(os.listdir(tmp))
['.lock']
>>> os.listdir(parent)
[]
>>> os.rmdir(parent)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PREFIX", "remove_abandoned", "scratch_dir"]

#: Name prefix of every scratch directory (in TMPDIR unless told otherwise).
PREFIX = "placement-solve-"
_LOCK = ".lock"


def remove_abandoned(parent: str | None = None) -> list[str]:
    """Remove this user's scratch directories under ``parent`` whose lock no process holds; their paths.

    A directory without a lock file (one being made, or an older layout) is left alone.
    """
    removed = []
    for path in sorted(Path(parent or tempfile.gettempdir()).glob(PREFIX + "*")):
        try:
            if path.is_symlink() or path.stat().st_uid != os.getuid():
                continue
            fd = os.open(path / _LOCK, os.O_RDWR | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its solve is running
            os.close(fd)
            continue
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
        removed.append(str(path))
    return removed


@contextlib.contextmanager
def scratch_dir(parent: str | None = None) -> Iterator[str]:
    """A fresh directory (its lock held) for one solve's files; removed on exit, with any abandoned ones."""
    remove_abandoned(parent)
    tmp = tempfile.mkdtemp(prefix=PREFIX, dir=parent)
    fd = -1
    try:
        staging = os.path.join(tmp, _LOCK + ".new")
        fd = os.open(staging, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(staging, os.path.join(tmp, _LOCK))
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if fd >= 0:
            os.close(fd)
