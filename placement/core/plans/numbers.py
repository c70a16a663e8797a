"""Numbers as people read them: the one formatter of every table, note, chart label and report.

:func:`num` gives a value to a few significant digits with thousands separators, never in exponent
notation between 10⁻⁴ and 10¹⁵ (``7,990``, not ``7.99e+03``; ``33.3``, not ``33.3333333333``), and
a whole number from ``10**digits`` up, never fewer digits than it has; :func:`usd` gives dollars to
the cent; :func:`value` gives a swept or changed field's value (a number by :func:`num`, anything
else as written).

Examples
--------
>>> num(7990.2), num(8000.0), num(33.3333333333), num(0.05), num(12345.6), num(None)
('7,990', '8,000', '33.3', '0.05', '12,346', '-')
>>> num(999.7), num(0.0), num(-1234.5), num(3.0504, 2), num(2.5e-6), num(float("inf"))
('1,000', '0', '-1,234', '3.1', '2.5e-06', 'inf')
>>> num(9.96e-09, floor=0.01), num(0.0, floor=0.01), num(12.345, floor=0.01)
('<0.01', '0', '12.3')
>>> usd(1234.5), usd(None), value(33.3333333333), value(1024), value("h100"), value(True)
('1,234.50', '-', '33.33', '1,024', 'h100', 'True')
"""

from __future__ import annotations

import math

__all__ = ["num", "usd", "value"]


def num(x: float | None, digits: int = 3, *, none: str = "-", floor: float | None = None) -> str:
    """``x`` to ``digits`` significant digits, thousands separated, trailing zeros dropped.

    ``none`` stands for a missing value; with ``floor``, a positive value below it reads ``<floor``
    (a wait that all but never happens).
    """
    if x is None:
        return none
    x = float(x)
    if x == 0 or not math.isfinite(x):
        return f"{x:g}".replace("-0", "0")
    if floor is not None and 0 < x < floor:
        return f"<{floor:g}"
    if abs(x) < 1e-4 or abs(x) >= 1e15:
        return f"{x:.{digits}g}"
    decimals = max(digits - 1 - math.floor(math.log10(abs(x))), 0)
    if abs(round(x, decimals)) >= 10**digits:
        return f"{x:,.0f}"
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def usd(x: float | None, none: str = "-") -> str:
    """Dollars to the cent, thousands separated (``1,234.50``)."""
    return none if x is None else f"{x:,.2f}"


def value(v: object) -> str:
    """A field's value as set by a sweep or a change: numbers to four significant digits (integers whole,
    thousands separated), anything else as written."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    return num(v, 4)
