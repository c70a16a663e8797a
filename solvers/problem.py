"""The solver-neutral placement problem: columns, demands, sites, a network.

This module knows nothing of LLMs. A *demand* (a traffic class) must be served
at a rate; it may be split over *routes* (ways to serve it: for an LLM, the
serving modes), each route a chain of *steps*. A *column* is a replica type:
it occupies whole units (chips) of one or two resource types (*parts*) and
serves steps at a given rate per replica. *Sites* are groups of identical,
identically attached scale-up domains of one resource type; each site is a node
of the *network*, whose directed edges carry two kinds of traffic:

* *transfers*: bytes per request handed from one step of a route to the next
  (KV cache from prefill to decode), routed freely as a per-transfer flow;
* *pair traffic*: bytes/s between the two parts of a two-part column (attention
  and FFN halves, target and remote draft), routed on the fixed lowest-latency
  path and allowed only between site pairs whose path latency is within the
  column's limit.

Notation used in the docstrings of :mod:`solvers.milp`:

=============  =================================================================
λ_k            rate of demand k (requests/s)
x_r            rate sent down route r (requests/s), Σ_{r∈k} x_r = λ_k
n_{c,p,s}      replicas of column c whose part p sits in site s (integer)
a_{c,q,s}      load of step q on column c at site s (requests/s)
cap_{c,q}      requests/s one replica of c serves of step q alone
u_p, D_s, m_s  units per replica of part p, units per domain, domains in site s
f_{t,e}        flow of transfer t on edge e (bytes/s)
z_{c,s,s'}     replica pairs of two-part column c between sites s and s'
=============  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field, model_serializer, model_validator

from topology.records import Record

__all__ = [
    "OBJECTIVES",
    "Column",
    "Demand",
    "Edge",
    "Measure",
    "Objective",
    "Part",
    "Policy",
    "PolicyFlow",
    "PolicyLimit",
    "PolicyLoad",
    "PoolLimit",
    "Problem",
    "Route",
    "Site",
    "Transfer",
    "register_objective",
    "unit_weight",
]


@dataclass(frozen=True)
class Measure:
    """What a primary objective sums over the units placed: ``per_unit(site)`` per unit of a site, in
    ``unit``.

    ``per_unit`` reads only a site's price, power and resource, and does not fall when the price or the
    power rises: the collapsed fleet (:mod:`solvers.twolevel`) merges sites into one carrying the least
    price and power among them, and its optimum must stay a lower bound. ``units_tie_break``: whether
    equal plans are told apart by their units (not for a measure that counts units already);
    ``prices``: the measure is the sites' $ price, which the Lagrangian by parts prices
    (:mod:`solvers.lagrange`).
    """

    name: str
    per_unit: Callable[[Site], float]
    unit: str
    units_tie_break: bool = True
    prices: bool = False


#: Every measure a primary objective may minimise, by name.
OBJECTIVES: dict[str, Measure] = {}


def register_objective(measure: Measure) -> Measure:
    """Add (or replace) ``measure`` as an objective problems may name; returns it."""
    OBJECTIVES[measure.name] = measure
    return measure


def _known(name: str) -> str:
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; expected one of {', '.join(OBJECTIVES)}")
    return name


#: What the primary objective sums over the units placed: a registered :class:`Measure`'s name.
Objective = Annotated[str, AfterValidator(_known)]




class Demand(Record):
    """A stream of requests that must be served in full.

    With ``single_resource`` all of it is served by columns whose part 0 is of
    one resource type, chosen by the solver (an unsplittable assignment, as in
    Mélange's ILP where each request bucket goes to one GPU type).
    """

    name: str
    rate: float = Field(ge=0, description="requests/s")
    single_resource: bool = False


class Route(Record):
    """One way to serve a demand: every request sent down it passes each step."""

    name: str
    demand: str
    steps: list[str] = Field(min_length=1, description="step names, unique across all routes")


class Transfer(Record):
    """Bytes each request of ``route`` hands from step ``source`` to step ``target``."""

    name: str
    route: str
    source: str
    target: str
    bytes_per_request: float = Field(ge=0)


class Part(Record):
    """What one replica of a column occupies of one resource type."""

    resource: str
    units: int = Field(ge=1, description="units (chips) per replica")


class Column(Record):
    """A replica type.

    ``capacity[q]`` is the request rate of step q one replica serves when it
    serves nothing else; mixing steps shares the replica linearly. Load is
    attributed to the site of part 0. Two-part columns carry
    ``pair_bytes_per_s`` each way between their parts per replica, over paths
    of latency at most ``pair_max_latency_s``.
    """

    name: str
    parts: list[Part] = Field(min_length=1, max_length=2)
    capacity: dict[str, float] = Field(min_length=1, description="step -> requests/s per replica")
    pair_bytes_per_s: float = Field(default=0.0, ge=0)
    pair_max_latency_s: float = Field(default=float("inf"), ge=0)

    @model_validator(mode="after")
    def _positive_capacity(self) -> Column:
        if any(v <= 0 for v in self.capacity.values()):
            raise ValueError(f"column {self.name!r}: capacities must be > 0 (drop the step instead)")
        return self


class Site(Record):
    """``domains`` identical scale-up domains of ``units_per_domain`` units of one resource.

    Replicas of up to ``units_per_domain`` units pack inside one domain;
    larger ones take whole domains. Part sizes up to a domain must form a
    divisibility chain with the domain size (each divides every larger one) and
    larger ones be whole domains (see :func:`solvers.packing.check_packable`),
    which makes the aggregate unit constraint exact.
    """

    name: str
    node: str = Field(description="network node the site's domains hang off")
    resource: str
    units_per_domain: int = Field(ge=1)
    domains: int = Field(ge=0)
    usd_per_hour_per_unit: float = Field(ge=0)
    power_w_per_unit: float = Field(ge=0)
    uplink_bytes_per_s: float | None = Field(default=None, ge=0, description="each domain's uplink per direction, "
                                             "which KV sent between two of the site's domains crosses (None: not "
                                             "modelled; see solvers.uplink_rows)")

    @model_serializer(mode="wrap")
    def _without_unmodelled_uplink(self, handler):
        """Sites without a modelled uplink serialise as they did before uplinks existed."""
        out = handler(self)
        if isinstance(out, dict) and out.get("uplink_bytes_per_s", 0.0) is None:
            del out["uplink_bytes_per_s"]
        return out


class Edge(Record):
    """A directed network edge (add both directions for a full-duplex link)."""

    source: str
    target: str
    capacity_bytes_per_s: float = Field(ge=0)
    latency_s: float = Field(default=0.0, ge=0)


class Policy(Record):
    """A way to serve a share π of a group of demands whose rates are then decided by the MILP.

    The policies of one ``group`` have shares π_p ≥ 0 with Σ_p π_p = 1; demand k
    is served at λ_k·Σ_p ``demands[k]``·π_p instead of λ_k (the demands named
    by policies have no fixed rate: λ_k is the most they can carry). ``cost`` is
    added to the objective per unit of π (the objective's units: $/h for cost).
    For KV retention (:mod:`placement.core.kv.kvmodel`): a group is a session class,
    a policy a (tier, window), its demands the hit and miss classes.
    """

    name: str
    group: str
    demands: dict[str, float] = Field(description="demand -> share of its λ served per unit of π")
    cost: float = Field(default=0.0, ge=0)


class PolicyLimit(Record):
    """A row Σ_p ``policies[p]``·π_p ≤ ``rhs`` + Σ_c ``replicas[c]``·Σ_s n_{c,0,s} (a tier's bytes or bytes/s)."""

    name: str
    policies: dict[str, float]
    replicas: dict[str, float] = Field(default_factory=dict, description="column -> headroom per replica")
    rhs: float = Field(default=0.0, ge=0)
class PolicyLoad(Record):
    """Where policies send a demand: Σ_r Σ_c Σ_{s∈sites} a_{c,q_r,s} = λ_k·Σ_p ``policies[p]``·π_p, q_r the first
    step of each route r of demand k (a KV tier of a domain group: its hits are served by pools placed there)."""

    name: str
    demand: str
    sites: list[str]
    policies: dict[str, float]


class PolicyFlow(Record):
    """Traffic Σ_p ``policies[p]``·π_p bytes/s on each edge of ``edges`` (a remote KV store's reloads or
    offloads on their path); it joins those edges' capacity rows."""

    name: str
    policies: dict[str, float]
    edges: list[tuple[str, str]]


class PoolLimit(Record):
    """At most ``max_columns`` columns carrying load of each group of steps (a class and stage, say)."""

    max_columns: int = Field(ge=1)
    groups: dict[str, list[str]] = Field(description="group name -> step names")


class Problem(Record):
    """Everything the MILP needs; see the module docstring for the notation."""

    name: str = "placement"
    demands: list[Demand]
    routes: list[Route]
    transfers: list[Transfer] = Field(default_factory=list)
    columns: list[Column]
    sites: list[Site]
    nodes: list[str] = Field(default_factory=list, description="network nodes other than sites (switches)")
    edges: list[Edge] = Field(default_factory=list)
    objective: Objective = "cost"
    power_cap_w: float | None = Field(default=None, gt=0)
    budget_usd_per_hour: float | None = Field(default=None, gt=0)
    policies: list[Policy] = Field(default_factory=list)
    policy_limits: list[PolicyLimit] = Field(default_factory=list)
    policy_loads: list[PolicyLoad] = Field(default_factory=list)
    policy_flows: list[PolicyFlow] = Field(default_factory=list)
    pool_limit: PoolLimit | None = Field(default=None, exclude=True, description="see solvers.pool_limit; left "
                                         "out of dumps, so a problem without it serialises as before")

    @model_serializer(mode="wrap")
    def _without_unused(self, handler):
        """Problems without policies serialise as they did before policies existed."""
        out = handler(self)
        if isinstance(out, dict):
            for k in ("policies", "policy_limits", "policy_loads", "policy_flows"):
                if k in out and not out[k]:
                    del out[k]
        return out


def unit_weight(objective: str, site: Site) -> float:
    """Primary objective per unit placed in ``site`` (its :class:`Measure`): $/h for ``cost``, W for
    ``power``, 1 for ``units``.

    Examples
    --------
    >>> s = Site(name="s", node="v", resource="r", units_per_domain=8, domains=1,
    ...          usd_per_hour_per_unit=2.5, power_w_per_unit=700.0)
    >>> unit_weight("cost", s), unit_weight("power", s), unit_weight("units", s)
    (2.5, 700.0, 1.0)
    """
    return OBJECTIVES[objective].per_unit(site)


def _usd(site: Site) -> float:
    return site.usd_per_hour_per_unit


def _watts(site: Site) -> float:
    return site.power_w_per_unit


def _one(site: Site) -> float:
    return 1.0


register_objective(Measure("cost", _usd, "$/h", prices=True))
register_objective(Measure("power", _watts, "W"))
register_objective(Measure("units", _one, "units", units_tie_break=False))
