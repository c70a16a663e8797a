"""Queueing in front of a replica: waits, their tails, and the highest arrival rate that meets a budget.

Three servers appear in LLM serving, all fed by Poisson arrivals (rate λ):

* **M/D/1** — one server, deterministic service S, one request at a time
  (:func:`md1_wait_s`, :func:`md1_max_utilisation`).
* **Bulk service M/D^(1,b)/1** — a prefill replica that, whenever it is free,
  starts a step on up to ``b`` waiting prompts (all of them if fewer), one
  step per interval I (a pipeline of ``pp`` stages admits a step every
  I = step/pp). Every step is charged the full-batch interval I (a partial
  batch is no slower than a full one), so the model is conservative
  (:func:`bulk_wait_s`, :func:`bulk_max_rate_per_s`).
* **M/D/c** — ``c`` slots each held for a deterministic time H: the B batch
  slots of a decode replica, each held for output_tokens·TPOT
  (:func:`slot_wait_s`, :func:`slot_max_rate_per_s`).

A wait is either its mean (``tail=None``) or the value it exceeds with
probability at most ``tail`` (a p90 wait: ``tail=0.1``).

Varying lengths. When requests differ in length, service and hold times
vary with squared coefficient of variation v = Var/mean² (0: deterministic).
A bulk step's residual is E[I²]/(2E[I]) = (1 + v)·I/2, so the mean bound's
u·I becomes (1 + v)·u·I — Pollaczek–Khinchine's M/G/1 for b = 1. The slot
mean interpolates the two exact ends in v, Lee and Longton's M/G/c form::

    W(v) = (1 − v)·W_M/D/c + v·W_M/M/c

and both tails stretch their time scale by max(1, (1 + v)/2), the
heavy-traffic (Kingman) decay: unchanged for v ≤ 1, where the M/M forms
already dominate.

Bulk service, the bound. A prompt arriving to find q prompts waiting and the
server busy with residual R leaves in the ⌊q/b⌋+1-th step after the current
one, so W ≤ R + (q/b)·I. By PASTA and Little (E[q] = λ·E[W]) and
E[R] = P(busy)·I/2 with P(busy) ≤ u = min(1, λI)::

    E[W] ≤ u·I / (2(1 − ρ)),      ρ = λI/b < 1

exact for b = 1 (Pollaczek–Khinchine, u = ρ). The tail uses the exponential
form with the M/M/1 decay rate (service I treated as exponential, which
dominates the deterministic one)::

    P(W > t) ≈ u·exp(−(1 − ρ)·t/I)

which is M/M/1's exactly for b = 1; ``tests/test_queueing.py`` checks both
against a discrete-event simulation.

Slots, the Erlang-C model. With a = λH offered load and ρ = a/c, the M/M/c
probability of waiting is Erlang's C(c, a) and::

    P(W > t) = C·exp(−c(1 − ρ)·t/H)                       (M/M/c, exact)
    E[W] ≈ ½·C·H/(c(1 − ρ))·[1 + (1−ρ)(c−1)(√(4+5c) − 2)/(16ρc)]

the mean is Cosmetatos's approximation for deterministic holds (exact for
c = 1); the tail keeps the M/M/c form, conservative for deterministic holds.
The highest rate is found on a grid of utilisations (steps of
:data:`UTILISATION_STEP`, rounding down), which keeps it deterministic and
cheap: Erlang C of each slot count is computed once.

Examples
--------
>>> round(md1_max_utilisation(0.5, 1.0), 3)       # M/D/1: ρ ≤ 2(T−S)/(2T−S)
0.667
>>> round(float(bulk_wait_s(1.0, 1, 0.5)), 3)     # b = 1 is M/D/1: ρS/(2(1−ρ))
0.5
>>> float(bulk_max_rate_per_s(1.0, 4, 1.0))   # four prompts a step, always busy: b(1 − I/2R)/I
2.0
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from costmodels.arrays import as_result

__all__ = [
    "UTILISATION_STEP",
    "bulk_max_rate_per_s",
    "bulk_wait_s",
    "erlang_c",
    "md1_max_utilisation",
    "md1_wait_s",
    "slot_max_rate_per_s",
    "slot_wait_s",
]

#: Resolution of the utilisation grid on which slot capacities are found (rounded down).
UTILISATION_STEP = 1.0 / 2000
#: Series terms of the Poisson tail in :func:`erlang_c` (ρ < 1 needs at most ~√(74c) + 37/(1 − ρ)) and its relative tolerance.
_ERLANG_MAX_TERMS = 100_000
_ERLANG_TOLERANCE = 1e-17
_UTILISATION_GRID = np.arange(0.0, 1.0, UTILISATION_STEP)
_BISECTION_STEPS = 60
#: Queries per point a table of slot waits answers before it is sorted (:class:`_WaitTable`).
_SORT_QUERIES_PER_POINT = 1.0


# ---- M/D/1 -----------------------------------------------------------------------


def md1_wait_s(service_s, utilisation):
    """Mean wait in an M/D/1 queue (Pollaczek–Khinchine, deterministic service): ρ·S / (2(1 − ρ))."""
    s = np.asarray(service_s, dtype=float)
    rho = np.asarray(utilisation, dtype=float)
    with np.errstate(divide="ignore"):
        return as_result(np.where(rho < 1, rho * s / (2.0 * (1.0 - rho)), np.inf))


def md1_max_utilisation(service_s, slo_s):
    """Highest utilisation ρ of an M/D/1 server whose mean wait + service meets the SLO.

    Poisson arrivals, one server with deterministic service time S (a replica
    processing a fixed-size step), mean response W + S ≤ T with
    W = ρS/(2(1−ρ))::

        ρ ≤ 2(T − S) / (2T − S),     0 when S ≥ T,   → 1 as T → ∞

    Examples
    --------
    >>> md1_max_utilisation(1.0, 1.0)
    0.0
    >>> round(md1_max_utilisation(1.0, 1e9), 6)
    1.0
    """
    s = np.asarray(service_s, dtype=float)
    t = np.asarray(slo_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(s < t, 2.0 * (t - s) / (2.0 * t - s), 0.0)
    return as_result(np.clip(rho, 0.0, 1.0))


# ---- bulk service: a batched prefill replica ------------------------------------------


def bulk_wait_s(interval_s, batch, rate_per_s, tail=None, squared_cv=0.0):
    """Wait before a prompt's step starts, one server taking up to ``batch`` prompts per ``interval_s``.

    ``tail=None``: the mean bound (1 + v)·u·I/(2(1 − ρ)); else the wait exceeded with
    probability ``tail``: s·I·max(0, ln(u/tail))/(1 − ρ), s = max(1, (1 + v)/2). u = min(1, λI),
    ρ = λI/b, v = ``squared_cv`` of a step's time (module docstring); ∞ when ρ ≥ 1.

    Examples
    --------
    >>> round(float(bulk_wait_s(1.0, 1, 0.5, tail=0.1)), 3)   # M/M/1 p90: 2·ln 5
    3.219
    >>> float(bulk_wait_s(1.0, 8, 0.05, tail=0.1))           # rarely busy: the p90 wait is 0
    0.0
    >>> round(float(bulk_wait_s(1.0, 1, 0.5, squared_cv=1.0)), 3)   # M/M/1: ρS/(1 − ρ)
    1.0
    """
    i = np.asarray(interval_s, dtype=float)
    x = np.asarray(rate_per_s, dtype=float) * i
    rho = x / np.asarray(batch, dtype=float)
    u = np.minimum(x, 1.0)
    v = np.asarray(squared_cv, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if tail is None:
            w = (1.0 + v) * u * i / (2.0 * (1.0 - rho))
        else:
            w = _tail_stretch(v) * i * np.maximum(np.log(np.maximum(u, 1e-300) / tail), 0.0) / (1.0 - rho)
    return as_result(np.where(rho < 1.0, w, np.inf))


def bulk_max_rate_per_s(interval_s, batch, budget_s, tail=None, squared_cv=0.0):
    """Highest arrival rate whose :func:`bulk_wait_s` is at most ``budget_s`` (0 if the budget is negative).

    Mean, closed form in x = λI (R the budget, J = (1 + v)·I)::

        x ≤ 2Rb / (bJ + 2R)        when that is ≤ 1 (the server is not always busy)
        x ≤ b·(1 − J/(2R))         otherwise

    a tail by bisection on x ∈ [0, b) (the wait grows with x).

    Examples
    --------
    >>> round(float(bulk_max_rate_per_s(1.0, 1, 1.0)), 3)   # M/D/1: ρ = 2R/(I + 2R)
    0.667
    >>> float(bulk_max_rate_per_s(1.0, 1, -1.0))
    0.0
    """
    i = np.asarray(interval_s, dtype=float)
    b = np.asarray(batch, dtype=float)
    r = np.asarray(budget_s, dtype=float)
    i, b, r, v = np.broadcast_arrays(i, b, r, np.asarray(squared_cv, dtype=float))
    if tail is None:
        j = (1.0 + v) * i
        with np.errstate(divide="ignore", invalid="ignore"):
            light = 2.0 * r * b / (b * j + 2.0 * r)
            x = np.where(light <= 1.0, light, b * (1.0 - j / (2.0 * r)))
    else:
        lo, hi = np.zeros(i.shape), b * (1.0 - 1e-12)
        for _ in range(_BISECTION_STEPS):
            mid = 0.5 * (lo + hi)
            ok = np.asarray(bulk_wait_s(i, b, mid / i, tail, v)) <= r
            lo, hi = np.where(ok, mid, lo), np.where(ok, hi, mid)
        x = lo
    return as_result(np.where(r >= 0.0, np.clip(x, 0.0, None) / i, 0.0))


# ---- slots: admission to a decode replica's batch ---------------------------------------


def erlang_c(servers, utilisation):
    """Probability that an arrival waits in an M/M/c queue, C(c, a) with a = c·ρ (arrays broadcast).

    Erlang B from the Poisson distribution, B = p_c / P(X ≤ c) with X ~ Poisson(a)
    and p_c = e^{−a} a^c / c!; the upper tail is the series
    P(X > c) = p_c · Σ_{n≥1} Π_{i=1..n} a/(c + i), whose terms fall at least as
    fast as ρ^n and as e^{−n²/2c}, so a few hundred vectorised terms reach
    double precision for any c (the textbook recursion 1/B_k = 1 + (k/a)/B_{k−1}
    costs c steps per c). Then C = B / (1 − ρ(1 − B)).

    Examples
    --------
    >>> round(float(erlang_c(1, 0.5)), 6)   # M/M/1: ρ
    0.5
    >>> round(float(erlang_c(2, 0.5)), 6)   # 2ρ²/(1 + ρ)
    0.333333
    """
    servers = np.asarray(servers, dtype=float)
    c, rho = np.broadcast_arrays(servers, np.asarray(utilisation, dtype=float))
    live = (rho > 0) & (rho < 1)
    cc, r = np.where(live, c, 1.0), np.where(live, rho, 0.5)
    a = cc * r
    # ln c! once per distinct slot count, found before broadcasting (a table is a column of counts against
    # a row of utilisations); the points set aside take c = 1, ln 1! = lgamma(2) = 0.
    counts, where = np.unique(servers + 1.0, return_inverse=True)
    per_count = np.array([math.lgamma(x) for x in counts.tolist()])[where].reshape(servers.shape)
    log_factorial = np.where(live, np.broadcast_to(per_count, cc.shape), math.lgamma(2.0))
    pmf = np.exp(-a + cc * np.log(a) - log_factorial)
    # Where p_c underflows (many slots at moderate load) B and C are 0 whatever the tail: sum only the rest.
    # Terms fall (a < c + n), and one at most 1e-17 of the sum is below half its last place, so a sum
    # that has converged never changes again: it is set aside, and only the others go on.
    on = np.flatnonzero(pmf > 0.0)
    a_on, c_on = a.ravel()[on], cc.ravel()[on]
    term, s_on = np.ones(on.size), np.zeros(on.size)
    tail_sum = np.zeros(a.size)
    for n in range(1, _ERLANG_MAX_TERMS + 1):
        term = term * a_on / (c_on + n)
        s_on = s_on + term
        if n % 16 == 0:
            going = term > _ERLANG_TOLERANCE * s_on
            if not going.all():
                tail_sum[on[~going]] = s_on[~going]
                on, a_on, c_on, term, s_on = on[going], a_on[going], c_on[going], term[going], s_on[going]
            if not on.size:
                break
    tail_sum[on] = s_on
    tail_sum = tail_sum.reshape(a.shape)
    erl_b = pmf / (1.0 - pmf * tail_sum)
    erl_c = erl_b / (1.0 - r * (1.0 - erl_b))
    return as_result(np.where(rho > 0, np.where(rho < 1, erl_c, 1.0), 0.0))


class _Rows:
    """Rows kept per key, least recently used dropped beyond ``size`` (classes and configurations share
    slot counts, and a sweep's points share all of them)."""

    def __init__(self, size: int) -> None:
        self.size, self.rows = size, OrderedDict()

    def get(self, key):
        """The row kept for ``key`` (now the most recently used), or None."""
        if key in self.rows:
            self.rows.move_to_end(key)
            return self.rows[key]
        return None

    def put(self, key, row) -> None:
        self.rows[key] = row
        if len(self.rows) > self.size:
            self.rows.popitem(last=False)


#: Erlang C on the grid, by (slot count, grid points), and the scaled waits, by (slot count, points, tail).
_ERLANG_ROWS = _Rows(4096)
_WAIT_ROWS = _Rows(4096)
#: The stacked rows of a whole set of slot counts, by (counts, points, tail): a generation asks for the same
#: few sets (dp·batches of one grid) many thousand times.
_WAIT_TABLES = _Rows(256)
#: The distinct slot counts of an array of them and where each entry's count is among them, by the array.
_COUNTS = _Rows(4096)


@dataclass
class _WaitTable:
    """The waits of a set of slot counts on the grid (:func:`_waits_on_grid`) and, once the table is
    asked for again and has answered about as many queries as it has points, the sorted keys of their
    running maxima (:func:`_sorted_keys`): sorting the table costs about as much as bisecting that many
    queries (a bisection is ~log2 of the grid steps per query, the sort ~log2 of the table per point),
    so a table asked for once (a batch search's lattice) or for few queries is not sorted."""

    scaled: np.ndarray
    running_max: np.ndarray
    keys: tuple[np.ndarray, np.ndarray] | None = None
    uses: int = 0
    queries: int = 0

    def sorted_keys(self, queries: int) -> tuple[np.ndarray, np.ndarray] | None:
        """:func:`_sorted_keys` of the running maxima, once the table is asked for again and its
        ``queries`` so far (these included) reach :data:`_SORT_QUERIES_PER_POINT` times its size (None before)."""
        self.uses += 1
        self.queries += queries
        if self.keys is None and self.uses > 1 and self.queries >= _SORT_QUERIES_PER_POINT * self.running_max.size:
            self.keys = _sorted_keys(self.running_max)
            for a in self.keys:
                a.flags.writeable = False
        return self.keys


def _tail_stretch(squared_cv):
    """The factor on a tail wait's time scale when service varies with squared cv v: max(1, (1 + v)/2)."""
    return np.maximum(1.0, (1.0 + np.asarray(squared_cv, dtype=float)) / 2.0)


def _waits_on_grid(servers: np.ndarray, size: int, tail: float | None,
                   squared_cv: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(wait / H, its running maximum with NaN as −∞) at the first ``size`` grid utilisations, one row
    per slot count of ``servers``.

    Rows not kept yet are computed together (Erlang C and the waits are
    elementwise, so a row is the same whatever else is computed with it).
    """
    grid = _UTILISATION_GRID[:size]
    keys = [(int(c), size, tail, squared_cv) for c in servers]
    rows = {k: row for k in dict.fromkeys(keys) if (row := _WAIT_ROWS.get(k)) is not None}
    if new := [k for k in dict.fromkeys(keys) if k not in rows]:
        erl = {k[:2]: row for k in new if (row := _ERLANG_ROWS.get(k[:2])) is not None}
        if todo := [k[:2] for k in new if k[:2] not in erl]:
            values = np.asarray(erlang_c(np.array([c for c, _ in todo], dtype=float)[:, None], grid[None, :]))
            for key, row in zip(todo, values, strict=True):
                erl[key] = row
                _ERLANG_ROWS.put(key, row)
        scaled = _slot_wait_scaled(np.array([k[0] for k in new], dtype=float)[:, None], grid[None, :],
                                   np.stack([erl[k[:2]] for k in new]), tail, squared_cv)
        top = np.maximum.accumulate(np.where(np.isnan(scaled), -np.inf, scaled), axis=1)
        for key, row, row_top in zip(new, scaled, top, strict=True):
            rows[key] = (row, row if np.array_equal(row, row_top) else row_top)
            _WAIT_ROWS.put(key, rows[key])
    return np.stack([rows[k][0] for k in keys]), np.stack([rows[k][1] for k in keys])


def _slot_wait_scaled(servers: int, rho, c, tail, squared_cv=0.0):
    """Wait in units of the hold time H, given ρ and Erlang C (module docstring)."""
    gap = servers * (1.0 - rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        if tail is None:
            corr = 1.0 + (1.0 - rho) * (servers - 1) * (np.sqrt(4.0 + 5.0 * servers) - 2.0) / (16.0 * rho * servers)
            w = 0.5 * c / gap * corr
            if squared_cv:
                w = (1.0 - squared_cv) * w + squared_cv * c / gap
            w = np.where(c > 0, w, 0.0)
        else:
            w = _tail_stretch(squared_cv) * np.maximum(np.log(np.maximum(c, 1e-300) / tail), 0.0) / gap
    return np.where(rho < 1.0, w, np.inf)


def slot_wait_s(servers, hold_s, rate_per_s, tail=None, hold_squared_cv=0.0):
    """Wait for one of ``servers`` slots each held ``hold_s`` on average: the mean (M/D/c, Cosmetatos,
    towards M/M/c as holds vary) or the value exceeded with probability ``tail`` (M/M/c tail, stretched
    when ``hold_squared_cv`` > 1; module docstring); ∞ when λH ≥ c.

    Examples
    --------
    >>> round(float(slot_wait_s(1, 1.0, 0.5)), 6)            # c = 1 is M/D/1
    0.5
    >>> round(float(slot_wait_s(4, 1.0, 2.0, tail=0.1)), 4)  # ln(C/0.1)/(c(1 − ρ))
    0.2767
    >>> round(float(slot_wait_s(1, 1.0, 0.5, hold_squared_cv=1.0)), 6)   # exponential holds: M/M/1
    1.0
    """
    s, h, lam = np.broadcast_arrays(np.asarray(servers, dtype=int), np.asarray(hold_s, dtype=float),
                                    np.asarray(rate_per_s, dtype=float))
    out = np.empty(s.shape)
    for c in np.unique(s):
        m = s == c
        rho = lam[m] * h[m] / c
        out[m] = h[m] * _slot_wait_scaled(int(c), rho, np.asarray(erlang_c(int(c), rho)), tail, hold_squared_cv)
    return as_result(out)


def _sorted_keys(running_max: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values of ``running_max``, sorted; one key per point, nondecreasing over the flat table).

    A point's key is row·(d + 1) + the rank of its value among the d distinct ones: rows are
    nondecreasing, so the flat keys are sorted, and "the first point of row j above t" is one
    :func:`numpy.searchsorted` of j·(d + 1) + (how many values are ≤ t) for every query at once.
    """
    values = np.unique(running_max)
    rank = np.searchsorted(values, running_max)
    keys = (np.arange(running_max.shape[0], dtype=np.int64)[:, None] * (values.size + 1) + rank).ravel()
    return values, keys


def _first_over_bisection(running_max: np.ndarray, row: np.ndarray, hold_s: np.ndarray,
                          budget_s: np.ndarray) -> np.ndarray:
    """For each (row, H, budget): the first grid index i with fl(M_i·H) > budget (n if none), by bisection."""
    n = running_max.shape[1]
    flat, start = running_max.ravel(), row * n  # row-major: point i of row j is flat[j·n + i]
    lo, hi = np.zeros(row.size, dtype=int), np.full(row.size, n)  # the first exceeding index is in [lo, hi]
    # ⌈log2(n + 1)⌉ halvings close every interval; a closed one (lo = hi) stays as it is.
    for _ in range(n.bit_length()):
        mid = (lo + hi) >> 1
        over = flat[start + np.minimum(mid, n - 1)] * hold_s > budget_s
        lo, hi = np.where(over, lo, np.minimum(mid + 1, hi)), np.where(over, mid, hi)
    return lo


def _first_over(running_max: np.ndarray, keys: tuple[np.ndarray, np.ndarray], row: np.ndarray, hold_s: np.ndarray,
                budget_s: np.ndarray) -> np.ndarray:
    """:func:`_first_over_bisection`, by search of the threshold budget/H in the sorted keys.

    fl(M_i·H) > budget is monotone in i (M nondecreasing, rounding monotone), so the index found
    for M_i > fl(budget/H) is the answer exactly when the predicate holds there and not one point
    before; the queries where rounding of budget/H moved the index are answered by bisection.
    """
    (values, flat_keys), n = keys, running_max.shape[1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        below = np.searchsorted(values, budget_s / hold_s, side="right")
    base = row.astype(np.int64) * (values.size + 1)
    first = np.searchsorted(flat_keys, base + below, side="left") - row * n
    flat = running_max.ravel()
    at = row * n + np.minimum(first, n - 1)
    holds = (first == n) | (flat[at] * hold_s > budget_s)
    before = row * n + np.maximum(first - 1, 0)
    holds &= (first == 0) | ~(flat[before] * hold_s > budget_s)
    if not holds.all():
        redo = np.flatnonzero(~holds)
        first[redo] = _first_over_bisection(running_max, row[redo], hold_s[redo], budget_s[redo])
    return first


def _last_within(table: _WaitTable, row: np.ndarray, hold_s: np.ndarray,
                 budget_s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of the last grid point before the first with scaled·H > budget, scaled there) for each
    (row of the table, hold, budget).

    The wait grows with ρ, so that point is found on the running maximum M
    of ``scaled`` (:func:`_first_over_bisection`, or :func:`_first_over` on
    a table asked for before): rounding is monotone, so fl(M_i·H) first
    exceeds the budget exactly where fl(scaled_i·H) first does (H > 0 and
    finite); rows with other holds are compared point by point. Index −1
    when the first point already exceeds the budget, the last index when
    none does.
    """
    scaled, n = table.scaled, table.scaled.shape[1]
    k = np.empty(row.size, dtype=int)
    good = np.isfinite(hold_s) & (hold_s > 0)
    fast = np.flatnonzero(good)
    h, r = hold_s[fast], budget_s[fast]
    keys = table.sorted_keys(fast.size)
    first = (_first_over_bisection(table.running_max, row[fast], h, r) if keys is None
             else _first_over(table.running_max, keys, row[fast], h, r))
    k[fast] = first - 1
    slow = np.flatnonzero(~good)
    if slow.size:
        bad = scaled[row[slow]] * hold_s[slow, None] > budget_s[slow, None]
        k[slow] = np.where(bad.any(axis=1), np.argmax(bad, axis=1) - 1, n - 1)
    return k, scaled[row, np.maximum(k, 0)]


def _distinct_counts(servers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(servers, return_inverse=True)``, the inverse in ``servers``' shape, kept per array
    (generation asks for the same few slot arrays, dp·batches of a grid, many thousand times)."""
    key = (servers.tobytes(), servers.shape, servers.dtype.str)
    if (found := _COUNTS.get(key)) is None:
        uniq, inv = np.unique(servers, return_inverse=True)
        found = (uniq, inv.reshape(servers.shape))
        for a in found:
            a.flags.writeable = False
        _COUNTS.put(key, found)
    return found


def slot_max_rate_per_s(servers, hold_s, budget_s, tail=None, max_utilisation: float = 1.0,
                        hold_squared_cv: float = 0.0):
    """(highest rate, its wait) of ``servers`` slots held ``hold_s`` whose :func:`slot_wait_s` ≤ ``budget_s``.

    Holds vary with squared cv ``hold_squared_cv`` (0: all ``hold_s``).
    The utilisation is the largest on the grid k·:data:`UTILISATION_STEP`
    (at most ``max_utilisation``) that meets the budget (the wait grows with ρ,
    so every grid point below it does too); rate = ρ·c/H. Zero when no
    positive utilisation does.

    Examples
    --------
    >>> rate, wait = slot_max_rate_per_s(64, 10.0, 0.5, max_utilisation=0.9)
    >>> round(float(rate), 3), round(float(wait), 3)
    (5.76, 0.269)
    """
    servers = np.asarray(servers, dtype=int)
    s, h, r = np.broadcast_arrays(servers, np.asarray(hold_s, dtype=float), np.asarray(budget_s, dtype=float))
    size = int(np.count_nonzero(_UTILISATION_GRID <= max_utilisation * (1 + 1e-12)))
    grid = _UTILISATION_GRID[:size]
    hh, rr, cc = h.ravel(), r.ravel(), s.ravel()
    if s.size:  # the distinct counts of the (smaller) array before broadcasting, their indices broadcast
        uniq, inv = _distinct_counts(servers)
        inv = np.broadcast_to(inv, s.shape).ravel()
    else:
        uniq, inv = np.unique(cc, return_inverse=True)
    v = float(hold_squared_cv)
    table_key = (uniq.tobytes(), size, tail, v)
    if (table := _WAIT_TABLES.get(table_key)) is None:
        table = _WaitTable(*_waits_on_grid(uniq, size, tail, v))
        for a in (table.scaled, table.running_max):
            a.flags.writeable = False  # shared by every later call with these counts
        _WAIT_TABLES.put(table_key, table)
    k, at = _last_within(table, inv.ravel(), hh, rr)
    ok = k > 0
    rate = np.where(ok, grid[np.maximum(k, 0)] * cc / hh, 0.0).reshape(s.shape)
    wait = np.where(ok, at * hh, 0.0).reshape(s.shape)
    return as_result(rate), as_result(wait)
