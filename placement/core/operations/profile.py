"""Demand profiles for ``placement schedule``: periods, their rates and their prices.

Profile CSV: a header with ``period``, ``class``, ``rate_rps`` and optionally
``hours`` (default 1), ``price_factor`` (the period's on-demand prices are the
instance's times this, default 1) and ``usd_per_hour:CHIP`` columns (chip
CHIP's on-demand $/h per chip in the period, over ``price_factor``; a spot
price, say). One row per period and class; periods in order of first
appearance; a class not listed in a period keeps the instance's rate; the
period-wide columns may be left blank on all but one row of the period (two
different values in one period are an error); lines starting with ``#`` are
comments.

Examples
--------
>>> import io
>>> periods = read_profile(io.StringIO("period,class,rate_rps\\nnight,chat,10\\nday,chat,40\\n"))
>>> [(p.name, p.hours, p.rates) for p in periods]
[('night', 1.0, {'chat': 10.0}), ('day', 1.0, {'chat': 40.0})]
>>> spot = read_profile(io.StringIO("period,class,rate_rps,price_factor,usd_per_hour:a10g\\n"
...                                 "day,chat,40,1.2,\\nnight,chat,10,,0.5\\n"))
>>> [(p.name, p.price_factor, p.chip_usd_per_hour) for p in spot]
[('day', 1.2, {}), ('night', 1.0, {'a10g': 0.5})]
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from placement.core.instance.errors import InputError
from placement.core.instance.schema import Instance

__all__ = ["CHIP_PRICE_PREFIX", "MAX_PERIODS", "PERIOD_HOURS_RANGE", "Period", "read_profile", "with_rates"]

#: Prefix of the profile columns that set one chip's on-demand $/h per chip in a period.
CHIP_PRICE_PREFIX = "usd_per_hour:"

#: Most periods a profile may have: every period copies each variable and row of the placement MILP
#: (a week at 15-minute periods is 672).
MAX_PERIODS = 1_000

#: Hours one period may last (3.6 s to a leap year); the objective weighs a period's $/h by its hours.
PERIOD_HOURS_RANGE = (1e-3, 8_784.0)

#: Largest profile file read (bytes), as for instance files.
MAX_PROFILE_BYTES = 20_000_000


@dataclass(frozen=True)
class Period:
    """One period of a profile: its name, length, the rates (req/s) it sets and its on-demand prices."""

    name: str
    hours: float
    rates: dict[str, float]
    price_factor: float = 1.0
    chip_usd_per_hour: dict[str, float] = field(default_factory=dict)


def _number(row: dict, column: str, name: str, line: int, default: float | None) -> float | None:
    text = (row.get(column) or "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"expected a number in {column}, got {text!r}", file=name, field=f"row {line}") from None
    if not (math.isfinite(value) and value >= 0):
        raise InputError(f"expected a finite {column} >= 0, got {text}", file=name, field=f"row {line}")
    return value


def _set_once(p: dict, key: str, value: float | None, period: str, name: str, line: int) -> None:
    """A period-wide value: the first row that gives it sets it; a different one later is an error."""
    if value is None:
        return
    if key in p and p[key] != value:
        raise InputError(f"{key} of period {period!r} is {p[key]:g} on an earlier row, {value:g} here",
                         file=name, field=f"row {line}")
    p[key] = value


def read_profile(source: str | Path | TextIO) -> list[Period]:
    """Periods from a profile CSV (module docstring); errors name the file, row and column."""
    name = getattr(source, "name", str(source))
    if isinstance(source, str | Path):
        from placement.core.instance.loading import read_bounded

        try:
            text = read_bounded(source, MAX_PROFILE_BYTES).decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"cannot read the profile as UTF-8 text: {e}", file=str(source)) from None
        source = io.StringIO(text)
    rows = list(csv.DictReader(line for line in source if not line.lstrip().startswith("#")))
    need = {"period", "class", "rate_rps"}
    if not rows or not need <= set(rows[0]):
        raise InputError(f"expected a header with {', '.join(sorted(need))} (and optionally hours, price_factor, "
                         f"{CHIP_PRICE_PREFIX}CHIP)", file=name)
    chip_columns = [c for c in rows[0] if c and c.startswith(CHIP_PRICE_PREFIX)]
    periods: dict[str, dict] = {}
    for line, row in enumerate(rows, start=2):
        rate = _number(row, "rate_rps", name, line, None)
        hours = _number(row, "hours", name, line, 1.0)
        lo, hi = PERIOD_HOURS_RANGE
        if rate is None or not lo <= hours <= hi:
            raise InputError(f"expected rate_rps >= 0 and hours between {lo:g} and {hi:g}", file=name,
                             field=f"row {line}")
        period = row["period"]
        if period not in periods and len(periods) == MAX_PERIODS:
            raise InputError(f"more than {MAX_PERIODS:,} periods; expected at most {MAX_PERIODS:,}", file=name,
                             field=f"row {line}")
        p = periods.setdefault(period, {"rates": {}, "chips": {}})
        _set_once(p, "hours", hours, period, name, line)
        _set_once(p, "price_factor", _number(row, "price_factor", name, line, None), period, name, line)
        for column in chip_columns:
            _set_once(p["chips"], column, _number(row, column, name, line, None), period, name, line)
        p["rates"][row["class"]] = rate
    return [Period(n, p["hours"], p["rates"], p.get("price_factor", 1.0),
                   {c.removeprefix(CHIP_PRICE_PREFIX): v for c, v in p["chips"].items()})
            for n, p in periods.items()]


def with_rates(instance: Instance, rates: dict[str, float]) -> Instance:
    """``instance`` with the classes named in ``rates`` at those rates (InputError for an unknown class)."""
    known = {c.name for c in instance.workload.classes}
    unknown = sorted(set(rates) - known)
    if unknown:
        raise InputError(f"unknown class {unknown[0]!r}; the instance has {', '.join(sorted(known))}", field="class")
    classes = [c.model_copy(update={"rate_rps": rates.get(c.name, c.rate_rps)}) for c in instance.workload.classes]
    return instance.model_copy(update={"workload": instance.workload.model_copy(update={"classes": classes})})
