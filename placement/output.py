"""Writing outputs atomically, so no reader ever sees a half-written file.

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
import tempfile
from pathlib import Path

from placement.errors import InputError

__all__ = ["write_atomic", "write_bytes_atomic"]


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write to a temporary file in the same folder, then rename over ``path``."""
    p = Path(path)
    if p.parent and not p.parent.exists():
        raise InputError(f"folder {p.parent} does not exist", file=str(p))
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", dir=p.parent or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, p)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))
