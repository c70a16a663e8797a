"""The one error wrapper of the command line: every failure becomes a message on stderr and an
exit code (those of :mod:`placement.core.instance.errors`), never a traceback.

Warnings the core gives as :class:`~placement.core.replicas.cache_store.CacheWarning` (a cache folder or
entry not used) are printed as the other warnings of the command line are: ``warning: …`` on stderr.

Messages are printed verbatim — no rich markup, no emoji codes — because they quote the user's
input, and a sweep spec such as ``5:100:20`` must not turn into a picture — except for URL
credentials (``ray://user:token@host``), which are replaced by ``***``.

SIGTERM and SIGHUP become a :class:`Terminated` exception (SIGINT is already
``KeyboardInterrupt``), so the stack unwinds: a CBC child is killed with its
process group, an in-process HiGHS solve is cancelled, temporary model files are
removed; the command then exits with 128 + the signal number.
"""

import errno
import functools
import os
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import typer

from placement.core.instance.errors import EXIT_SOLVER, PlacementError, redact

__all__ = ["Terminated", "guarded", "redact"]

#: Errors of writing an output (a full device, a closed pipe, a quota): the user's environment, exit 2.
_OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EPIPE, errno.EIO, errno.EFBIG})


class Terminated(BaseException):
    """SIGTERM or SIGHUP received; a BaseException so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


@contextmanager
def _signals_unwind() -> Iterator[None]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    wanted = [s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, _raise_terminated) for s in wanted}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _print_error(label: str, message: str) -> None:
    from rich.text import Text

    from placement.cli.consoles import err

    err.print(Text.assemble((label, "red"), *((" ", redact(message)) if message else ())), highlight=False,
              soft_wrap=True)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's flush at exit cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


@contextmanager
def _cache_warnings_on_stderr() -> Iterator[None]:
    """Within the block, a :class:`CacheWarning` is a ``warning:`` line on stderr; any other warning as before."""
    from placement.core.replicas.cache_store import CacheWarning

    previous = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, CacheWarning):
            from placement.cli.consoles import warn

            warn(redact(str(message)))
        else:
            previous(message, category, filename, lineno, file, line)

    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = previous


def _over_limit(e: Exception) -> bool:
    """Whether ``e`` is a solve's time or memory limit stopping it outside a solve (exit 4, like a solve's)."""
    limits = sys.modules.get("solvers.limits")  # loaded by whatever could raise it
    return limits is not None and isinstance(e, limits.LimitExceeded)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command: :class:`PlacementError` → its message and exit code; anything else → exit 1.

    Examples
    --------
    >>> from placement.core.instance.errors import InputError
    >>> def bad():
    ...     raise InputError("expected seconds > 0, got -1", field="--time-limit")
    >>> try:
    ...     guarded(bad)()
    ... except typer.Exit as e:
    ...     e.exit_code
    2
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with _signals_unwind(), _cache_warnings_on_stderr():
                return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except Terminated as e:
            _print_error("terminated", f"by signal {e.signum}")
            raise typer.Exit(128 + e.signum) from None
        except PlacementError as e:
            _print_error("error:", str(e))
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            _print_error("interrupted", "")
            raise typer.Exit(128 + signal.SIGINT) from None
        except MemoryError:
            _print_error("error:", "out of memory; give a larger --memory-limit or free memory on the machine")
            raise typer.Exit(EXIT_SOLVER) from None
        except OSError as e:
            if e.errno not in _OUTPUT_ERRNOS:
                _print_error("internal error:", f"{type(e).__name__}: {e}")
                raise typer.Exit(1) from None
            _silence_stdout()
            _print_error("error:", f"cannot write the output: {e.strerror or e}")
            raise typer.Exit(2) from None
        except Exception as e:  # noqa: BLE001 - the CLI never shows a traceback
            if _over_limit(e):
                _print_error("error:", str(e))
                raise typer.Exit(EXIT_SOLVER) from None
            _print_error("internal error:", f"{type(e).__name__}: {e}")
            raise typer.Exit(1) from None

    return wrapper
