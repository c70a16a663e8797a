"""The one error wrapper of the command line: every failure becomes a message on stderr and an
exit code (those of :mod:`placement.core.errors`), never a traceback.

Messages are printed verbatim — no rich markup, no emoji codes — because they quote the user's
input, and a sweep spec such as ``5:100:20`` must not turn into a picture.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import typer

from placement.core.errors import PlacementError

__all__ = ["guarded"]


def _print_error(label: str, message: str) -> None:
    from rich.text import Text

    from placement.cli.consoles import err

    err.print(Text.assemble((label, "red"), *((" ", message) if message else ())), highlight=False,
              soft_wrap=True)


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a command: :class:`PlacementError` → its message and exit code; anything else → exit 1.

    Examples
    --------
    >>> from placement.core.errors import InputError
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
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except PlacementError as e:
            _print_error("error:", str(e))
            raise typer.Exit(e.exit_code) from None
        except KeyboardInterrupt:
            _print_error("interrupted", "")
            raise typer.Exit(130) from None
        except Exception as e:  # noqa: BLE001 - the CLI never shows a traceback
            _print_error("internal error:", f"{type(e).__name__}: {e}")
            raise typer.Exit(1) from None

    return wrapper
