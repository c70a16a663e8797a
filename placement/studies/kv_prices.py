"""The implied price of a cached and an uncached input token per tier and window.

Seed 003's argument: a provider keeps a prefix in the tier where holding it
until its reuse costs no more than recomputing it, so the cache prices it
posts for a 5-minute and a 1-hour window hint at the tier. For each session
class of an instance :func:`kv_prices` gives, per tier and retention window:

* the hit rate h(T) and mean residence E[min(G, T)] of a call's KV;
* the holding cost per hit: $/byte-h × B × E[min(G, T)] / h(T) (B: the
  prefix's KV bytes), as $ per million cached prefix tokens;
* the *marginal* price of the hits a longer window adds over the previous one:
  c·κ·(E[min(G, T₂)] − E[min(G, T₁)])/(h(T₂) − h(T₁)) — what the extra hits
  cost to hold; worth it while below the uncached price (seed 003's 5-minute vs
  1-hour comparison: the longer window is paid for by the few extra hits);
* beside the uncached price: the cheapest prefill replica of the cost models
  recomputing the prefix ($/h ÷ prefix tokens/s it sustains within the TTFT).

HBM has no price of its own; it is charged here at the chip's $/h over its
HBM bytes (all of the chip's cost charged to the memory: an upper bound, as in
``benchmarks/KV_TIERS.md``).

Examples
--------
>>> from placement.studies.kv_prices import holding_usd_per_million_tokens
>>> round(holding_usd_per_million_tokens(0.00334 / 1e9, 163840.0, 300.0, 0.95), 4)
0.048
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KvPriceRow", "KvPrices", "holding_usd_per_million_tokens", "kv_prices", "price_rows",
           "uncached_usd_per_million_tokens"]


@dataclass(frozen=True)
class KvPriceRow:
    """One tier and retention window of a session class."""

    tier: str
    window_s: float
    hit_rate: float
    residence_s: float
    held_usd_per_million_tokens: float
    marginal_usd_per_million_tokens: float


@dataclass(frozen=True)
class KvPrices:
    """A session class's cache prices beside recomputing its prefix (None: no prefill replica meets the TTFT)."""

    class_name: str
    uncached_usd_per_million_tokens: float | None
    uncached_by: str | None
    rows: list[KvPriceRow]


def kv_prices(ctx) -> list[KvPrices]:
    """Per session class of the context's instance: :func:`price_rows` and the uncached price.

    Raises
    ------
    InputError
        No class describes sessions.
    """
    from placement.core.instance.errors import InputError

    classes = [c for c in ctx.instance.workload.classes if c.sessions is not None]
    if not classes:
        raise InputError("no class describes sessions", file=ctx.source, field="workload.classes")
    out = []
    for cls in classes:
        uncached = uncached_usd_per_million_tokens(ctx, cls)
        out.append(KvPrices(cls.name, None if uncached is None else uncached[0],
                            None if uncached is None else uncached[1],
                            [KvPriceRow(*row) for row in price_rows(ctx, cls)]))
    return out


def holding_usd_per_million_tokens(usd_per_byte_hour: float, bytes_per_token: float, residence_s: float,
                                   hit: float) -> float:
    """Holding cost per hit, per million prefix tokens: c·κ·E[min(G, T)]/h (per hour → × s/3600)."""
    return usd_per_byte_hour * bytes_per_token * residence_s / 3600.0 / hit * 1e6 if hit > 0 else float("inf")


def uncached_usd_per_million_tokens(ctx, cls) -> tuple[float, str] | None:
    """The cheapest recompute of ``cls``'s prefix by a prefill replica meeting its TTFT: ($/M tokens, what)."""
    from placement.core.kv.kvmodel import outcome_class
    from placement.core.replicas.evaluate import evaluate
    from placement.modes.pd import prefill_grids

    miss = outcome_class(ctx, cls, "miss", {}, cls.rate_rps)
    best = None
    for grid in prefill_grids(ctx, miss, {}):  # whether or not the instance allows pd: the recompute's price
        perf = evaluate(ctx, grid.config, miss, batch=grid.batches)
        price = grid.config.main.chips * ctx.resources()[grid.config.main.site_resource].usd_per_hour_per_chip
        for cap, ok in zip(perf.capacity_rps.tolist(), perf.ok(miss).tolist(), strict=True):
            if ok and cap > 0:
                usd = price / (cap * miss.prompt_tokens * 3600.0) * 1e6
                if best is None or usd < best[0]:
                    best = (usd, f"{grid.config.main.chip} x{grid.config.main.chips}")
    return best


def price_rows(ctx, cls) -> list[tuple[str, float, float, float, float, float]]:
    """(tier, window s, hit rate, residence s, holding $/M cached tokens, marginal $/M of the hits it adds over
    the tier's previous window) per tier and window of the grid."""
    from placement.core.instance.sessions import RETENTION_WINDOWS_S, session_hit_and_residence
    from placement.core.kv.kvmodel import prefix_bytes, resolve_tiers

    per_token = prefix_bytes(ctx, cls) / cls.cached_prefix_tokens
    prices = {name: t.usd_per_byte_hour for name, t in resolve_tiers(ctx).items()}
    hbm = min(s.usd_per_hour_per_chip / s.chip.memory_bytes for s in ctx.sites.values())
    rows = []
    for tier, price in [("hbm", hbm), *sorted(prices.items())]:
        h0 = r0 = 0.0
        for w in RETENTION_WINDOWS_S:
            h, r = session_hit_and_residence(cls.sessions, w)
            marginal = holding_usd_per_million_tokens(price, per_token, r - r0, h - h0)
            rows.append((tier, w, h, r, holding_usd_per_million_tokens(price, per_token, r, h), marginal))
            h0, r0 = h, r
    return rows
