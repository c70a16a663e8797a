"""The limits a whole solve runs under: a deadline and a memory ceiling, seen by every model build and solve.

:func:`bounded` sets them for a block (nested blocks keep the tighter of each); they live in context
variables, which :func:`solvers.backends.threads.threaded_map` hands to its workers. Inside:

* every solve's time limit is clipped to the time left (:func:`clip_time`), and a solve with no time
  left does not start; a model build checks the clock every few thousand variables and rows
  (:func:`tick`) and stops with :class:`OutOfTime`;
* a build that takes the process past the ceiling stops (:class:`OverMemory`, looked at with the clock);
  a model whose estimated size (:func:`model_bytes`) does not fit in the ceiling beside what the
  process already holds is not built (:func:`check_model_fits`, :class:`OverMemory`); a CBC child
  runs under ``RLIMIT_AS`` (:func:`child_address_space`), an in-process HiGHS solve is cancelled when
  the process's resident memory passes the ceiling (:func:`over_memory`).

The ceiling defaults to :data:`DEFAULT_MEMORY_SHARE` of the machine's memory (``MemTotal`` of
``/proc/meminfo``, a cgroup's ``memory.max`` if lower; :data:`FALLBACK_MEMORY_BYTES` where neither is
readable).

Examples
--------
>>> parse_size("8G"), parse_size("512M"), parse_size("1.5g"), parse_size("4096")
(8589934592, 536870912, 1610612736, 4096)
>>> parse_size("lots")
Traceback (most recent call last):
...
ValueError: expected a size such as 8G, 512M or 1048576 (bytes), got 'lots'
>>> seconds_left() is None
True
>>> with bounded(deadline=time.monotonic() + 60):
...     0 < clip_time(None) <= 60, clip_time(5.0)
(True, 5.0)
>>> with bounded(deadline=time.monotonic() - 1):
...     clip_time(5.0)
0.0
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
import re
import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = [
    "BYTES_PER_NONZERO",
    "DEFAULT_MEMORY_SHARE",
    "FALLBACK_MEMORY_BYTES",
    "MIN_CHILD_BYTES",
    "LimitExceeded",
    "OutOfTime",
    "OverMemory",
    "bounded",
    "check_model_fits",
    "check_time",
    "child_address_space",
    "clip_time",
    "default_memory_bytes",
    "memory_limit_bytes",
    "model_bytes",
    "over_memory",
    "parse_size",
    "resident_bytes",
    "seconds_left",
    "start_build",
    "tick",
]

#: Share of the machine's memory a solve may use by default (the rest: the system and other processes).
DEFAULT_MEMORY_SHARE = 0.8

#: The ceiling where the machine's memory cannot be read (8 GiB).
FALLBACK_MEMORY_BYTES = 8 * 2**30

#: Peak bytes per estimated constraint-matrix nonzero (:func:`solvers.variables.estimated_size`) of a model
#: built in PuLP and solved, by backend: the PuLP objects (a variable, its name and label, a dict entry per
#: coefficient) plus the solver's copies (CBC: the MPS file PuLP writes and CBC's own matrices, in its child;
#: HiGHS: its matrix and presolve, in this process). Measured as peak resident bytes per nonzero on the
#: benchmark models of 10^4 to 6·10^6 nonzeros: the largest ratio seen, rounded up (CBC 2,214, HiGHS 1,395
#: on the mixed 100-domain fleet). A small model's branch-and-bound tree can outgrow it; the ceiling's watch on
#: the running solvers (RLIMIT_AS, the HiGHS wait) covers that.
BYTES_PER_NONZERO = {"cbc": 2_300, "highs": 1_400}
_BYTES_PER_NONZERO_OTHER = 2_300  # another command-line solver: as CBC

#: The address space a CBC child is given at least: its binary and libraries map ~10 MB (under 8 MiB it
#: cannot start; at 16 MiB it solves the Mélange toy and runs out on spec-decode-draft's model).
MIN_CHILD_BYTES = 16 * 2**20

#: Variables and rows added between two looks at the clock during a model build.
_TICK = 4096

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("solve_deadline", default=None)
_memory: contextvars.ContextVar[int | None] = contextvars.ContextVar("solve_memory_bytes", default=None)
_ticks = itertools.count()
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


class LimitExceeded(Exception):
    """A solve's time or memory limit stops it (the message says which and by how much)."""


class OutOfTime(LimitExceeded):
    """The deadline passed while a model was being built."""


class OverMemory(LimitExceeded):
    """A model would not fit in the memory ceiling; it was not built."""


@contextmanager
def bounded(deadline: float | None = None, memory_bytes: int | None = None) -> Iterator[None]:
    """Within the block, solves end by ``deadline`` (``time.monotonic()``) and use at most ``memory_bytes``.

    A limit already in force that is tighter stays; ``None`` adds none.
    """
    tokens = []
    if deadline is not None:
        outer = _deadline.get()
        tokens.append((_deadline, _deadline.set(deadline if outer is None else min(outer, deadline))))
    if memory_bytes is not None:
        outer = _memory.get()
        tokens.append((_memory, _memory.set(memory_bytes if outer is None else min(outer, memory_bytes))))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def seconds_left() -> float | None:
    """Seconds to the deadline in force (negative once past), or ``None`` without one."""
    deadline = _deadline.get()
    return None if deadline is None else deadline - time.monotonic()


