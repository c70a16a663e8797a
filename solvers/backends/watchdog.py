"""Running a solver binary under a watchdog: its own process group, a wall-clock deadline, no orphans.

CBC checks its ``-sec`` limit only between phases (never inside the root LP), so
a 1 s limit can run for minutes. :func:`run_watched` starts the binary in a new
session (its own process group, so a signal meant for ``placement``'s terminal
does not reach it twice and the group can be killed as one), asks the kernel to
kill it if ``placement`` dies (``PR_SET_PDEATHSIG``, Linux), bounds its address space if asked
(``RLIMIT_AS``), and at the deadline
sends SIGINT — CBC stops its search and writes the best incumbent — then, if it
has not exited :data:`KILL_GRACE_S` later, SIGKILL to the whole group. Any
exception while waiting (a signal turned into one by the CLI, Ctrl-C) kills the
group before it propagates.

Examples
--------
>>> previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # children: SIGINT default
>>> run_watched(["true"], None, deadline_s=5.0)
Watched(returncode=0, interrupted=False, killed=False)
>>> run_watched(["sleep", "60"], None, deadline_s=0.5)  # stops at SIGINT
Watched(returncode=-2, interrupted=True, killed=False)
>>> _ = signal.signal(signal.SIGINT, signal.SIG_IGN)  # the child inherits "ignore SIGINT"
>>> run_watched(["sleep", "60"], None, deadline_s=0.5)  # deaf to SIGINT: killed
Watched(returncode=-9, interrupted=True, killed=True)
>>> _ = signal.signal(signal.SIGINT, previous)
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

from solvers.backends.threads import cancellable

__all__ = ["KILL_GRACE_S", "Watched", "kill_group", "run_watched"]

#: Seconds between SIGINT at the deadline and SIGKILL of the group (CBC writes its solution in well under that).
KILL_GRACE_S = 1.0
_POLL_S = 0.05
_PR_SET_PDEATHSIG = 1


def _load_prctl():
    # Resolved once in the parent, so that the child (between fork and exec) only makes the call.
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _load_prctl()


@dataclass(frozen=True)
class Watched:
    """How a watched run ended: its return code, whether the deadline interrupted it, whether it was killed."""

    returncode: int
    interrupted: bool
    killed: bool


def _child_setup(address_space_bytes: int | None):
    """What the child runs between fork and exec: die with ``placement``; at most ``address_space_bytes``."""

    def setup() -> None:  # pragma: no cover - runs in the child
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGKILL))
        if address_space_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (address_space_bytes, address_space_bytes))

    return setup


def kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    """Send ``sig`` to the process group ``proc`` leads (started with ``start_new_session``); no error if gone."""
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run_watched(args: list[str], output: IO | int | None, deadline_s: float | None,
                address_space_bytes: int | None = None) -> Watched:
    """Run ``args`` (stdout and stderr to ``output``) and wait, enforcing ``deadline_s`` seconds of wall clock.

    ``address_space_bytes``, if given, is the child's ``RLIMIT_AS``: an allocation past it fails in the
    child (CBC then aborts), never the kernel's OOM killer on the machine. Raises whatever interrupted the
    wait (after killing the group and reaping the child).
    """
    proc = subprocess.Popen(args, stdout=output, stderr=output, stdin=subprocess.DEVNULL,
                            # two system calls, no locks taken: safe in a threaded parent
                            start_new_session=True, preexec_fn=_child_setup(address_space_bytes))  # noqa: PLW1509
    began = time.monotonic()
    interrupted = killed = False
    try:
        with cancellable(lambda: kill_group(proc, signal.SIGKILL)):  # by the threaded_map this thread works for
            while True:
                try:
                    code = proc.wait(timeout=_POLL_S)
                    break
                except subprocess.TimeoutExpired:
                    pass
                spent = time.monotonic() - began
                if deadline_s is None:
                    continue
                if not interrupted and spent >= deadline_s:
                    kill_group(proc, signal.SIGINT)
                    interrupted = True
                elif interrupted and not killed and spent >= deadline_s + KILL_GRACE_S:
                    kill_group(proc, signal.SIGKILL)
                    killed = True
    except BaseException:
        kill_group(proc, signal.SIGKILL)
        _reap(proc)
        raise
    return Watched(code, interrupted, killed)


def _reap(proc: subprocess.Popen) -> None:
    """Wait for ``proc``, killed, without :meth:`subprocess.Popen.wait`: an exception raised just after that
    method took its internal lock (a signal handled between its ``acquire`` and its ``try``) leaves the lock held,
    and every later ``wait()`` blocks for good."""
    if proc.returncode is not None:
        return
    try:
        _, status = os.waitpid(proc.pid, 0)
    except ChildProcessError:  # reaped by the interrupted wait(), which had no time to record it
        proc.returncode = -signal.SIGKILL
        return
    proc.returncode = os.waitstatus_to_exitcode(status)
