"""The records of kept candidates: one configuration and one column each, built without validation.

Generation keeps tens of thousands of candidates on large fleets; validating a pydantic record per
column would cost more than the pruning that chose them, and every field already has its type
(:meth:`placement.core.replicas.generation.Pending.check` is what :class:`~solvers.problem.Column` checks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from placement.core.replicas.evaluate import PartLayout, PoolConfig
from solvers.problem import Column, Part

if TYPE_CHECKING:
    from placement.core.replicas.generation import Pending

__all__ = ["records", "unvalidated"]


def records(kept: list[Pending], part: Callable[[PartLayout], Part]) -> tuple[dict[str, PoolConfig], list[Column]]:
    """The configuration and the column of every kept candidate, in order.

    A configuration at one batch is one (frozen) record shared by its columns (a pair's columns at
    each link latency). The columns are built without validation: every field has its type already,
    and :meth:`Pending.check` is what :class:`~solvers.problem.Column` would check.
    """
    configs: dict[str, PoolConfig] = {}
    columns: list[Column] = []
    at_batch: dict[tuple[int, int], PoolConfig] = {}
    column_fields = {"name", "parts", "capacity", "pair_bytes_per_s", "pair_max_latency_s"}
    for p in kept:
        p.check()
        key = (id(p.cfg), p.batch)
        if (cfg := at_batch.get(key)) is None:
            fields = p.cfg.__pydantic_fields_set__ | {"batch"}  # as model_copy(update={"batch": ...}) sets
            cfg = at_batch[key] = unvalidated(PoolConfig, {**p.cfg.__dict__, "batch": p.batch}, fields)
        configs[p.name] = cfg
        columns.append(unvalidated(Column, {
            "name": p.name,
            "parts": [part(p.cfg.main)] + ([part(p.cfg.partner)] if p.cfg.partner else []),
            "capacity": {s: p.capacity for s in p.steps},
            "pair_bytes_per_s": p.pair_bytes_per_s,
            "pair_max_latency_s": float(p.pair_max_latency_s),
        }, column_fields))
    return configs, columns


def unvalidated(model: type, values: dict, fields_set: set[str]):
    """A record of ``model`` holding ``values`` (every field, in declaration order), as
    ``model.model_construct`` builds it, without its per-field default handling (no validation either).

    Examples
    --------
    >>> part = unvalidated(Part, {"resource": "h100@8", "units": 4}, {"resource", "units"})
    >>> part == Part(resource="h100@8", units=4)
    True
    """
    rec = model.__new__(model)
    object.__setattr__(rec, "__dict__", values)
    object.__setattr__(rec, "__pydantic_fields_set__", set(fields_set))
    object.__setattr__(rec, "__pydantic_extra__", None)
    object.__setattr__(rec, "__pydantic_private__", None)
    return rec
