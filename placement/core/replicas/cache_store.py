"""A private folder of authenticated files: what the on-disk candidate cache reads and writes.

A cache folder is a place another user (or a program running as one) might
reach: a file planted there, a symbolic link, an entry edited to drop a column.
So every entry carries an HMAC-SHA256 of its name and content under a secret
key of the folder, and an entry is read only when

* the folder is a real folder (not a symbolic link) owned by this user and
  writable by no one else (it is created 0700);
* the key file ``hmac.key`` is a regular file owned by this user that no one
  else may read or write (0600, 32 random bytes, made on first use: written to
  a new file opened ``O_CREAT | O_EXCL | O_NOFOLLOW`` and linked into place,
  so two processes starting at once agree on one key);
* the entry is a regular file owned by this user, writable by no one else, not
  a symbolic link (opened ``O_NOFOLLOW``), and its MAC is right.

Files are opened relative to the folder's descriptor, so the folder checked is
the folder used. An entry is written to a new temporary file in the folder (0600,
``O_EXCL | O_NOFOLLOW``) and renamed over the entry's name: a reader sees the
whole file or none, and a symbolic link planted at the name is replaced, never
followed. A folder that fails its checks is not used; an entry that fails them
is not read. Either way a :class:`CacheWarning` says why, and the caller
carries on without it — a bad cache never stops a solve.

An entry is ``placement-cache 1 hmac-sha256 <64 hex digits>\\n`` followed by
its content; the MAC covers the entry's name, a newline and the content.

Examples
--------
>>> import tempfile, warnings
>>> from pathlib import Path
>>> root = Path(tempfile.mkdtemp())
>>> with open_folder(root / "cache") as folder:
...     folder.write("a.json.gz", b"some bytes")
...     folder.read("a.json.gz"), folder.read("b.json.gz")
(b'some bytes', None)
>>> forged = b"placement-cache 1 hmac-sha256 " + b"0" * 64 + b"\\nother bytes"
>>> _ = (root / "cache" / "a.json.gz").write_bytes(forged)
>>> with warnings.catch_warnings(record=True) as caught, open_folder(root / "cache") as folder:
...     warnings.simplefilter("always")
...     folder.read("a.json.gz"), "its MAC is wrong" in str(caught[0].message)
(None, True)
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import re
import secrets
import stat
import warnings
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

__all__ = ["KEY_FILE", "CacheWarning", "Folder", "open_folder"]

#: The folder's secret key, beside its entries.
KEY_FILE = "hmac.key"

_KEY_BYTES = 32
_HEADER = b"placement-cache 1 hmac-sha256 "
_HEADER_BYTES = len(_HEADER) + 2 * hashlib.sha256().digest_size + 1  # the hex MAC and its newline
#: An entry's name: letters, digits and ``.-_``, not starting with a dot (temporary files and the key do).
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
#: How an entry or the key is opened: never through a link, and without waiting for a writer (a FIFO
#: planted there would block a plain open forever; it then fails the regular-file check).
_READ = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC


class CacheWarning(UserWarning):
    """A cache folder or entry that is not used, and why (the command carries on without it)."""


def _warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=3)


class Folder:
    """A checked cache folder, open as a descriptor; see the module docstring."""

    def __init__(self, path: Path, fd: int, key: bytes) -> None:
        self.path, self._fd, self._key = path, fd, key

    def read(self, name: str) -> bytes | None:
        """The content of entry ``name``; None when there is none, or (with a :class:`CacheWarning`) when
        it fails a check."""
        _check_name(name)
        try:
            fd = os.open(name, _READ, dir_fd=self._fd)
        except FileNotFoundError:
            return None
        except OSError as e:
            return self.refuse(name, "it is a symbolic link" if e.errno == errno.ELOOP
                               else f"it cannot be opened ({e.strerror})")
        try:
            why = _unsafe(os.fstat(fd))
            if why:
                return self.refuse(name, why)
            with os.fdopen(fd, "rb", closefd=False) as f:
                data = f.read()
        except OSError as e:
            return self.refuse(name, f"it cannot be read ({e.strerror})")
        finally:
            os.close(fd)
        header, content = data[:_HEADER_BYTES], data[_HEADER_BYTES:]
        if not (header.startswith(_HEADER) and header.endswith(b"\n")):
            return self.refuse(name, "it is not a placement cache entry")
        if not hmac.compare_digest(header[len(_HEADER):-1], self._mac(name, content).encode()):
            return self.refuse(name, "its MAC is wrong (written without this folder's key, or changed since)")
        return content

    def write(self, name: str, content: bytes) -> None:
        """Make ``content`` entry ``name`` (replacing one there); a failure is a :class:`CacheWarning`."""
        _check_name(name)
        tmp = f".{name}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
        try:
            _create(self._fd, tmp, _HEADER + self._mac(name, content).encode() + b"\n" + content)
            os.replace(tmp, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
        except OSError as e:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=self._fd)
            _warn(f"candidate cache entry {self.path / name} is not written: {e.strerror or e}")

    def refuse(self, name: str, why: str) -> None:
        """Warn that entry ``name`` is not used because of ``why``; None (the entry is not read)."""
        _warn(f"candidate cache entry {self.path / name} is not used: {why}; generating again")

    def _mac(self, name: str, content: bytes) -> str:
        return hmac.new(self._key, name.encode() + b"\n" + content, hashlib.sha256).hexdigest()

    def close(self) -> None:
        os.close(self._fd)


@contextmanager
def open_folder(path: Path) -> Iterator[Folder | None]:
    """The cache folder at ``path`` (made 0700 if absent), checked, with its key; None (and a
    :class:`CacheWarning`) when it cannot be used."""
    folder = _open(Path(path))
    try:
        yield folder
    finally:
        if folder is not None:
            folder.close()


def _open(path: Path) -> Folder | None:
    def refuse(why: str) -> None:
        _warn(f"candidate cache folder {path} is not used: {why}; candidates are generated without it")

    if not hasattr(os, "O_NOFOLLOW") or os.open not in os.supports_dir_fd:
        return refuse("this platform cannot open files without following symbolic links")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as e:
        return refuse(f"it cannot be made ({e.strerror or e})")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC)
    except OSError as e:
        return refuse({errno.ELOOP: "it is a symbolic link (give the folder it points to)",
                       errno.ENOTDIR: "it is not a folder"}.get(e.errno, f"it cannot be opened ({e.strerror})"))
    try:
        why = _unsafe(os.fstat(fd), folder=True)
        key = None if why else _key(fd)
        if isinstance(key, str):
            why, key = f"its key {path / KEY_FILE}: {key}", None
    except OSError as e:
        why = f"its key {path / KEY_FILE} cannot be made or read ({e.strerror or e})"
    if why:
        os.close(fd)
        return refuse(why)
    return Folder(path, fd, key)


def _key(fd: int) -> bytes | str:
    """The folder's key, made if absent; or why it cannot be used."""
    try:
        key_fd = os.open(KEY_FILE, _READ, dir_fd=fd)
    except FileNotFoundError:
        tmp = f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(8)}.tmp"
        _create(fd, tmp, secrets.token_bytes(_KEY_BYTES))
        try:
            os.link(tmp, KEY_FILE, src_dir_fd=fd, dst_dir_fd=fd, follow_symlinks=False)
        except FileExistsError:
            pass  # another process made it first: use its key
        finally:
            os.unlink(tmp, dir_fd=fd)
        key_fd = os.open(KEY_FILE, _READ, dir_fd=fd)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "it is a symbolic link"
        raise
    try:
        why = _unsafe(os.fstat(key_fd), secret=True)
        key = os.read(key_fd, _KEY_BYTES + 1)
    finally:
        os.close(key_fd)
    if why:
        return why
    return key if len(key) == _KEY_BYTES else f"it holds {len(key)} bytes, expected {_KEY_BYTES}"


def _create(fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to a new file ``name`` (0600) of folder ``fd``; no link followed, none replaced."""
    out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o600, dir_fd=fd)
    try:
        with os.fdopen(out, "wb", closefd=False) as f:
            f.write(data)
    except BaseException:
        os.close(out)
        with suppress(OSError):
            os.unlink(name, dir_fd=fd)
        raise
    os.close(out)


def _unsafe(st: os.stat_result, folder: bool = False, secret: bool = False) -> str | None:
    """Why a regular file (or a folder) of this status must not be trusted; None if it may.

    Owned by this user, and writable by no one else — nor readable, for a ``secret`` (the key: who can
    read it can forge entries).
    """
    if not (stat.S_ISDIR if folder else stat.S_ISREG)(st.st_mode):
        return "it is not a folder" if folder else "it is not a regular file"
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {os.geteuid()})"
    others, may = (0o077, "read or write") if secret else (0o022, "write")
    if st.st_mode & others:
        return f"its mode is {stat.S_IMODE(st.st_mode):04o}: group or others may {may} it"
    return None


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name):
        raise ValueError(f"not a cache entry name: {name!r}")
