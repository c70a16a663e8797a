"""What-if instances: the ``PATH=VALUES`` grammar, setting any instance field by path, and
building and validating every point's instance **before any solve**.

:mod:`placement.studies.sweep` and :mod:`placement.studies.pareto` solve the points built here;
a bad path, an empty range or a wrong type fails at once, before any solver runs.

Paths
-----
As :mod:`placement.core.instance.paths` reads them (``workload.classes.chat.rate_rps``, ...).

Values
------
Right of ``=`` is one of::

    LO:HI:N        N evenly spaced values from LO to HI, both included  (10:100:10 -> 10, 20, ..., 100)
    LO:HI:N:log    N geometrically spaced values from LO to HI          (1:1000:4:log -> 1, 10, 100, 1000)
    LO:HI:logR     LO, LO·R, LO·R², ... up to HI (R > 1)                (10:1000:log10 -> 10, 100, 1000)
    v1,v2,...      the listed values: numbers, true/false, none, or words (e.g. chip or model names)
    v              one value

``N`` is a whole number ≥ 1; ``N = 1`` only when ``LO = HI``; ``LO = HI``
only when ``N = 1``; LO > HI gives a descending range; log ranges need
LO, HI > 0 (and LO ≤ HI for logR). Values are rounded to 12
significant digits and whole numbers are written as integers. Several
``--set`` options form a grid (every combination), the first varying slowest.

Examples
--------
>>> parse_values("10:100:4")
([10, 40, 70, 100], False)
>>> parse_values("10:1000:log10")
([10, 100, 1000], True)
>>> parse_values("1:8:4:log")
([1, 2, 4, 8], True)
>>> parse_values("h100,b200,none")
(['h100', 'b200', None], False)
>>> parse_values("5:1:0")
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: 5:1:0: empty range: expected N >= 1 points, got 0
"""

from __future__ import annotations

import copy
import math
import re
from dataclasses import dataclass
from itertools import product
from typing import Any

from placement.core.instance.errors import InputError
from placement.core.instance.paths import instance_document, set_path

__all__ = [
    "MAX_SOLVES",
    "Axis",
    "apply_overrides",
    "build_points",
    "instance_document",
    "parse_assignment",
    "parse_values",
    "price_warnings",
    "set_path",
]

#: More solves than this in one command is almost certainly a typo in a range.
MAX_SOLVES = 20_000

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"


# ---------------------------------------------------------------------------------------------
# values


def _tidy(v: float) -> int | float:
    """Round to 12 significant digits; whole numbers become ints."""
    if v == 0:
        return 0
    r = float(f"{v:.12g}")
    if r.is_integer() and abs(r) < 1e15:
        return int(r)
    return r


def _number(text: str, spec: str, what: str) -> float:
    if not re.fullmatch(_NUM, text.strip()):
        raise InputError(f"expected a number for {what}, got {text!r}", field=spec)
    v = float(text)
    if not math.isfinite(v):
        raise InputError(f"expected a finite number for {what}, got {text!r}", field=spec)
    return v


def _scalar(text: str) -> Any:
    t = text.strip()
    if t == "":
        raise ValueError("empty value")
    low = t.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    if re.fullmatch(_NUM, t):
        v = float(t)
        if not math.isfinite(v):
            raise ValueError(f"non-finite number {t!r}")
        return _tidy(v)
    return t


def parse_values(spec: str) -> tuple[list[Any], bool]:
    """The values of a range or list (see the module docstring); ``(values, log)``.

    Raises
    ------
    InputError
        Naming the spec, for malformed, empty or degenerate ranges.
    """
    s = spec.strip()
    if not s:
        raise InputError("empty value: expected LO:HI:N, LO:HI:N:log, LO:HI:logR, v1,v2,... or one value", field=spec)
    parts = s.split(":")
    if len(parts) == 1:
        items = s.split(",")
        try:
            return [_scalar(x) for x in items], False
        except ValueError as e:
            raise InputError(f"bad value list: {e}; expected v1,v2,...", field=spec) from None
    if len(parts) not in (3, 4):
        raise InputError("expected LO:HI:N, LO:HI:N:log or LO:HI:logR", field=spec)
    a = _number(parts[0], spec, "LO")
    b = _number(parts[1], spec, "HI")
    third = parts[2].strip()
    m = re.fullmatch(r"log(" + _NUM + r")", third)
    if len(parts) == 3 and m:
        ratio = float(m.group(1))
        if not ratio > 1 or not math.isfinite(ratio):
            raise InputError(f"expected a ratio R > 1 in logR, got {m.group(1)}", field=spec)
        if not 0 < a <= b:
            raise InputError(f"empty range: LO:HI:logR needs 0 < LO <= HI, got LO={a:g}, HI={b:g}", field=spec)
        out, k = [], 0
        while True:
            v = a * ratio**k
            if v > b * (1 + 1e-9):
                break
            out.append(_tidy(v))
            k += 1
            if k > MAX_SOLVES:
                raise InputError(f"more than {MAX_SOLVES} values", field=spec)
        return out, True
    if not re.fullmatch(r"\d+", third):
        raise InputError(f"expected a whole number of points N (or logR), got {third!r}", field=spec)
    n = int(third)
    log = False
    if len(parts) == 4:
        if parts[3].strip().lower() != "log":
            raise InputError(f"expected 'log' as the fourth part, got {parts[3]!r}", field=spec)
        log = True
    if n < 1:
        raise InputError(f"empty range: expected N >= 1 points, got {n}", field=spec)
    if n > MAX_SOLVES:
        raise InputError(f"expected at most {MAX_SOLVES} points, got {n}", field=spec)
    if n == 1 and a != b:
        raise InputError(f"one point from {a:g} to {b:g} is ambiguous: use N >= 2, or give one value", field=spec)
    if a == b and n > 1:
        raise InputError(f"empty range: LO = HI = {a:g} with N = {n} gives the same value {n} times", field=spec)
    if n == 1:
        return [_tidy(a)], log
    if log:
        if not (a > 0 and b > 0):
            raise InputError(f"a log range needs LO > 0 and HI > 0, got LO={a:g}, HI={b:g}", field=spec)
        la, lb = math.log(a), math.log(b)
        return [_tidy(math.exp(la + (lb - la) * i / (n - 1))) for i in range(n)], True
    return [_tidy(a + (b - a) * i / (n - 1)) for i in range(n)], False


