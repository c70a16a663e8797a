"""The solver-neutral problem of an instance (:class:`solvers.problem.Problem`): its classes as demands,
the enabled modes as routes and transfers, the domain groups as sites (with their domains' uplinks when
attached to a switch: KV between two domains of a group crosses them, :mod:`solvers.uplink_rows`), the
fleet graph as the network, and the candidate columns (generated, or reused from
:mod:`placement.core.replicas.candidate_cache`)."""

from __future__ import annotations

from placement.core.instance.context import Context
from placement.core.instance.objectives import objective
from placement.core.modes.enabled import enabled_modes, transfers
from placement.core.modes.ids import StepId
from placement.core.replicas.candidate_cache import cached_generate
from placement.core.replicas.generation import Candidates
from solvers.problem import Demand, Edge, PoolLimit, Problem, Route, Site, Transfer

__all__ = ["build_problem", "pool_limit"]


def build_problem(ctx: Context, cands: Candidates | None = None,
                  network_free_from: int | None = None) -> tuple[Problem, Candidates]:
    """The solver-neutral problem of an instance (and the candidates behind it; generated, or reused from an
    earlier context of this process with the same candidates, :mod:`placement.core.replicas.candidate_cache`;
    ``network_free_from``: see :func:`generate`)."""
    if cands is None:
        cands = cached_generate(ctx, network_free_from)
    inst = ctx.instance
    demands = [Demand(name=cls.name, rate=cls.rate_rps, single_resource=cls.single_chip_type)
               for cls in inst.workload.classes]
    routes = [Route(name=str(mode.route(cls.name)), demand=cls.name, steps=[str(s) for s in mode.steps(cls.name)])
              for cls in inst.workload.classes for mode in enabled_modes(ctx)]
    flows = [Transfer(name=t.id, route=str(t.route), source=str(t.source), target=str(t.target),
                      bytes_per_request=t.bytes_per_request) for t in transfers(ctx)]
    sites = [
        Site(name=n, node=n, resource=s.resource, units_per_domain=s.chips_per_domain,
             domains=s.group.count - len(ctx.failed_domains.get(n, ())),
             usd_per_hour_per_unit=s.usd_per_hour_per_chip, power_w_per_unit=s.chip.power_w,
             uplink_bytes_per_s=None if s.group.switch is None else s.uplink_bytes_per_s)
        for n, s in sorted(ctx.sites.items())
    ]
    edges = [Edge(source=u, target=v, capacity_bytes_per_s=d["bandwidth_bytes_per_s"], latency_s=d["latency_s"])
             for u, v, d in sorted(ctx.graph.edges(data=True))]
    measure = objective(inst.objective).measure
    problem = Problem(
        name=inst.name,
        demands=demands,
        routes=routes,
        transfers=flows,
        columns=cands.columns,
        sites=sites,
        nodes=sorted(inst.hardware.switches),
        edges=edges,
        objective=measure,
        power_cap_w=inst.limits.power_w,
        budget_usd_per_hour=inst.limits.budget_usd_per_hour,
        pool_limit=pool_limit(inst.limits.max_pools_per_stage, routes),
    )
    return problem, cands


def pool_limit(max_pools: int | None, routes: list[Route]) -> PoolLimit | None:
    """The solver's pool limit for ``limits.max_pools_per_stage``: one group of steps per class and stage.

    Examples
    --------
    >>> from solvers.problem import Route
    >>> pool_limit(2, [Route(name="a|pd", demand="a", steps=["a|pd|prefill", "a|pd|decode"]),
    ...                Route(name="a|pd-af", demand="a", steps=["a|pd-af|prefill", "a|pd-af|decode"])]).groups
    {'a|prefill': ['a|pd|prefill', 'a|pd-af|prefill'], 'a|decode': ['a|pd|decode', 'a|pd-af|decode']}
    >>> pool_limit(None, []) is None
    True
    """
    if max_pools is None:
        return None
    groups: dict[str, list[str]] = {}
    for r in routes:
        for q in r.steps:
            step = StepId.parse(q)
            groups.setdefault(f"{step.traffic_class}|{step.stage}", []).append(q)
    return PoolLimit(max_columns=max_pools, groups=groups)
