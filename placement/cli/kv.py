"""``placement kv-prices INSTANCE``: the tables of :func:`placement.studies.kv_prices.kv_prices`."""

from typing import Annotated

import typer

from placement.cli.options import InstanceArg, PricesOpt
from placement.core.plans.numbers import num, usd

__all__ = ["kv_prices_command", "print_kv"]


def kv_prices_command(instance: InstanceArg,
                      quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no table")] = False,
                      prices: PricesOpt = None) -> None:
    """Implied price of a cached vs an uncached input token per KV tier and retention window."""
    from rich.table import Table

    from placement.api import kv_prices
    from placement.cli.consoles import out
    from placement.core.instance.loading import load_instance

    for p in kv_prices(load_instance(instance), prices=prices,
                       source=str(instance)):
        head = "no prefill replica meets the TTFT" if p.uncached_usd_per_million_tokens is None else \
            f"${num(p.uncached_usd_per_million_tokens, 4)}/M tokens ({p.uncached_by} prefill replicas)"
        table = Table(title=f"{p.class_name}: recomputing the prefix costs {head}")
        for col in ("tier", "window", "hit rate", "residence s", "held $/M cached tokens",
                    "marginal $/M (extra hits)", "marginal vs uncached"):
            table.add_column(col)
        for r in p.rows:
            ratio = "-" if p.uncached_usd_per_million_tokens is None else \
                f"{num(r.marginal_usd_per_million_tokens / p.uncached_usd_per_million_tokens)}x"
            table.add_row(r.tier, f"{num(r.window_s / 60)} min", f"{r.hit_rate:.1%}", num(r.residence_s),
                          num(r.held_usd_per_million_tokens, 4), num(r.marginal_usd_per_million_tokens, 4), ratio)
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
            t.add_row(c.name, f"{e.tier}@{where}" if where else e.tier, f"{num(e.window_s / 60)} min", f"{e.share:.1%}",
                      f"{e.hit_rate:.1%}", num(e.held_gb), num(e.reload_ms))
    console.print(t)
    used = [u for u in plan.kv_tiers if u.used_gb > 0]
    if used:
        t = Table(title=f"KV tiers in use (${usd(plan.kv_usd_per_hour or 0)}/h)")
        for col in ("tier", "domain group", "used / capacity GB", "reload GB/s (of)", "offload GB/s (of)", "$/h"):
            t.add_column(col)
        for u in used:
            t.add_row(u.tier, u.domain_group, f"{num(u.used_gb)} / {num(u.capacity_gb)}",
                      f"{num(u.bandwidth_used_gb_per_s)} ({num(u.bandwidth_gb_per_s)})",
                      f"{num(u.write_used_gb_per_s)} ({num(u.write_gb_per_s)})", usd(u.usd_per_hour))
        console.print(t)
