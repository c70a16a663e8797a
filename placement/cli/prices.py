"""``placement catalog prices``: every chip's price in each price set, with its source (topology/catalog/prices.yaml;
the default set, tco, is the chip catalogue's own price and source).

Examples
--------
>>> rows = price_rows()
>>> h100 = next(r for r in rows if r["chip"] == "h100")
>>> h100["tco"]["usd_per_hour"], h100["on-demand"]["usd_per_hour"], h100["on-demand"]["estimate"]
(1.3, 3.0, False)
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["price_rows", "print_prices"]


def price_rows() -> list[dict[str, Any]]:
    """One row per catalogue chip: per price set its $/h, whether it is an estimate, and its source (None where
    the set does not price the chip)."""
    from topology.chips import load_chip_catalog
    from topology.prices import load_price_sets

    sets = load_price_sets()
    rows = []
    for name, chip in load_chip_catalog().items():
        row: dict[str, Any] = {"chip": name}
        for s in sets.values():
            p = s.price(name)
            if not s.prices:  # the chip catalogue's own price
                row[s.name] = {"usd_per_hour": chip.usd_per_hour, "estimate": "usd_per_hour" in chip.estimates,
                               "source": chip.sources.get("usd_per_hour", "")}
            else:
                row[s.name] = None if p is None else {"usd_per_hour": p.usd_per_hour, "estimate": p.estimate,
                                                      "source": p.source}
        rows.append(row)
    return rows


def print_prices(console: Console, rows: list[dict[str, Any]]) -> None:
    """The rows as a table: $/h per set (``*`` an estimate), then the non-default sets' sources."""
    from topology.prices import load_price_sets

    sets = load_price_sets()
    t = Table(title="chip prices ($/h per chip; * an estimate)")
    t.add_column("chip")
    for s in sets.values():
        t.add_column(f"{s.name} ({s.as_of})", justify="right")
    for r in rows:
        t.add_row(r["chip"], *("-" if r[s] is None else f"{r[s]['usd_per_hour']:,.2f}" + ("*" if r[s]["estimate"] else "")
                               for s in sets))
    console.print(t)
    for s in sets.values():
        console.print(f"{s.name}: {s.description}", highlight=False, markup=False, soft_wrap=True)
    console.print("--prices NAME on the planning commands; each price's source: placement catalog prices --json "
                  "(topology/catalog/prices.yaml, topology/catalog/chips.yaml)", highlight=False, markup=False,
                  soft_wrap=True)
