"""What a serving mode is: its route, the replica kinds it uses, its candidate grids, its transfers.

A :class:`ServingMode` is a small frozen record of data and functions; the
registry (:mod:`placement.core.modes.registry`) holds one per mode. Everything the rest of
the package needs to know about a mode is here:

* ``name`` (in route and step ids), ``label`` and ``color`` (tables, charts),
  ``option`` (the entry of the instance's ``modes`` list that allows it);
* ``stages``: the steps of its route in order, each a :class:`~placement.core.modes.ids.StepId`;
* ``kinds``: the :class:`PoolKind` of every replica it uses — the stage each
  part of such a replica runs and the function that evaluates it;
* ``grids``: the candidate configurations of one class on the fleet, as
  :class:`Grid` records (a configuration, the stage it serves, its batches,
  the latency limit of a paired configuration), or :class:`GridSet` records
  (many paired configurations at several latencies, evaluated as one array);
* ``transfers``: what crosses the network between two steps of a class's
  route (KV cache), per request;
* ``shared_columns``: columns made once per instance that serve several
  classes (measured capacities), if the mode has any.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from placement.core.modes.ids import RouteId, StepId

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass
    from placement.core.replicas.evaluate import Perf, PoolConfig

__all__ = ["Evaluator", "Grid", "GridSet", "PoolKind", "ServingMode", "SharedColumn", "TransferSpec", "main_sites"]

#: ``(ctx, config, class, batches, one-way pair latency s, memo) -> Perf`` over the batches.
Evaluator = Callable[["Context", "PoolConfig", "TrafficClass", np.ndarray, float, dict], "Perf"]


def _main_chip(cfg: PoolConfig) -> str:
    return cfg.main.chip


@dataclass(frozen=True)
class PoolKind:
    """A kind of replica: the stage its main (and partner) part runs and how it is evaluated.

    ``where`` says, for a diagnosis, what chips a configuration of this kind
    runs on; ``measured`` marks kinds whose capacity is measured, not modelled;
    ``partner`` whether a configuration has a second part: ``"never"``,
    ``"always"`` (attention–FFN) or ``"optional"`` (a draft beside the target or
    remote) — what the verifier holds each configuration to. ``evaluate_many``, if given, evaluates
    many single-part configurations of the kind and one main chip at once, ``(ctx, configs, class,
    batches of each) -> Perf of each``: the kind's own formulas on the concatenated points
    (elementwise, so every point's floats are those of ``evaluate`` on its configuration alone;
    :func:`placement.core.replicas.evaluate.evaluate_many`).

    What the rest of the package says of a kind is said here, never in a table keyed by its name:

    * ``floor``: its physical floors, one of :mod:`placement.core.verify.floors`' ``*_floor`` functions
      (``(ctx, config, crossing latency s) -> Floors``; code shared with no cost model); a kind
      without one is refused by the verifier;
    * ``words``: each part's stage as a planner says it (default: the stage names);
    * ``decodes``: it serves a class's decode on one chip type (what a diagnosis looks for before
      blaming attention–FFN pairing); ``step_table``: a measured step table may time its main part
      (:mod:`placement.core.replicas.measured_steps`);
    * ``weights``: what each part holds (``stored_weight_bytes`` parts, ``("attention", "ffn")``):
      its main part is then an attention half whose dp groups each run their own batch, and it may
      pipeline micro-batches; ``None``: each part holds the whole model (a draft part the draft);
    * ``drafts``: it runs the instance's draft model (needs one); ``chunked``: a configuration has a
      prefill chunk; ``shared_batch``: its main part's dp ranks share the replica's batch;
      ``batch_search``: generation searches its best integer batch (not where capacity is not
      unimodal in the batch, prefill).
    """

    name: str
    stages: tuple[str, str | None]
    evaluate: Evaluator
    where: Callable[[PoolConfig], str] = _main_chip
    measured: bool = False
    partner: Literal["never", "always", "optional"] = "never"
    evaluate_many: Callable[..., list[Perf]] | None = None
    floor: Callable[..., Any] | None = None
    words: tuple[str, str | None] | None = None
    decodes: bool = False
    step_table: bool = False
    weights: tuple[str, str] | None = None
    drafts: bool = False
    chunked: bool = False
    shared_batch: bool = False
    batch_search: bool = True

    def said(self, part: int) -> str | None:
        """Part ``part``'s stage as a planner says it."""
        return (self.words or self.stages)[part]

