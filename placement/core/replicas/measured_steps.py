"""Measured step tables (the instance's ``measured_step_time``) in place of the roofline step.

A table applies to the pools whose replica runs on its chip, with its layout
(tp, ep, pp), at its stage: ``decode`` tables time the steps of PD's
``decode`` pools, ``prefill`` tables those of ``prefill`` pools (the kind
every mode that prefills apart shares). Only the step time is measured: the
capacity rule of the kind, the KV transfer after prefill and the memory fit
stay the cost models'. The verifier re-derives such pools through the same
:func:`placement.core.replicas.evaluate.evaluate`, hence with the same table, and a
plan's pool names the table it rests on (``Pool.step_table``).

Interpolation is piecewise-linear in the batch and, for a table with
``context_tokens``, in the context (bilinear). Nothing is extrapolated:

* a batch outside the measured ones is not offered (its ``Perf.fits`` is
  false) — the candidate grid spans batches 1…4096 whatever the table covers,
  so this only narrows the batches of that configuration;
* a class whose context lies outside the table's ``context_tokens`` is an
  input error naming the table and the class — the instance asks for a
  table that does not cover its traffic.

The context of a decode step is the mean KV context while decoding
(:func:`placement.core.replicas.evaluate.decode_context_tokens`); that of a prefill
step the class's new prompt tokens.

Examples
--------
>>> from placement.core.instance.schema import MeasuredStepTime
>>> t = MeasuredStepTime(chip="h100", tp=8, batch=[1, 8, 64], context_tokens=[1000, 3000],
...                      step_time_ms=[[10, 12, 20], [12, 14, 30]])
>>> times, inside = interpolate(t, np.array([1.0, 36.0, 128.0]), 2000.0)
>>> (times * 1e3).round(3).tolist(), inside.tolist()
([11.0, 19.0, 25.0], [True, True, False])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from placement.core.instance.errors import InputError
from placement.core.modes.registry import pool_kind

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import MeasuredStepTime
    from placement.core.replicas.evaluate import PartLayout, PoolConfig

__all__ = ["interpolate", "measured_step_s", "table_field", "table_for"]


def table_for(ctx: Context, part: PartLayout, stage: str) -> tuple[int, MeasuredStepTime] | None:
    """(index, table) of the instance's step table for ``part`` at ``stage``, or None (the roofline)."""
    for i, t in enumerate(ctx.instance.measured_step_time):
        if (t.chip, t.stage, t.tp, t.ep, t.pp) == (part.chip, stage, part.tp, part.ep, part.pp) and part.dp == 1:
            return i, t
    return None


def table_field(ctx: Context, cfg: PoolConfig, part: int = 0) -> str | None:
    """The instance field of the step table a pool rests on (``measured_step_time[i]``), or None.

    ``part`` 0 is the replica's main part; only the main part of a
    ``decode`` or ``prefill`` replica reads a table.
    """
    kind = pool_kind(cfg.kind)
    found = None if not kind.step_table or part != 0 else table_for(ctx, cfg.main, kind.stages[0])
    return None if found is None else f"measured_step_time[{found[0]}]"


def interpolate(table: MeasuredStepTime, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
    """(step time s, inside the measured batches) at each ``batch`` and one context.

    The context must lie inside the table's ``context_tokens`` (callers
    check, see :func:`measured_step_s`); a one-row table holds at any context.
    """
    rows = table.step_times_s()
    b = np.asarray(batch, dtype=float)
    at = [np.interp(b, table.batch, row) for row in rows]
    if table.context_tokens is None:
        t = at[0]
    else:
        c = np.asarray(table.context_tokens, dtype=float)
        k = int(np.clip(np.searchsorted(c, context_tokens, side="right") - 1, 0, len(c) - 2))
        w = (context_tokens - c[k]) / (c[k + 1] - c[k])
        t = (1 - w) * at[k] + w * at[k + 1]
    return t, (b >= table.batch[0]) & (b <= table.batch[-1])


def measured_step_s(ctx: Context, part: PartLayout, stage: str, batch: np.ndarray, context_tokens: float,
                    class_name: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(step time s, batch inside the table) for ``part`` at ``stage``, or None when no table applies.

    Raises
    ------
    InputError
        When the class's context lies outside the table's ``context_tokens``.
    """
    found = table_for(ctx, part, stage)
    if found is None:
        return None
    i, table = found
    ctxs = table.context_tokens
    if ctxs is not None and not ctxs[0] <= context_tokens <= ctxs[-1]:
        raise InputError(f"class {class_name!r} {stage}s at {context_tokens:,.0f} context tokens, outside the "
                         f"table's {ctxs[0]:,}–{ctxs[-1]:,}; measured tables are not extrapolated: add a row "
                         "covering it", file=ctx.source, field=f"measured_step_time[{i}].context_tokens")
    return interpolate(table, batch, float(context_tokens))
