"""Dominance between columns: when copies of one column can replace another.

A column uses whole units of one or more resources (its *parts*) and offers
*supply* (larger is better: capacities), causes *load* (smaller is better:
traffic) and accepts *limits* (larger is better: a latency bound it
tolerates). Column y **dominates** column x when

    m copies of y fit in x part by part (every part of x a whole multiple m_k
    of y's, m = min m_k ≥ 1), and m·supply(y) ≥ supply(x), m·load(y) ≤ load(x),
    limit(y) ≥ limit(x), every component, within :data:`RTOL` (load also
    within :data:`LOAD_ATOL`).

Then m copies of y can stand in for x in any plan at no more units. Two
columns *tie* when they have the same units, the same supply within
:data:`RTOL` and the same limits; of tied columns only the one of lower
*rank* dominates (so exactly one of two identical columns survives).

:func:`undominated` drops every dominated column, visiting the columns in the
order given — callers put the strongest first (most supply per unit), so a few
survivors drop most of the rest — and keeps what visiting them one at a time
keeps: a column is dropped if a current survivor dominates it, else it drops
the survivors it dominates and joins them. The test of a block of columns
against the survivors is one array operation; :func:`dominates` is the
definition, one pair at a time (``tests/test_dominance.py`` checks the two agree).

Examples
--------
>>> import numpy as np
>>> cols = Columns.of(units=[[4], [1], [2]], supply=[[9.0], [2.0], [3.0]])
>>> undominated(cols)          # 2 copies of the 1-unit column beat the 2-unit one
[0, 1]
>>> rows = cols.rows()
>>> dominates(rows[1], rows[2]), dominates(rows[0], rows[1])
(True, False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from solvers.tolerances import REL_DOMINANCE

__all__ = ["BLOCK", "LOAD_ATOL", "RTOL", "Columns", "Row", "copies", "dominates", "undominated"]

#: Relative tolerance of "at least as much supply" and "no more load" (see :mod:`solvers.tolerances`).
RTOL = REL_DOMINANCE
#: Absolute tolerance of "no more load" (load units, e.g. bytes/s).
LOAD_ATOL = 1e-9
#: Columns tested against the survivors at once (most are dominated by survivors older than the block).
BLOCK = 64


def _matrix(rows, n: int, dtype) -> np.ndarray:
    a = np.asarray(rows, dtype=dtype)
    return a.reshape(n, -1) if a.size or n == 0 else np.zeros((n, 0), dtype=dtype)


@dataclass(frozen=True)
class Columns:
    """n columns as arrays: ``units`` (n, parts) ints, ``supply`` (n, q), ``load`` (n, r),
    ``limit`` (n, s) floats and ``rank`` (n,) ints."""

    units: np.ndarray
    supply: np.ndarray
    load: np.ndarray
    limit: np.ndarray
    rank: np.ndarray

    @classmethod
    def of(cls, units, supply, load=None, limit=None, rank=None) -> Columns:
        """Columns from row lists; no load or limits by default, rank = position."""
        n = len(units)
        return cls(
            units=_matrix(units, n, np.int64),
            supply=_matrix(supply, n, float),
            load=_matrix([] if load is None else load, n, float),
            limit=_matrix([] if limit is None else limit, n, float),
            rank=np.arange(n, dtype=np.int64) if rank is None else np.asarray(rank, dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.units)

    def row(self, i: int) -> Row:
        """Column ``i``'s numbers."""
        return Row(tuple(self.units[i].tolist()), tuple(self.supply[i].tolist()), tuple(self.load[i].tolist()),
                   tuple(self.limit[i].tolist()), int(self.rank[i]))

    def rows(self) -> list[Row]:
        """Every column's numbers."""
        return [Row(tuple(u), tuple(s), tuple(ld), tuple(k), r) for u, s, ld, k, r in
                zip(self.units.tolist(), self.supply.tolist(), self.load.tolist(), self.limit.tolist(),
                    self.rank.tolist(), strict=True)]


