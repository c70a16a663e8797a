"""The plan: what runs where, what it costs, how it was solved — as JSON-ready records.

A :class:`Plan` is built from a solver :class:`~solvers.solution.Solution` and the
candidate configurations behind its columns. It names every pool (stage, chip,
layout, batch, replicas, which domain groups host them), each class's split
over serving modes with its predicted TTFT/TPOT, the load on every link, the
cost, power and $/M output tokens, and the solver's statistics.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from placement.core.evaluate import PoolConfig
from placement.modes import STAGE_OF_KIND, check_stage

__all__ = [
    "STAGE_OF_KIND",
    "CandidateStats",
    "ClassPlan",
    "Comparison",
    "FlowPlan",
    "LinkPlan",
    "PairPlan",
    "Plan",
    "Pool",
    "PoolSite",
    "SolverStats",
]

#: Wall-clock fields: the only part of a plan that differs between identical runs.
TIMING_FIELDS = frozenset({"seconds", "build_seconds"})

PlanStatus = Literal["optimal", "feasible", "infeasible", "time_limit", "error"]
#: A stage a part of a replica runs (:func:`placement.modes.stages`; STAGE_OF_KIND maps pool kinds to them).
Stage = Annotated[str, AfterValidator(check_stage)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PoolSite(_Record):
    """Replicas of a pool in one domain group, with the load they carry."""

    site: str
    replicas: int
    domains: list[int] = Field(default_factory=list, description="indices of the domains used in the group")
    load_rps: dict[str, float] = Field(default_factory=dict, description="route step -> requests/s")


class Pool(_Record):
    """Identical replicas running one stage (one part of a column)."""

    id: str
    column: str
    stage: Stage
    traffic_class: str
    chip: str
    replicas: int
    chips: int = Field(description="chips in the pool (replicas × chips per replica)")
    chips_per_replica: int
    tp: int
    ep: int
    pp: int
    batch: int
    chunk_tokens: int | None = None
    micro_batches: int = 1
    paired_with: str | None = None
    capacity_rps_per_replica: dict[str, float] = Field(default_factory=dict)
    utilisation: float = 0.0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    memory_per_chip_gb: float | None = None
    usd_per_hour: float
    power_w: float
    domains: list[str] = Field(description="domain groups hosting the pool (the sites' names)")
    sites: list[PoolSite]
    config: PoolConfig
    part: int = 0




class ClassPlan(_Record):
    name: str
    rate_rps: float
    modes: dict[str, float] = Field(description="mode -> share of the class's requests")
    ttft_ms: float | None
    tpot_ms: float | None
    ttft_slo_ms: float
    tpot_slo_ms: float


class LinkPlan(_Record):
    source: str
    target: str
    load_bytes_per_s: float
    capacity_bytes_per_s: float
    utilisation: float


class FlowPlan(_Record):
    transfer: str
    source: str
    target: str
    bytes_per_s: float


class PairPlan(_Record):
    column: str
    source_site: str
    target_site: str
    replicas: float
    latency_us: float


class SolverStats(_Record):
    backend: str
    status: str
    message: str = ""
    seconds: float
    build_seconds: float
    objective: float | None
    best_bound: float | None
    gap: float | None
    variables: int
    integer_variables: int
    constraints: int
    nonzeros: int


class CandidateStats(_Record):
    generated: int
    feasible: int
    kept: int


class Comparison(_Record):
    """The same instance solved with part of it removed (one chip type, or one mode)."""

    label: str
    kind: Literal["full", "homogeneous", "mode"]
    status: str
    cost_usd_per_hour: float | None
    chips: int | None
    power_w: float | None
    usd_per_million_output_tokens: float | None
    modes: dict[str, float] = Field(default_factory=dict, description="mode -> req/s served that way")
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    savings: float | None = Field(
        default=None, description="what the full plan saves against this one: 1 - full cost / this cost"
    )


class Plan(_Record):
    """A placement, its predicted performance and cost, and how it was found."""

    instance: str
    status: PlanStatus
    objective: Literal["cost", "power", "chips"]
    cost_usd_per_hour: float | None = None
    power_w: float | None = None
    chips: int | None = None
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    output_tokens_per_s: float | None = None
    usd_per_million_output_tokens: float | None = None
    pools: list[Pool] = Field(default_factory=list)
    classes: list[ClassPlan] = Field(default_factory=list)
    links: list[LinkPlan] = Field(default_factory=list)
    flows: list[FlowPlan] = Field(default_factory=list)
    pairs: list[PairPlan] = Field(default_factory=list)
    solver: SolverStats | None = None
    candidates: CandidateStats | None = None
    verified: bool = False
    violations: list[str] = Field(default_factory=list)
    diagnosis: list[str] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    message: str = ""

    def canonical_json(self) -> str:
        """The plan as JSON without wall-clock timings: byte-identical across runs."""
        return self.model_dump_json(exclude={"solver": set(TIMING_FIELDS)})
