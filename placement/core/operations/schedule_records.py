"""The records of a multi-period schedule (:mod:`placement.core.operations.schedule`): per period, its pools, changes
and references, and the schedule's totals and checks."""

from __future__ import annotations

from pydantic import Field

from placement.core.plans.plan import Plan
from topology.records import MutableRecord

__all__ = ["Change", "PeriodPlan", "PoolCount", "Schedule"]


class PoolCount(MutableRecord):
    """Replicas of one pool part in one domain group in one period."""

    column: str
    part: int
    stage: str
    traffic_class: str
    chip: str
    group: str
    replicas: int


class Change(MutableRecord):
    """Replicas of one pool part in one group changed at the start of a period, and their reload $."""

    period: str
    column: str
    part: int
    chip: str
    group: str
    before: int
    after: int
    usd: float


class PeriodPlan(MutableRecord):
    period: str
    hours: float
    status: str
    verified: bool = False
    violations: list[str] = Field(default_factory=list)
    cost_usd_per_hour: float | None = Field(default=None, description="run cost at the instance's prices")
    period_usd_per_hour: float | None = Field(default=None, description="run cost at the period's on-demand prices")
    kv_usd_per_hour: float | None = Field(default=None, description="session classes: the KV tiers' holding cost "
                                          "at the period's rates (in cost_usd_per_hour)")
    chips: int | None = None
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    reserved_chips: int = Field(default=0, description="chips in use that are reserved")
    on_demand_chips: int = Field(default=0, description="chips in use bought on demand this period")
    pools: list[PoolCount] = Field(default_factory=list)
    replicas_added: int = 0
    replicas_removed: int = 0
    migration_usd: float = Field(default=0.0, description="reload $ of the changes at the period's start")
    independent_usd_per_hour: float | None = Field(default=None, description="the period solved alone, $/h")
    independent_bound_usd_per_hour: float | None = Field(default=None, description="a proven lower bound on it")
    plan: Plan | None = None


class Schedule(MutableRecord):
    """The schedule, its total, the two references and the checks between them (module docstring)."""

    method: str = "one MILP with a period index"
    references: str = Field(default="exact", description="independent periods as MILPs (exact) or LP bounds (bound)")
    status: str = "optimal"
    message: str = ""
    periods: list[PeriodPlan] = Field(default_factory=list)
    changes: list[Change] = Field(default_factory=list)
    reserved_discount: float = 0.0
    reserved_chips: dict[str, int] = Field(default_factory=dict, description="domain group -> chips reserved")
    total_usd: float | None = None
    reserved_usd: float = 0.0
    on_demand_usd: float = 0.0
    run_usd: float | None = Field(default=None, description="reserved + on-demand $")
    migration_usd: float = Field(default=0.0, description="reconfiguration $: reloads of every change")
    kv_usd: float = Field(default=0.0, description="session classes: the KV tiers' holding $ over the horizon "
                          "(Σ hours × each period's KV $/h; in total_usd)")
    best_bound_usd: float | None = Field(default=None, description="proven lower bound on the best schedule")
    gap: float | None = Field(default=None, description="(total - best bound) / total")
    independent_usd: float | None = None
    independent_bound_usd: float | None = None
    static_peak_usd: float | None = None
    static_peak_usd_per_hour: float | None = None
    static_peak_verified: bool | None = None
    independent_le_schedule: bool | None = None
    schedule_le_static: bool | None = None
    gap_to_independent: float | None = Field(default=None, description="total / independent - 1")
    solver_seconds: float = Field(default=0.0, description="the schedule MILP's solver wall seconds")
    build_seconds: float = Field(default=0.0, description="seconds to build the schedule MILP")
    reference_seconds: float = Field(default=0.0, description="build + solve seconds of the references")
    variables: int = 0
    integer_variables: int = 0
    constraints: int = 0
    diagnosis: list[str] = Field(default_factory=list, description="an infeasible schedule: why each period that "
                                 "has no plan alone has none")
    certified: bool | None = Field(default=None, description="with certify: whether the other backend's solve of "
                                   "the same schedule MILP agrees (None: not asked)")
    notes: list[str] = Field(default_factory=list, description="what the second backend found, with certify")