def clip_time(limit_s: float | None) -> float | None:
    """``limit_s`` cut to the time left before the deadline (never below 0); ``None``: no limit at all."""
    left = seconds_left()
    if left is None:
        return limit_s
    left = max(left, 0.0)
    return left if limit_s is None else min(limit_s, left)


def check_time(what: str) -> None:
    """Raise :class:`OutOfTime` if the deadline in force has passed (``what``: the work it stops)."""
    left = seconds_left()
    if left is not None and left <= 0:
        raise OutOfTime(f"the time limit ran out {what}")


def start_build() -> None:
    """A model build begins: its first look at the clock and memory comes after :data:`_TICK` keys, the same
    points in every build whatever ran before it in the process (a counter left over from earlier builds made
    a small model's pre-build size check race the build's own look at memory)."""
    global _ticks
    _ticks = itertools.count(1)


def tick() -> None:
    """Called once per key, variable or row built: every :data:`_TICK` calls, looks at the clock and at this
    process's resident memory (:class:`OutOfTime`, :class:`OverMemory` when past either)."""
    if next(_ticks) % _TICK:
        return
    check_time("while building the model")
    ceiling = over_memory()
    if ceiling is not None:
        raise OverMemory(f"building the model took this process past the memory limit of {_gb(ceiling)} "
                         "(--memory-limit); give a larger --memory-limit")


def parse_size(text: str) -> int:
    """Bytes of a size such as ``8G``, ``512M``, ``1.5GiB`` or ``1048576`` (binary units); ``ValueError`` else."""
    match = _SIZE.match(text or "")
    if match is None:
        raise ValueError(f"expected a size such as 8G, 512M or 1048576 (bytes), got {text!r}")
    number = float(match.group(1)) * _UNITS[match.group(2).lower()]
    if not math.isfinite(number) or number < 1:
        raise ValueError(f"expected a size of at least 1 byte, got {text!r}")
    return int(number)


def _meminfo_total(path: str = "/proc/meminfo") -> int | None:
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return None


def _cgroup_max(path: str = "/sys/fs/cgroup/memory.max") -> int | None:
    try:
        with open(path) as fh:
            text = fh.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def default_memory_bytes() -> int:
    """:data:`DEFAULT_MEMORY_SHARE` of the machine's memory (the lower of MemTotal and the cgroup's limit)."""
    known = [b for b in (_meminfo_total(), _cgroup_max()) if b]
    return int(DEFAULT_MEMORY_SHARE * min(known)) if known else FALLBACK_MEMORY_BYTES


def memory_limit_bytes() -> int:
    """The memory ceiling in force: the one :func:`bounded` set, else :func:`default_memory_bytes`."""
    limit = _memory.get()
    return default_memory_bytes() if limit is None else limit


def resident_bytes() -> int:
    """This process's resident memory now (``/proc/self/statm``; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def model_bytes(nonzeros: int, backend: str) -> int:
    """Estimated peak bytes of building and solving a model of ``nonzeros`` with ``backend``."""
    return int(nonzeros * BYTES_PER_NONZERO.get(backend, _BYTES_PER_NONZERO_OTHER))


def _gb(n: float) -> str:
    return f"{n / 2**30:.2f} GiB"


def check_model_fits(variables: int, nonzeros: int, backend: str) -> None:
    """Raise :class:`OverMemory` unless a model of ``nonzeros`` fits beside what this process holds.

    Examples
    --------
    >>> with bounded(memory_bytes=2**20):
    ...     check_model_fits(10**6, 10**7, "cbc")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    solvers.limits.OverMemory: the model (1,000,000 variables, ~10,000,000 nonzeros) would need an estimated 21.42 GiB...
    """
    need, held, limit = model_bytes(nonzeros, backend), resident_bytes(), memory_limit_bytes()
    if held + need > limit:
        raise OverMemory(
            f"the model ({variables:,} variables, ~{nonzeros:,} nonzeros) would need an estimated {_gb(need)} "
            f"beside the {_gb(held)} this process holds, over the memory limit of {_gb(limit)} (--memory-limit); "
            "not built: give a larger --memory-limit, or let the two-level path solve it (a smaller model)")


def child_address_space() -> int:
    """``RLIMIT_AS`` for a solver child: the ceiling less what this process holds, at least :data:`MIN_CHILD_BYTES`,
    and never above this process's own hard limit (which an unprivileged child cannot raise)."""
    space = max(memory_limit_bytes() - resident_bytes(), MIN_CHILD_BYTES)
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    return space if hard == resource.RLIM_INFINITY else min(space, hard)


def over_memory() -> int | None:
    """The ceiling if this process's resident memory is above it (an in-process solve should stop), else None."""
    limit = memory_limit_bytes()
    return limit if resident_bytes() > limit else None
