"""Exceptions and exit codes of the front door.

Every failure the CLI can meet maps to one exit code, documented in the README:

====  =====================================================================
0     success: a plan was found and passed the verifier
2     input error: the instance, plan or an option is malformed or unknown
3     infeasible: no plan meets the demand under the instance's limits
4     solver failure: backend missing, crashed, or time limit with no plan
5     verification failed: a plan breaks a constraint (``check``)
====  =====================================================================
"""

from __future__ import annotations

import re

__all__ = [
    "EXIT_INFEASIBLE",
    "EXIT_INPUT",
    "EXIT_OK",
    "EXIT_SOLVER",
    "EXIT_VERIFY",
    "InputError",
    "PlacementError",
    "SolverError",
    "VerificationError",
    "redact",
]

EXIT_OK = 0
EXIT_INPUT = 2
EXIT_INFEASIBLE = 3
EXIT_SOLVER = 4
EXIT_VERIFY = 5


class PlacementError(Exception):
    """Base class: every error the CLI turns into a message and an exit code."""

    exit_code = EXIT_INPUT


class InputError(PlacementError, ValueError):
    """Malformed input. The message names the file, the field and what was expected.

    Examples
    --------
    >>> str(InputError("expected a number > 0, got -3", file="a.yaml", field="workload.classes[0].rate_rps"))
    'a.yaml: workload.classes[0].rate_rps: expected a number > 0, got -3'
    """

    exit_code = EXIT_INPUT

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None):
        self.file, self.field, self.detail = file, field, message
        parts = [p for p in (file, field) if p]
        super().__init__(": ".join([*parts, message]))


class SolverError(PlacementError):
    exit_code = EXIT_SOLVER


class VerificationError(PlacementError):
    exit_code = EXIT_VERIFY


_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]+@")  # greedy: a password may hold "@"


def redact(text: str) -> str:
    """``text`` with the user-info of every URL (``user:password@``) replaced by ``***@``.

    Examples
    --------
    >>> redact("cannot reach Ray at ray://admin:S3CR3T-TOKEN@head:10001: refused")
    'cannot reach Ray at ray://***@head:10001: refused'
    >>> redact("ray://head:10001 and auto")
    'ray://head:10001 and auto'
    """
    return _USERINFO.sub(r"\g<scheme>***@", text)