def parse_assignment(text: str, option: str = "--set") -> tuple[str, list[Any], bool]:
    """``PATH=VALUES`` -> ``(path, values, log)``."""
    if "=" not in text:
        raise InputError(f"expected PATH=VALUES (e.g. workload.classes.chat.rate_rps=10:100:5), got {text!r}",
                         field=option)
    path, spec = text.split("=", 1)
    path = path.strip()
    if not path:
        raise InputError(f"empty path in {text!r}", field=option)
    try:
        values, log = parse_values(spec)
    except InputError as e:
        raise InputError(e.detail, field=f"{option} {text}") from None
    return path, values, log


@dataclass(frozen=True)
class Axis:
    """One swept quantity: its label, the paths it sets (all to the same value) and its values."""

    label: str
    paths: tuple[str, ...]
    values: tuple[Any, ...]
    log: bool = False
    spec: str = ""




def build_points(base: dict, axes: list[Axis], source: str) -> list[tuple[dict[str, Any], Any]]:
    """Every grid point's values and validated Instance — before any solve.

    Raises
    ------
    InputError
        Naming the path and value of the first point that is not a valid instance.
    """
    from placement.core.instance.context import Context
    from placement.core.instance.loading import parse_instance

    total = math.prod(len(a.values) for a in axes) if axes else 1
    if total > MAX_SOLVES:
        raise InputError(f"the grid has {total} points; expected at most {MAX_SOLVES} (check the ranges)",
                         field="--set")
    # Check every path once on the base document, so an unknown path fails before the grid is built.
    for a in axes:
        for p in a.paths:
            set_path(copy.deepcopy(base), p, a.values[0])
    out = []
    for combo in product(*[a.values for a in axes]):
        doc = copy.deepcopy(base)
        for a, v in zip(axes, combo):
            for p in a.paths:
                set_path(doc, p, v)
        where = ", ".join(f"{a.label}={v}" for a, v in zip(axes, combo))
        try:
            inst = parse_instance(doc, source=source)
            Context.of(inst, source)
        except InputError as e:
            raise InputError(f"with {where}: {e.detail}", file=source, field=e.field) from None
        out.append(({a.label: v for a, v in zip(axes, combo)}, inst))
    return out


def apply_overrides(inst, overrides: list[str], source: str, option: str = "--set"):
    """The instance with ``PATH=VALUE`` overrides (one value each) applied and validated
    (:func:`placement.core.instance.paths.with_changes`), and the values by path."""
    from placement.core.instance.paths import with_changes

    fixed: dict[str, Any] = {}
    for text in overrides:
        path, values, _ = parse_assignment(text, option=option)
        if len(values) != 1:
            raise InputError(f"expected one value (a fixed override), got {len(values)}; sweep SLOs with --sweep, "
                             "or use 'placement sweep' for a grid over any field", field=f"{option} {text}")
        fixed[path] = values[0]
    return with_changes(inst, fixed, source=source), fixed


def price_warnings(inst, axes: list[Axis]) -> list[str]:
    """Swept chip fields that the instance overrides or never uses."""
    out = []
    used = {d.chip for d in inst.hardware.domains}
    for a in axes:
        for p in a.paths:
            segs = p.split(".")
            if len(segs) >= 4 and segs[:2] == ["hardware", "chips"]:
                chip, fld = segs[2], segs[3]
                if chip not in used:
                    out.append(f"{p}: no domain group uses chip {chip!r}; the sweep cannot change the plan")
                if fld == "usd_per_hour":
                    for d in inst.hardware.domains:
                        if d.chip == chip and d.usd_per_hour_per_chip is not None:
                            out.append(f"{p}: domain group {d.name!r} sets usd_per_hour_per_chip, which overrides "
                                       f"the chip's price there; sweep hardware.domains.{d.name}."
                                       "usd_per_hour_per_chip instead")
    return out

