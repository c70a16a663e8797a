"""Chip price sets (``topology/catalog/prices.yaml``): what a chip-hour costs by who pays how.

``tco`` (the default) is the chip catalogue's own ``usd_per_hour``, the owner's total cost of
ownership; ``on-demand`` is public cloud rental by the hour. A set lists a price, its source and
whether it is an estimate for each chip it prices; :func:`priced` applies one to chip records.

Examples
--------
>>> sets = load_price_sets()
>>> list(sets)[:2], DEFAULT_PRICES
(['tco', 'on-demand'], 'tco')
>>> sets["on-demand"].price("h100").usd_per_hour > 1.30
True
>>> from topology.chips import load_chip_catalog
>>> chips = load_chip_catalog()
>>> priced(chips, "tco") == chips, priced(chips, "on-demand")["h100"].usd_per_hour
(True, 3.0)
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field

from topology.chips import ChipSpec
from topology.records import Record, read_catalog_yaml

__all__ = ["DEFAULT_PRICES", "PRICES_PATH", "ChipPrice", "PriceSet", "load_price_sets", "priced"]

PRICES_PATH = Path(__file__).parent / "catalog" / "prices.yaml"
#: The set plans are priced with unless told otherwise: the chip catalogue's own prices.
DEFAULT_PRICES = "tco"


class ChipPrice(Record):
    """One chip's price in a set, with where it comes from."""

    chip: str
    usd_per_hour: float = Field(gt=0, allow_inf_nan=False)
    source: str = Field(min_length=1)
    estimate: bool = False


class PriceSet(Record):
    """A named set of chip prices (none listed: the chip catalogue's own)."""

    name: str
    description: str
    as_of: str
    prices: list[ChipPrice] = Field(default_factory=list)

    def price(self, chip: str) -> ChipPrice | None:
        """The set's price of ``chip`` (None: the set does not price it)."""
        return next((p for p in self.prices if p.chip == chip), None)


@lru_cache(maxsize=1)
def _shipped() -> dict[str, PriceSet]:
    sets: dict[str, PriceSet] = {}
    for entry in read_catalog_yaml(PRICES_PATH)["sets"]:
        s = PriceSet.model_validate(entry)
        if s.name in sets or len({p.chip for p in s.prices}) != len(s.prices):
            raise ValueError(f"{PRICES_PATH}: price set {s.name!r} defined twice or pricing a chip twice")
        sets[s.name] = s
    return sets


def load_price_sets() -> dict[str, PriceSet]:
    """The shipped price sets by name, the default first (a fresh dict each call)."""
    return dict(_shipped())


def priced(chips: dict[str, ChipSpec], name: str) -> dict[str, ChipSpec]:
    """``chips`` with the prices of set ``name`` (chips the set does not list, and every chip under the
    default set, keep their own).

    Raises
    ------
    KeyError
        No set is called ``name``.
    """
    table = load_price_sets()[name]
    if not table.prices:
        return chips
    out = {}
    for n, chip in chips.items():
        p = table.price(n)
        out[n] = chip if p is None else chip.model_copy(update={"usd_per_hour": p.usd_per_hour})
    return out