def copies(big: np.ndarray, small: np.ndarray) -> np.ndarray:
    """``out[i, j]``: copies of ``small[j]`` that fit in ``big[i]`` part by part (0 if a part does not divide).

    Examples
    --------
    >>> copies(np.array([[8, 4], [6, 4]]), np.array([[2, 2], [4, 4]])).tolist()
    [[2, 1], [2, 0]]
    """
    big, small = big[:, None, :], small[None, :, :]
    fit = (big % small == 0).all(axis=2)
    return np.where(fit, (big // small).min(axis=2), 0)


class Row(NamedTuple):
    """One column's numbers, as :class:`Columns` holds them in arrays."""

    units: tuple[int, ...]
    supply: tuple[float, ...]
    load: tuple[float, ...] = ()
    limit: tuple[float, ...] = ()
    rank: int = 0


def dominates(y: Row, x: Row) -> bool:
    """Whether column ``y`` dominates column ``x``: the definition, one pair at a time.

    Examples
    --------
    >>> dominates(Row(units=(1,), supply=(2.0,)), Row(units=(2,), supply=(3.0,)))
    True
    >>> a, b = Row((1,), (2.0,), rank=0), Row((1,), (2.0,), rank=1)   # a tie: the lower rank dominates
    >>> dominates(a, b), dominates(b, a)
    (True, False)
    """
    if len(x.units) != len(y.units):
        return False
    m = 0  # copies of y in x: the smallest ratio of whole multiples, part by part
    for ux, uy in zip(x.units, y.units):
        if ux % uy:
            return False
        m = ux // uy if m == 0 else min(m, ux // uy)
    for sx, sy in zip(x.supply, y.supply):
        if not m * sy >= sx * (1 - RTOL):
            return False
    for lx, ly in zip(x.load, y.load):
        if not m * ly <= lx * (1 + RTOL) + LOAD_ATOL:
            return False
    for kx, ky in zip(x.limit, y.limit):
        if not ky >= kx:
            return False
    tie = x.units == y.units and x.limit == y.limit and all(abs(sy - sx) <= RTOL * sx
                                                             for sx, sy in zip(x.supply, y.supply))
    return not tie or y.rank < x.rank


@dataclass(frozen=True)
class _Side:
    """Some columns' numbers as arrays: ``size`` indexes the table of copies, the rest as in :class:`Columns`."""

    size: np.ndarray
    supply: np.ndarray
    load: np.ndarray
    limit: np.ndarray
    rank: np.ndarray

    def take(self, idx) -> _Side:
        return _Side(self.size[idx], self.supply[idx], self.load[idx], self.limit[idx], self.rank[idx])

    @staticmethod
    def concat(a: _Side, b: _Side) -> _Side:
        return _Side(*(np.concatenate([u, v]) for u, v in zip(
            (a.size, a.supply, a.load, a.limit, a.rank), (b.size, b.supply, b.load, b.limit, b.rank), strict=True)))


def _dominates(table: np.ndarray, x: _Side, y: _Side) -> np.ndarray:
    """``out[j, i]``: column ``y[i]`` dominates column ``x[j]``; ``table[a, b]``: copies of size b in size a
    (as floats: m·supply is then one float product, as with the integer m).

    One (x × y) comparison per component, so one component costs what a
    scalar test would. Ties are looked for only where y beats x from a rank
    no lower than x's (only there does a tie matter): same size, supplies
    within RTOL, equal limits.
    """
    m = table[x.size[:, None], y.size[None, :]]
    better = m > 0
    for c in range(x.supply.shape[1]):
        better &= m * y.supply[:, c][None, :] >= (x.supply[:, c] * (1 - RTOL))[:, None]
    for c in range(x.load.shape[1]):
        better &= m * y.load[:, c][None, :] <= (x.load[:, c] * (1 + RTOL) + LOAD_ATOL)[:, None]
    for c in range(x.limit.shape[1]):
        better &= y.limit[:, c][None, :] >= x.limit[:, c][:, None]
    j, i = np.nonzero(better & (y.rank[None, :] >= x.rank[:, None]))
    if j.size:
        tie = x.size[j] == y.size[i]
        for c in range(x.supply.shape[1]):
            xs = x.supply[j, c]
            tie &= np.abs(y.supply[i, c] - xs) <= RTOL * xs
        for c in range(x.limit.shape[1]):
            tie &= y.limit[i, c] == x.limit[j, c]
        better[j[tie], i[tie]] = False
    return better


def undominated(cols: Columns, block: int = BLOCK) -> list[int]:
    """Indices of the columns no survivor dominates, visiting them in order (see the module docstring)."""
    n = len(cols)
    if n == 0:
        return []
    sizes, size_of = np.unique(cols.units, axis=0, return_inverse=True)
    table = copies(sizes, sizes).astype(float)
    every = _Side(size_of.reshape(-1), cols.supply, cols.load, cols.limit, cols.rank)
    survivors, frontier = np.zeros(0, dtype=np.int64), every.take(slice(0, 0))
    for start in range(0, n, block):
        end = min(start + block, n)
        part = every.take(slice(start, end))
        # Every test the visit below may ask, as three array operations: the block against the survivors
        # (both ways) and against itself (inner[j][a]: the block's a-th column dominates its j-th).
        hit = _dominates(table, part, frontier)
        hit_any = hit.any(axis=1).tolist()
        # Which survivors a column drops is asked only of the columns that join; a column no survivor
        # dominates almost always does, one dominated only by survivors this block drops is asked alone.
        free = [j for j in range(end - start) if not hit_any[j]]
        beaten = dict(zip(free, _dominates(table, frontier, part.take(free)).T, strict=True))
        inner = _dominates(table, part, part)
        alive = np.ones(len(survivors), dtype=bool)
        dropped = False  # whether a column of this block dropped a survivor (else hit_any is current)
        added = np.zeros(end - start, dtype=bool)
        for j in range(end - start):
            if hit_any[j] and (not dropped or (hit[j] & alive).any()):
                continue
            if (inner[j] & added).any():
                continue
            if j not in beaten:
                beaten[j] = _dominates(table, frontier, part.take([j]))[:, 0]
            if beaten[j].any():
                alive &= ~beaten[j]
                dropped = True
            added &= ~inner[:, j]
            added[j] = True
        added = np.flatnonzero(added)
        added_at = np.array(added, dtype=np.int64) + start
        survivors = np.concatenate([survivors[alive], added_at])
        frontier = _Side.concat(frontier.take(alive), every.take(added_at))
    return sorted(survivors.tolist())
