"""``placement kv-prices INSTANCE``: the implied price of a cached and an uncached input token per tier and window.

Seed 003's argument: a provider keeps a prefix in the tier where holding it
until its reuse costs no more than recomputing it, so the cache prices it
posts for a 5-minute and a 1-hour window hint at the tier. For each session
class of an instance this prints, per tier and retention window:

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
>>> from placement.cli.kv import holding_usd_per_million_tokens
>>> round(holding_usd_per_million_tokens(0.00334 / 1e9, 163840.0, 300.0, 0.95), 4)
0.048
"""

from typing import Annotated

import typer

from placement.cli.options import InstanceArg

__all__ = ["holding_usd_per_million_tokens", "kv_prices_command", "price_rows", "print_kv",
           "uncached_usd_per_million_tokens"]


def holding_usd_per_million_tokens(usd_per_byte_hour: float, bytes_per_token: float, residence_s: float,
                                   hit: float) -> float:
    """Holding cost per hit, per million prefix tokens: c·κ·E[min(G, T)]/h (per hour → × s/3600)."""
    return usd_per_byte_hour * bytes_per_token * residence_s / 3600.0 / hit * 1e6 if hit > 0 else float("inf")


def uncached_usd_per_million_tokens(ctx, cls) -> tuple[float, str] | None:
    """The cheapest recompute of ``cls``'s prefix by a prefill replica meeting its TTFT: ($/M tokens, what)."""
    from placement.core.evaluate import evaluate
    from placement.core.kvmodel import outcome_class
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
    from placement.core.kvmodel import prefix_bytes, resolve_tiers
    from placement.core.sessions import RETENTION_WINDOWS_S, session_hit_and_residence

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


def kv_prices_command(instance: InstanceArg,
                      quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no table")] = False) -> None:
    """Implied price of a cached vs an uncached input token per KV tier and retention window."""
    from rich.table import Table

    from placement.cli.consoles import out
    from placement.core.context import Context
    from placement.core.errors import InputError
    from placement.core.loading import load_instance

    ctx = Context.of(load_instance(instance), str(instance))
    classes = [c for c in ctx.instance.workload.classes if c.sessions is not None]
    if not classes:
        raise InputError("no class describes sessions", file=str(instance), field="workload.classes")
    for cls in classes:
        uncached = uncached_usd_per_million_tokens(ctx, cls)
        head = "no prefill replica meets the TTFT" if uncached is None else \
            f"${uncached[0]:.4g}/M tokens ({uncached[1]} prefill replicas)"
        table = Table(title=f"{cls.name}: recomputing the prefix costs {head}")
        for col in ("tier", "window", "hit rate", "residence s", "held $/M cached tokens",
                    "marginal $/M (extra hits)", "marginal vs uncached"):
            table.add_column(col)
        for tier, w, h, r, usd, marginal in price_rows(ctx, cls):
            ratio = "-" if uncached is None else f"{marginal / uncached[0]:.3g}x"
            table.add_row(tier, f"{w / 60:g} min", f"{h:.1%}", f"{r:.1f}", f"{usd:.4g}", f"{marginal:.4g}", ratio)
        if not quiet:
            out.print(table)


def print_kv(console, plan) -> None:
    """The retention each session class uses and the tiers' use, as tables (``solve``'s summary)."""
    from rich.table import Table

    t = Table(title=f"KV retention (--kv-policy {plan.kv_policy})")
    for col in ("class", "tier", "window", "share", "hit rate", "held GB", "reload ms (1 link)"):
        t.add_column(col)
    for c in plan.classes:
        for e in c.kv_retention or []:
            where = e.policy.rpartition("@")[2] if "@" in e.policy else ""
            t.add_row(c.name, f"{e.tier}@{where}" if where else e.tier, f"{e.window_s / 60:g} min", f"{e.share:.1%}", f"{e.hit_rate:.1%}",
                      f"{e.held_gb:,.1f}", f"{e.reload_ms:.0f}")
    console.print(t)
    used = [u for u in plan.kv_tiers if u.used_gb > 0]
    if used:
        t = Table(title=f"KV tiers in use (${plan.kv_usd_per_hour or 0:,.2f}/h)")
        for col in ("tier", "domain group", "used / capacity GB", "reload GB/s (of)", "offload GB/s (of)", "$/h"):
            t.add_column(col)
        for u in used:
            t.add_row(u.tier, u.domain_group, f"{u.used_gb:,.0f} / {u.capacity_gb:,.0f}",
                      f"{u.bandwidth_used_gb_per_s:.3g} ({u.bandwidth_gb_per_s:.3g})",
                      f"{u.write_used_gb_per_s:.3g} ({u.write_gb_per_s:.3g})", f"{u.usd_per_hour:.2f}")
        console.print(t)
