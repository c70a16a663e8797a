"""The batch of a configuration: the integer batch of largest capacity that meets the class's SLOs.

Candidate generation evaluates each configuration on its mode's coarse grid
of batches (powers of two, :data:`placement.modes.layouts.BATCHES`);
:func:`best_batch` then finds the best integer batch. For every kind the
feasible batches form an interval up to some B_max (TPOT, TTFT and memory
grow with the batch; the cost model's aggregated step can be slower at batch
1–2 than at 3, so that interval may start above 1) and capacity is
quasi-concave over them — increasing for the decode kinds
(B / (output·TPOT(B)), TPOT growing at most linearly in B), and for
aggregated the minimum of a decreasing prefill and an increasing decode
capacity. So the best batch lies between the best grid batch's two
neighbours, and a search over that bracket — about :data:`REFINE_POINTS`
evenly spaced batches, then every batch between the neighbours of the best
of them — finds it exactly (checked against every integer batch for every
configuration of the shipped instances, ``tests/test_batch_choice.py``). A
configuration whose feasible batches all fall between two grid batches is
still missed.

:func:`capacity_bound` bounds what the search can find without running it.
Every kind's capacity is at most k·B / (output·TPOT(B)) — equal for the
decode kinds, k the sequences per batch slot (``dp`` attention groups of an
attention–FFN replica, else 1), and below it for aggregated, whose capacity
is the smaller of that and its prefill capacity. With k the largest ratio
capacity·output·TPOT / B on the grid and TPOT nondecreasing in B (checked on
the grid), a batch in [b_{i-1}, b_{i+1}] serves at most
k·max(b_{i+1} / (output·TPOT(b_i)), b_i / (output·TPOT(b_{i-1}))).
Candidate generation skips the search where even that bound is dominated.

:func:`best_batches` runs the searches of many configurations of a class
together, each round's lattices in one
:func:`~placement.core.replicas.evaluate.evaluate_many` call: the same batches and
results as one :func:`best_batch` per configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from placement.core.replicas.evaluate import Perf, PoolConfig, evaluate_many

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = ["REFINE_POINTS", "best_batch", "best_batches", "best_index", "capacity_bound", "perf_at"]

#: About how many batches the first round of the search evaluates (:func:`best_batch`).
REFINE_POINTS = 64
#: Relative slack of the checks behind :func:`capacity_bound` (floating-point rounding of B / (output·TPOT)).
_RTOL = 1e-9


def best_index(perf: Perf, ok: np.ndarray) -> int | None:
    """Index of the feasible batch of largest capacity (ties: the last, the largest batch); None if none.

    Examples
    --------
    >>> z = np.zeros(3)
    >>> perf = Perf(np.array([1.0, 3.0, 3.0]), z, z, np.ones(3, dtype=bool), z, z)
    >>> best_index(perf, np.array([True, True, True])), best_index(perf, np.zeros(3, dtype=bool))
    (2, None)
    """
    if not ok.any():
        return None
    cap = np.where(ok, np.asarray(perf.capacity_rps, dtype=float), -np.inf)
    return int(np.flatnonzero(cap >= cap.max())[-1])


def perf_at(perf: Perf, i: int) -> Perf:
    """The scalars of ``perf`` at index ``i``."""
    return Perf(*(np.asarray(getattr(perf, f.name))[i] for f in fields(Perf)))


def _bracket(batches: np.ndarray, i: int) -> tuple[int, int]:
    """Indices of the neighbours of grid batch ``i`` (itself at an end of the grid)."""
    return max(i - 1, 0), min(i + 1, len(batches) - 1)


def capacity_bound(perf: Perf, ok: np.ndarray, batches: np.ndarray, output_tokens: float) -> float:
    """Most capacity :func:`best_batch` can find for this grid evaluation (see the module notes; inf when
    TPOT does not grow with the batch on the grid).

    Examples
    --------
    >>> b = np.array([1.0, 2.0, 4.0]); tpot = np.array([0.01, 0.011, 0.013])
    >>> perf = Perf(b / (100 * tpot), np.zeros(3), tpot, np.ones(3, dtype=bool), np.zeros(3), np.zeros(3))
    >>> round(capacity_bound(perf, np.array([True, True, False]), b, 100), 3)   # 4 / (100 · 0.011)
    3.636
    """
    i = best_index(perf, ok)
    if i is None:
        return 0.0
    tpot = np.asarray(perf.tpot_s, dtype=float)
    if (tpot <= 0).any() or (np.diff(tpot) < 0).any():
        return float("inf")
    k = float((np.asarray(perf.capacity_rps) * output_tokens * tpot / batches).max())
    lo, hi = _bracket(batches, i)
    most = max(batches[hi] / (output_tokens * tpot[i]), batches[i] / (output_tokens * tpot[lo]))
    return float(k * most * (1 + _RTOL))


def best_batch(ctx: Context, cfg: PoolConfig, cls: TrafficClass, batches: np.ndarray, perf: Perf, ok: np.ndarray,
               pair_latency_s: float = 0.0, memo: dict | None = None) -> tuple[int, Perf, int] | None:
    """The integer batch of largest capacity meeting ``cls``'s SLOs, searched around the best of ``batches``.

    ``perf``/``ok`` are the evaluation of ``cfg`` over the sorted grid
    ``batches``. Two rounds on fixed lattices: the multiples of a power-of-two
    spacing (about :data:`REFINE_POINTS` of them) between the best grid
    batch's neighbours, then every batch between the neighbours of the best
    of those. Configurations with the same best batches search the same
    batches, so ``memo`` shares their cost-model results (the halves of
    attention–FFN replicas). Batches stay multiples of ``cfg.micro_batches``
    (a micro-batched replica splits its batch evenly) and inside the grid's
    range. Returns ``(batch, perf at it, batches evaluated)``, or None when
    no grid batch is feasible.

    Examples
    --------
    >>> from pathlib import Path
    >>> import placement
    >>> from placement.core.instance.context import Context
    >>> from placement.core.replicas.evaluate import evaluate
    >>> from placement.core.instance.loading import load_instance
    >>> from placement.core.modes.enabled import configurations
    >>> ctx = Context.of(load_instance(Path(placement.__file__).parent / "instances/mixed-fleet.yaml"))
    >>> cls = ctx.instance.workload.classes[0]
    >>> grid = next(g for g, _ in configurations(ctx, cls, {}) if g.config.kind == "decode")
    >>> perf = evaluate(ctx, grid.config, cls, batch=grid.batches)
    >>> b, at, n = best_batch(ctx, grid.config, cls, grid.batches, perf, perf.ok(cls))
    >>> bool(at.ok(cls)) and bool(b >= grid.batches[perf.ok(cls)].max())
    True
    """
    return best_batches(ctx, cls, [(cfg, batches, perf, ok)], pair_latency_s, memo)[0]


@dataclass
class _Bracket:
    """One configuration's search between rounds: the batches left to search and the best so far."""

    cfg: PoolConfig
    lo: int
    hi: int
    best_b: int
    best_perf: Perf
    lattices: list[int]
    evaluated: int = 0


