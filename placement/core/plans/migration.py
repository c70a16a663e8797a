"""What changing a running plan costs: the reload rule and the ``migration`` record of a re-plan.

Reload rule
-----------
Every replica added, and every replica removed, costs one *reload*: the
replica's weights travel into its chips over their share of the domain's
scale-out uplink, and while they do, the replica's chips are paid for and
serve nothing (a removal is charged the same time: its traffic drains to the
replicas that stay)::

    bytes   = weight bytes of what the part holds (see weight_bytes_of)
    seconds = bytes / (chips × uplink of the domain / chips per domain)
    $       = seconds × chips × $/h per chip / 3600  +  the fixed $ per move

A replica that stays where it is costs nothing. A replica on a failed domain
is already gone: replacing it is an addition.

Examples
--------
>>> reload_seconds(1.4e12, chips=8, uplink_bytes_per_s=7.2e12, chips_per_domain=72)
1.75
>>> round(reload_usd(1.75, chips=8, usd_per_hour_per_chip=10.0, move_usd=0.5), 6)
0.538889
"""

from __future__ import annotations

import math

from pydantic import Field

from costmodels.arithmetic import stored_weight_bytes
from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.modes.registry import pool_kind
from placement.core.replicas.evaluate import PoolConfig, precision_args
from topology.records import MutableRecord

__all__ = ["AMORTISE_H_RANGE", "MAX_MOVE_USD", "Migration", "Move", "change_cost", "check_move_terms",
           "reload_seconds", "reload_usd", "weight_bytes_of"]

#: The largest fixed $ per replica move accepted: a billion dollars, more than any fleet costs. With the
#: shortest amortisation below, a change weighs at most 1e12 $/h in the objective; the MILP backends
#: were measured to solve re-plans correctly to ~1e14 $/h per change and to fail (a false "infeasible")
#: at 1e16.
MAX_MOVE_USD = 1e9

#: Hours over which one-off $ may be spread (3.6 s to 114 years).
AMORTISE_H_RANGE = (1e-3, 1e6)


def check_move_terms(move_usd: float, amortise_h: float | None = None, *, prefix: str = "--") -> None:
    """InputError unless ``0 ≤ move_usd ≤ MAX_MOVE_USD`` and ``amortise_h`` lies in ``AMORTISE_H_RANGE``.

    Examples
    --------
    >>> check_move_terms(10.0, 24.0)
    >>> check_move_terms(1e30)
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: --move-usd: expected a finite $ between 0 and 1e+09 per replica moved, got 1e+30
    """
    if not (math.isfinite(move_usd) and 0.0 <= move_usd <= MAX_MOVE_USD):
        raise InputError(f"expected a finite $ between 0 and {MAX_MOVE_USD:g} per replica moved, got {move_usd:g}",
                         field=f"{prefix}move-usd")
    lo, hi = AMORTISE_H_RANGE
    if amortise_h is not None and not (math.isfinite(amortise_h) and lo <= amortise_h <= hi):
        raise InputError(f"expected hours between {lo:g} and {hi:g}, got {amortise_h:g}", field=f"{prefix}amortise-h")


class Move(MutableRecord):
    """Replicas of one pool part in one domain group: before → after, and what the change costs."""

    pool: str | None = Field(description="the pool's id in the new plan (None: it is gone)")
    previous_pool: str | None = Field(description="its id in the current plan (None: it is new)")
    column: str
    part: int
    stage: str
    chip: str
    group: str
    replicas_before: int
    replicas_lost: int = Field(description="replicas of the current plan on failed domains")
    replicas_after: int
    added: int
    removed: int
    domains_added: list[int] = Field(default_factory=list, description="indices that gain replicas")
    domains_removed: list[int] = Field(default_factory=list, description="indices that lose replicas")
    reload_bytes: float
    reload_s: float = Field(description="seconds per replica reloaded (replicas reload in parallel)")
    usd: float


class Migration(MutableRecord):
    """The moves from the current plan to the new one, and their totals."""

    moves: list[Move] = Field(default_factory=list)
    replicas_added: int = 0
    replicas_removed: int = 0
    replicas_kept: int = 0
    replicas_lost: int = 0
    reload_bytes: float = 0.0
    reload_s: float = Field(default=0.0, description="the longest single reload (moves run in parallel)")
    usd: float = Field(default=0.0, description="one-off cost of all moves")
    move_usd: float = Field(default=0.0, description="the fixed $ charged per replica added or removed")
    amortise_h: float = Field(description="hours over which the one-off cost is spread in the objective")
    objective_usd_per_hour: float = Field(description="run cost + usd / amortise_h: what the re-plan minimised")


def weight_bytes_of(ctx: Context, config: PoolConfig, part: int) -> float:
    """Bytes of weights one replica of ``part`` of ``config`` holds.

    A whole replica holds the whole model (its shards add up to it); the
    attention half of an attention–FFN replica holds the attention and
    embedding weights, its FFN half the FFN weights; a remote draft holds the
    draft model.
    """
    prec = precision_args(ctx)
    weights, attention = prec["precision"], prec["attention_precision"]
    if config.partner is None:
        return stored_weight_bytes(ctx.model, "full", weights, attention)
    halves = pool_kind(config.kind).weights  # what each part of the kind holds, if not the whole model
    if halves is not None:
        return stored_weight_bytes(ctx.model, halves[part], weights, attention)
    if part and ctx.draft_model is not None:
        return stored_weight_bytes(ctx.draft_model, "full", weights, attention)
    return stored_weight_bytes(ctx.model, "full", weights, attention)


def reload_seconds(weight_bytes: float, *, chips: int, uplink_bytes_per_s: float, chips_per_domain: int) -> float:
    """Seconds to load ``weight_bytes`` into ``chips`` chips over their share of the domain uplink."""
    return weight_bytes / (chips * uplink_bytes_per_s / chips_per_domain)


def reload_usd(seconds: float, *, chips: int, usd_per_hour_per_chip: float, move_usd: float = 0.0) -> float:
    """$ of one reload: the replica's chips paid for ``seconds``, plus the fixed ``move_usd``."""
    return seconds * chips * usd_per_hour_per_chip / 3600.0 + move_usd


def change_cost(ctx: Context, config: PoolConfig, part: int, group: str, move_usd: float) -> tuple[float, float, float]:
    """(weight bytes, reload seconds, $) of adding or removing one replica of ``part`` of ``config`` in domain
    group ``group`` (the reload rule of the module docstring)."""
    info = ctx.sites[group]
    lay = config.main if part == 0 else config.partner
    weight = weight_bytes_of(ctx, config, part)
    seconds = reload_seconds(weight, chips=lay.chips, uplink_bytes_per_s=info.uplink_bytes_per_s,
                             chips_per_domain=info.chips_per_domain)
    return weight, seconds, reload_usd(seconds, chips=lay.chips, usd_per_hour_per_chip=info.usd_per_hour_per_chip,
                                       move_usd=move_usd)