@dataclass(frozen=True)
class Grid:
    """One configuration (``config.batch`` ignored) over a grid of batches, serving one stage of a route.

    ``pair_latency_s`` is the one-way latency limit (s) between the two parts
    of a paired configuration, part of the column's name; ``None`` for a
    configuration of one part (or whose pair latency does not matter).
    """

    config: PoolConfig
    stage: str
    batches: np.ndarray
    pair_latency_s: float | None = None


def _nothing_to_share(memo: dict) -> None:
    return None


@dataclass(frozen=True, eq=False)
class GridSet:
    """Paired configurations of one kind, class and pair of resources over the same batches, each at every
    one of several link latencies: the grids ``Grid(config, stage, batches, latency)``, configurations
    outer, latencies inner, evaluated together.

    ``evaluate(ctx, cls, memo)`` gives one :class:`~placement.core.replicas.evaluate.Perf` of arrays of shape
    (configurations, latencies, batches) (``fits`` and ``memory_per_chip_bytes`` may broadcast over the
    latencies), each entry what evaluating its grid alone gives. ``share(memo)`` runs before the grids
    are handed out one at a time (:meth:`grids`): it may leave the whole set in ``memo`` so that
    evaluating the first grid evaluates them all.
    """

    configs: tuple[PoolConfig, ...]
    stage: str
    batches: np.ndarray
    pair_latencies_s: tuple[float, ...]
    evaluate: Callable[[Context, TrafficClass, dict], Perf]
    share: Callable[[dict], None] = _nothing_to_share

    def grids(self, memo: dict) -> Iterator[Grid]:
        """The set's grids one at a time, in order (after ``share(memo)``)."""
        self.share(memo)
        for cfg in self.configs:
            for lat in self.pair_latencies_s:
                yield Grid(cfg, self.stage, self.batches, lat)


@dataclass(frozen=True)
class TransferSpec:
    """Bytes per request that cross the network from one step of a route to the next."""

    route: RouteId
    name: str
    source: StepId
    target: StepId
    bytes_per_request: float

    @property
    def id(self) -> str:
        """The solver's transfer name, ``class|mode|name``."""
        return self.route.transfer(self.name)


@dataclass(frozen=True)
class SharedColumn:
    """A column made once per instance: one configuration serving several steps at given capacities."""

    name: str
    config: PoolConfig
    capacity_rps: dict[str, float]


def main_sites(ctx: Context, resource: str | None = None) -> dict:
    """``ctx.resources()``, or only ``resource``'s entry: where a grid's main part may run when generation
    asks for one chip type's grids (:func:`placement.core.modes.enabled.configurations`)."""
    sites = ctx.resources()
    return sites if resource is None else {r: s for r, s in sites.items() if r == resource}


def _no_transfers(ctx: Context, cls: TrafficClass, route: RouteId) -> list[TransferSpec]:
    return []


@dataclass(frozen=True)
class ServingMode:
    """One way of serving a class: a route of stages and the replicas that run them."""

    name: str
    label: str
    option: str
    stages: tuple[str, ...]
    kinds: tuple[PoolKind, ...]
    #: ``(ctx, class, memo, resource=None)``: with a resource, only the grids whose main part runs on it.
    grids: Callable[..., Iterable[Grid | GridSet]]
    transfers: Callable[[Context, TrafficClass, RouteId], list[TransferSpec]] = _no_transfers
    shared_columns: Callable[[Context], list[SharedColumn]] | None = None
    requires_draft: bool = False
    color: str = "tab:olive"

    def route(self, traffic_class: str) -> RouteId:
        """The route of ``traffic_class`` in this mode."""
        return RouteId(traffic_class, self.name)

    def steps(self, traffic_class: str) -> list[StepId]:
        """The steps of that route, in order."""
        return [StepId(traffic_class, self.name, stage) for stage in self.stages]

    def enabled(self, ctx: Context) -> bool:
        """Whether the instance allows this mode.

        Its option must be listed; a mode needing a draft model needs one; and
        with ``only_measured`` only modes with measured (shared) columns remain.
        """
        inst = ctx.instance
        if self.option not in inst.modes or (self.requires_draft and ctx.draft_model is None):
            return False
        return self.shared_columns is not None or not inst.only_measured