def best_batches(ctx: Context, cls: TrafficClass, searches: list[tuple[PoolConfig, np.ndarray, Perf, np.ndarray]],
                 pair_latency_s: float = 0.0, memo: dict | None = None) -> list[tuple[int, Perf, int] | None]:
    """:func:`best_batch` of every ``(cfg, batches, perf, ok)`` of ``searches``, bit for bit: each round's
    lattices of all of them evaluated together (:func:`~placement.core.replicas.evaluate.evaluate_many`: one
    broadcast per kind and chip where the kind has one)."""
    out: list[tuple[int, Perf, int] | None] = [None] * len(searches)
    live: dict[int, _Bracket] = {}
    for n, (cfg, batches, perf, ok) in enumerate(searches):
        i = best_index(perf, ok)
        if i is None:
            continue
        step = max(int(cfg.micro_batches), 1)
        lo, hi = (int(batches[k]) for k in _bracket(batches, i))
        out[n] = (int(batches[i]), perf_at(perf, i), 0)
        on_grid = set(batches.tolist())
        if all(x in on_grid for x in range(-(-lo // step) * step, hi + 1, step)):  # the grid holds the bracket
            continue
        spacing = step * 2 ** max(int(np.floor(np.log2(max(hi - lo, 1) / (step * REFINE_POINTS)))), 0)
        # A coarser lattice, then every multiple of step.
        live[n] = _Bracket(cfg, lo, hi, out[n][0], out[n][1], list(dict.fromkeys((spacing, step))))
    for r in range(2):
        points: dict[int, np.ndarray] = {}
        for n, s in live.items():
            if r < len(s.lattices):
                h = s.lattices[r]
                pts = np.arange(-(-s.lo // h), s.hi // h + 1, dtype=float) * h
                if len(pts):
                    points[n] = pts
        live = {n: live[n] for n in points}
        subs = evaluate_many(ctx, [live[n].cfg for n in points], cls, list(points.values()), pair_latency_s, memo)
        for (n, pts), sub in zip(points.items(), subs, strict=True):
            s = live[n]
            s.evaluated += len(pts)
            j = best_index(sub, sub.ok(cls))
            if j is None:  # no feasible batch on the lattice: the search ends with what it has
                del live[n]
            else:
                if sub.capacity_rps[j] > s.best_perf.capacity_rps or (
                        sub.capacity_rps[j] == s.best_perf.capacity_rps and pts[j] > s.best_b):
                    s.best_b, s.best_perf = int(pts[j]), perf_at(sub, j)
                s.lo, s.hi = int(pts[max(j - 1, 0)]), int(pts[min(j + 1, len(pts) - 1)])
            out[n] = (s.best_b, s.best_perf, s.evaluated)
    return out
