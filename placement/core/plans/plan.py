"""The plan: what runs where, what it costs, how it was solved — as JSON-ready records.

A :class:`Plan` is built from a solver :class:`~solvers.solution.Solution` and the
candidate configurations behind its columns. It names every pool (stage, chip,
layout, batch, replicas, which domain groups host them), each class's split
over serving modes with its predicted TTFT/TPOT, the load on every link, the
cost, power and $/M output tokens, and the solver's statistics.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    ValidationError,
    WithJsonSchema,
    model_serializer,
)

from placement.core.instance.errors import InputError
from placement.core.instance.field_types import (
    NAME_RULE,
    ActivationPrecision,
    DerivedName,
    Framework,
    Name,
    StoragePrecision,
    WeightPrecision,
)
from placement.core.instance.loading import describe_error, read_document
from placement.core.instance.objectives import ObjectiveName
from placement.core.modes.ids import StepId
from placement.core.modes.registry import STAGE_OF_KIND, check_stage, pool_kind
from placement.core.plans.migration import Migration
from placement.core.plans.uplinks import UplinkPlan
from placement.core.replicas.evaluate import PoolConfig
from topology.records import MutableRecord

__all__ = [
    "STAGE_OF_KIND",
    "STEP_RECORD_KEYS",
    "CandidateStats",
    "ClassPlan",
    "Comparison",
    "FlowPlan",
    "KvFeed",
    "KvRetention",
    "KvTierUse",
    "LinkPlan",
    "PairPlan",
    "Plan",
    "Pool",
    "PoolBands",
    "PoolSite",
    "Provenance",
    "SolverStats",
    "StepRates",
    "bad_numbers",
    "class_latencies_ms",
    "parse_plan",
    "pool_kind",
    "read_plan",
    "replica_load_rps",
    "step_records",
]

#: Largest integer a plan may hold: counts beyond 2^53 are not exact as floats (cost = replicas·chips·price).
MAX_PLAN_INT = 2**53

#: Wall-clock fields: the only part of a plan that differs between identical runs.
TIMING_FIELDS = frozenset({"seconds", "build_seconds"})

#: Version of the plan's JSON layout (``schemas/plan.schema.json``); raised when a field changes meaning.
#: 2: per-step rates (a site's ``load_rps``, a pool's ``capacity_rps_per_replica``) are lists of
#: ``{class, mode, stage, rate_rps}`` records, no longer objects keyed by ``"class|mode|stage"``;
#: ``prefill_to_decode`` and ``max_pools_per_stage`` added.
PLAN_SCHEMA_VERSION = "3"
#: A release version as PEP 440 writes it (``0.1.0``, ``1.2rc1``, ``0.3.dev4+g1a2b3c``), or ``unknown`` (a tree
#: that was never installed, :func:`placement.core.plans.provenance.tool_version`).
VERSION_PATTERN = (r"^(unknown|[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?"
                   r"(\+[a-z0-9]+(\.[a-z0-9]+)*)?)$")

PlanStatus = Literal["optimal", "feasible", "infeasible", "time_limit", "error"]
#: A stage a part of a replica runs (:func:`placement.core.modes.registry.stages`; STAGE_OF_KIND maps pool kinds to them).
Stage = Annotated[str, AfterValidator(check_stage)]

#: A pool's class: a class name, or ``*`` (a measured pool serves every class measured on it).
PoolClass = Annotated[str, Field(pattern=rf"^(\*|{NAME_RULE})$", max_length=128)]

#: Keys of one per-step rate record in a plan's JSON.
STEP_RECORD_KEYS = ("class", "mode", "stage", "rate_rps")


def step_records(rates: dict[str, float]) -> list[dict[str, Any]]:
    """Rates keyed by step id as the plan writes them: one ``{class, mode, stage, rate_rps}`` record per step.

    Examples
    --------
    >>> step_records({"chat|pd|prefill": 2.5})
    [{'class': 'chat', 'mode': 'pd', 'stage': 'prefill', 'rate_rps': 2.5}]
    """
    out = []
    for key, rate in rates.items():
        st = StepId.parse(key)
        out.append({"class": st.traffic_class, "mode": st.mode, "stage": st.stage, "rate_rps": rate})
    return out


def _step_rates(value: Any) -> Any:
    """Per-step rates from records (plan schema 2) or a ``"class|mode|stage"``-keyed object (schema 1).

    Examples
    --------
    >>> _step_rates([{"class": "chat", "mode": "pd", "stage": "decode", "rate_rps": 1.0}])
    {'chat|pd|decode': 1.0}
    >>> _step_rates([{"class": "chat", "mode": "pd", "stage": "decode"}])
    Traceback (most recent call last):
    ...
    ValueError: record 0: expected the keys class, mode, stage, rate_rps; missing rate_rps
    """
    if isinstance(value, dict):
        for key in value:
            StepId.parse(key)
        return value
    if not isinstance(value, list):
        return value  # pydantic names the type it expected
    out: dict[str, Any] = {}
    for i, rec in enumerate(value):
        if not isinstance(rec, dict):  # pydantic reports ValueError as a validation error, not TypeError
            raise ValueError(  # noqa: TRY004
                f"record {i}: expected an object {{class, mode, stage, rate_rps}}, got {type(rec).__name__}")
        missing = [k for k in STEP_RECORD_KEYS if k not in rec]
        extra = sorted(set(rec) - set(STEP_RECORD_KEYS))
        if missing or extra:
            what = "; ".join(x for x in (missing and "missing " + ", ".join(missing),
                                         extra and "unknown " + ", ".join(map(str, extra))) if x)
            raise ValueError(f"record {i}: expected the keys {', '.join(STEP_RECORD_KEYS)}; {what}")
        parts = [rec["class"], rec["mode"], rec["stage"]]
        if not all(isinstance(x, str) for x in parts):
            raise ValueError(f"record {i}: class, mode and stage must be strings")
        key = str(StepId.parse("|".join(parts)))
        if key in out:
            raise ValueError(f"record {i}: step {parts[0]}/{parts[1]}/{parts[2]} appears more than once")
        out[key] = rec["rate_rps"]
    return out


_NAME = {"type": "string", "minLength": 1, "pattern": r"^[^|]+$"}

#: Requests/s per step of a route: in memory keyed by ``str(StepId)``, in JSON a list of records.
StepRates = Annotated[
    dict[str, float],
    BeforeValidator(_step_rates),
    PlainSerializer(step_records),
    WithJsonSchema({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"class": {**_NAME, "description": "traffic class"},
                           "mode": {**_NAME, "description": "serving mode (placement.modes)"},
                           "stage": {**_NAME, "description": "stage of the mode's route: serve, prefill, decode"},
                           "rate_rps": {"type": "number", "description": "requests/s"}},
            "required": list(STEP_RECORD_KEYS),
            "additionalProperties": False,
        },
    }),
]


def replica_load_rps(sites: list[PoolSite]) -> float:
    """Requests/s arriving at each replica of a pool: its sites' loads over their replicas (0 without any).

    Examples
    --------
    >>> replica_load_rps([PoolSite(site="a", replicas=2, load_rps={"c|pd|prefill": 3.0}),
    ...                   PoolSite(site="b", replicas=1, load_rps={"c|pd|prefill": 1.5})])
    1.5
    """
    replicas = sum(s.replicas for s in sites)
    return sum(r for s in sites for r in s.load_rps.values()) / replicas if replicas else 0.0


class PoolBands(MutableRecord):
    """A pool's predictions at the band's levels (one value per level, in the order of ``levels``)."""

    levels: list[float]
    family: str
    provenance: str
    tpot_ms: list[float] | None = None
    ttft_ms: list[float] | None = None
    capacity_rps_per_replica: dict[str, list[float]]


class PoolSite(MutableRecord):
    """Replicas of a pool in one domain group, with the load they carry."""

    site: Name
    replicas: int
    domains: list[int] = Field(default_factory=list, description="indices of the domains used in the group")
    load_rps: StepRates = Field(default_factory=dict, description="requests/s of each step of a route the "
                                "site's replicas serve")
    replicas_per_domain: list[int] = Field(default_factory=list, description="replicas on each domain of "
                                           "domains, in that order (a replica larger than a domain counts once in "
                                           "each of its domains); empty: not stated, the verifier packs")

    @model_serializer(mode="wrap")
    def _omit_unstated(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out = handler(self)
        if out.get("replicas_per_domain") == []:
            del out["replicas_per_domain"]
        return out


class Pool(MutableRecord):
    """Identical replicas running one stage (one part of a column)."""

    id: DerivedName
    column: str
    stage: Stage
    traffic_class: PoolClass
    chip: Name
    replicas: int
    chips: int = Field(description="chips in the pool (replicas × chips per replica)")
    chips_per_replica: int
    tp: int
    ep: int
    pp: int
    batch: int
    chunk_tokens: int | None = None
    micro_batches: int = 1
    paired_with: DerivedName | None = None
    capacity_rps_per_replica: StepRates = Field(default_factory=dict, description="requests/s one replica "
                                                "serves of each step it can run (alone)")
    utilisation: float = Field(default=0.0, description="load ÷ rated capacity (the rate at which the SLOs still "
                               "hold, each server busy at most 90 % of the time)")
    busy: float = Field(default=0.0, description="the physical utilisation at the plan's load: the busiest server's "
                        "fraction of time working (a prefill step's λ·I/b, the decode slots' λ·H/B)")
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    memory_per_chip_gb: float | None = None
    step_table: str | None = Field(default=None, description="the instance's measured_step_time[i] the step "
                                   "time rests on; None: the roofline")
    usd_per_hour: float
    power_w: float
    domains: list[Name] = Field(description="domain groups hosting the pool (the sites' names)")
    sites: list[PoolSite]
    config: PoolConfig
    part: int = 0
    bands: PoolBands | None = Field(default=None, description="TPOT, TTFT and capacity at p10 / p50 / p90 of "
                                    "the chip family's held-out error band (placement.core.plans.confidence)")

    @property
    def layout(self) -> str:
        """The replica's parallel layout, ``tp1·pp4`` (with ``·epN`` and ``·dpN`` above 1): dp·tp·pp chips."""
        part = self.config.main if self.part == 0 else self.config.partner
        dp = 1 if part is None else part.dp
        return f"tp{self.tp}·pp{self.pp}" + (f"·ep{self.ep}" if self.ep > 1 else "") + (f"·dp{dp}" if dp > 1 else "")


class KvRetention(MutableRecord):
    """One retention policy of a session class (:mod:`placement.core.kv.kvmodel`) and what it holds."""

    policy: str
    tier: str = Field(description="hbm, host, flash, remote, or none (recompute)")
    window_s: float
    share: float = Field(description="share of the class's calls under this policy")
    hit_rate: float = Field(description="P(next call within the window)")
    residence_s: float = Field(description="E[min(gap, window)]: mean time a call's KV is held")
    held_gb: float = Field(description="KV held in the tier by this policy (Little's law)")
    reload_ms: float = Field(description="one prefix read back over one chip's link (0 in HBM)")


class KvTierUse(MutableRecord):
    """A KV tier in one domain group: capacity, use, reload bandwidth and holding cost."""

    tier: str
    domain_group: str
    capacity_gb: float
    used_gb: float
    bandwidth_gb_per_s: float
    bandwidth_used_gb_per_s: float
    usd_per_hour: float
    write_gb_per_s: float = Field(default=0.0, description="offload bandwidth of the group's chips (0 in HBM)")
    write_used_gb_per_s: float = 0.0


def _drop_unset(out: Any, keys: tuple[str, ...]) -> Any:
    """A serialised record without ``keys`` that are None or empty (plans without sessions stay as they were)."""
    if isinstance(out, dict):
        for k in keys:
            if k in out and out[k] in (None, [], {}):
                del out[k]
    return out


class ClassPlan(MutableRecord):
    name: DerivedName
    rate_rps: float
    modes: dict[str, float] = Field(description="mode -> share of the class's requests")
    ttft_ms: float | None
    tpot_ms: float | None
    ttft_slo_ms: float
    tpot_slo_ms: float
    kv_retention: list[KvRetention] | None = Field(
        default=None, description="a session class: its retention policies (its outcome classes are listed "
        "as classes of their own)")

    @model_serializer(mode="wrap")
    def _serialise(self, handler):
        return _drop_unset(handler(self), ("kv_retention",))


class LinkPlan(MutableRecord):
    source: str
    target: str
    load_bytes_per_s: float
    capacity_bytes_per_s: float
    utilisation: float


class FlowPlan(MutableRecord):
    transfer: str
    source: str
    target: str
    bytes_per_s: float


class PairPlan(MutableRecord):
    column: str
    source_site: str
    target_site: str
    replicas: float
    latency_us: float


class KvFeed(MutableRecord):
    """Requests/s whose KV cache a prefill pool's site hands to a decode pool's site (:mod:`placement.core.kv.kv_feeds`)."""

    traffic_class: str
    mode: str
    prefill_pool: str
    prefill_site: str
    decode_pool: str
    decode_site: str
    rate_rps: float


class SolverStats(MutableRecord):
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


class CandidateStats(MutableRecord):
    generated: int
    feasible: int
    kept: int


class Comparison(MutableRecord):
    """The same instance solved with part of it removed (one chip type, or one mode)."""

    label: str
    kind: Literal["full", "homogeneous", "mode", "kv"]
    status: str
    cost_usd_per_hour: float | None
    chips: int | None
    power_w: float | None
    usd_per_million_output_tokens: float | None
    modes: dict[str, float] = Field(default_factory=dict, description="mode -> req/s served that way")
    chips_by_type: dict[str, int] = Field(default_factory=dict)
    savings: float | None = Field(
        default=None, description="what the full plan saves against this one, in the instance's objective: "
        "1 - full value / this value (see savings_of)"
    )
    savings_of: ObjectiveName = Field(
        default="cost", description="the objective savings is measured in: $/h, W or chips"
    )
    reason: str | None = Field(default=None, description="why the row has no verified plan: the first sentence "
                               "of the infeasibility diagnosis, the solver's message or the verifier's first "
                               "violation (None: it has one)")


class Provenance(MutableRecord):
    """What a plan answers: the layout version, the tool, the instance (by hash), the model and precision."""

    schema_version: Literal["1", "2", "3"] = Field(default=PLAN_SCHEMA_VERSION, description="version of the plan "
                                              "JSON layout")
    tool_version: str = Field(pattern=VERSION_PATTERN, max_length=64, description="placement version that wrote "
                              "the plan")
    instance_sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the instance's canonical "
                                 "JSON (placement.core.plans.provenance.instance_sha256)")
    model: Name = Field(description="the served model's catalogue name")
    draft_model: Name | None = None
    precision_weights: WeightPrecision
    precision_attention: WeightPrecision | None = Field(default=None, description="the attention projections' "
                                                         "resolved precision (None: a plan written before it was "
                                                         "recorded)")
    precision_kv: StoragePrecision
    precision_activations: ActivationPrecision
    framework: Framework | None = Field(default=None, description="the serving framework the TTFTs assume "
                                        "(serving.framework; None: a plan written before it was recorded)")
    calibration: str | None = Field(default=None, max_length=400, description="the calibration overlay the plan "
                                    "was priced with: its file name and sha256 (None: the catalogue alone)")
    prices: Name | None = Field(default=None, description="the chip price set the plan was priced with "
                                "(topology/catalog/prices.yaml; None: a plan written before it was recorded, tco)")
    slo_headroom: float | None = Field(default=None, gt=0, le=1, description="the share of every class's SLOs the "
                                       "plan was made to (the instance's slo_headroom; the classes' SLO fields are "
                                       "the tightened ones; None: not recorded, 1)")


class Plan(MutableRecord):
    """A placement, its predicted performance and cost, and how it was found."""

    instance: Name
    status: PlanStatus
    objective: ObjectiveName
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
    uplinks: list[UplinkPlan] = Field(default_factory=list, description="KV each domain sends and receives over "
                                      "its uplink, inside its group or beyond (placement.core.plans.uplinks)")
    prefill_to_decode: list[KvFeed] = Field(default_factory=list, description="which prefill pool feeds which "
                                            "decode pool, per class and mode, from the loads and the KV-transfer "
                                            "flows")
    max_pools_per_stage: int | None = Field(default=None, description="limits.max_pools_per_stage the plan "
                                            "was solved under (None: no limit)")
    solver: SolverStats | None = None
    candidates: CandidateStats | None = None
    verified: bool = False
    violations: list[str] = Field(default_factory=list)
    diagnosis: list[str] = Field(default_factory=list)
    comparisons: list[Comparison] = Field(default_factory=list)
    message: str = ""
    notes: list[str] = Field(default_factory=list, description="what was done beyond one solve: repairs, "
                             "certification by a second backend")
    certified: bool | None = Field(default=None, description="a second backend agreed (None: not asked)")
    kv_policy: str | None = Field(default=None, description="--kv-policy the session classes were solved with")
    kv_tiers: list[KvTierUse] = Field(default_factory=list)
    kv_flows: list[FlowPlan] = Field(default_factory=list, description="a remote KV store's reloads and offloads "
                                     "on the fleet's links (in the links' loads)")
    kv_usd_per_hour: float | None = Field(default=None, description="holding cost of the KV tiers (in "
                                          "cost_usd_per_hour)")
    failed_domains: dict[Name, list[int]] = Field(default_factory=dict, description="domain group -> indices of "
                                                 "failed domains the plan was made without (re-plans)")
    migration: Migration | None = Field(default=None, description="the moves from the plan it replaces")
    survive: str | None = Field(default=None, description="a failure the plan is built to survive: 'domain:1' "
                                "(any one domain lost, the rest still serve every class) or 'switch:1' (any one "
                                "switch lost, with every domain group behind it)")
    survive_slo_factor: float | None = Field(default=None, description="with survive: every class's TTFT and "
                                             "TPOT SLO is multiplied by this in the failure scenarios")
    survive_batches: dict[DerivedName, int] = Field(default_factory=dict, description="with survive: pool id -> the batch "
                                            "its replicas run at in the failure scenarios (absent: its own)")
    confidence: float | None = Field(default=None, description="the error-band quantile step times were priced "
                                     "at (solve --confidence); None: nominal predictions")
    provenance: Provenance | None = Field(default=None, description="schema and tool versions, instance hash, "
                                          "model and precision (None: a plan written before they were recorded)")

    @model_serializer(mode="wrap")
    def _serialise(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Plans without sessions, made from scratch on a healthy fleet, are written without those fields."""
        return _drop_unset(handler(self), ("kv_policy", "kv_tiers", "kv_flows", "kv_usd_per_hour", "failed_domains",
                                           "migration", "uplinks", "survive", "max_pools_per_stage",
                                           "survive_slo_factor", "survive_batches"))

    def canonical_json(self) -> str:
        """The plan as JSON without wall-clock timings and provenance (tool version): byte-identical across runs."""
        return self.model_dump_json(exclude={"solver": set(TIMING_FIELDS), "provenance": True})


def class_latencies_ms(traffic_class: str, pools: Iterable[tuple[Iterable[str], float | None, float | None]],
                       ) -> tuple[float | None, float | None]:
    """A class's worst TTFT and TPOT (ms) from its pools, each given as (steps it carries, TTFT part, TPOT).

    A route's TTFT adds its steps' parts (prefill: wait + prefill + transfer;
    decode: the wait for a slot), each step at the worst pool carrying it; the
    class's is the worst route's. Its TPOT is the worst pool's.

    Examples
    --------
    >>> class_latencies_ms("a", [(["a|pd|prefill"], 400.0, None), (["a|pd|decode"], 30.0, 20.0),
    ...                          (["a|aggregated|serve"], 300.0, 25.0), (["b|pd|decode"], 900.0, 50.0)])
    (430.0, 25.0)
    """
    step_ttft: dict[StepId, float] = {}
    tpots = []
    for steps, ttft, tpot in pools:
        mine = [st for st in map(StepId.parse, steps) if st.traffic_class == traffic_class]
        if not mine:
            continue
        if tpot is not None:
            tpots.append(tpot)
        if ttft is not None:
            for st in mine:
                step_ttft[st] = max(step_ttft.get(st, ttft), ttft)
    route_ttft: dict[Any, float] = defaultdict(float)
    for st, ttft in step_ttft.items():
        route_ttft[st.route] += ttft
    return max(route_ttft.values(), default=None), max(tpots, default=None)


def bad_numbers(doc: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(field path, value) of every NaN, infinity or integer beyond ±2^53 in a JSON-like document.

    Examples
    --------
    >>> list(bad_numbers({"pools": [{"replicas": 2, "load_rps": {"a|pd|decode": float("nan")}}]}))
    [('pools[0].load_rps.a|pd|decode', nan)]
    >>> list(bad_numbers({"chips": 10**20, "ok": True}))
    [('chips', 100000000000000000000)]
    """
    if isinstance(doc, bool) or doc is None or isinstance(doc, str):
        return
    if isinstance(doc, float):
        if not math.isfinite(doc):
            yield path, doc
    elif isinstance(doc, int):
        if abs(doc) > MAX_PLAN_INT:
            yield path, doc
    elif isinstance(doc, dict):
        for k, v in doc.items():
            yield from bad_numbers(v, f"{path}.{k}" if path else str(k))
    elif isinstance(doc, list | tuple):
        for i, v in enumerate(doc):
            yield from bad_numbers(v, f"{path}[{i}]")


def parse_plan(doc: Any, source: str = "<plan>") -> Plan:
    """A :class:`Plan` from a parsed JSON document, or an :class:`InputError` naming the field.

    Every number must be finite (JSON's ``NaN``/``Infinity`` and overflowing literals are
    refused) and every integer within ±2^53; the rest is the schema (``extra="forbid"``).

    Examples
    --------
    >>> parse_plan({"instance": "t", "status": "optimal", "objective": "cost", "power_w": float("inf")})
    Traceback (most recent call last):
    ...
    placement.core.instance.errors.InputError: <plan>: power_w: expected a finite number, got inf
    >>> parse_plan({"instance": "t", "status": "optimal", "objective": "cost"}).pools
    []
    """
    if not isinstance(doc, dict):
        raise InputError(f"expected a JSON object (a plan written by solve --json), got {type(doc).__name__}",
                         file=source)
    for where, value in bad_numbers(doc):
        what = "a finite number" if isinstance(value, float) else f"an integer within ±2^53 ({MAX_PLAN_INT})"
        shown = value if isinstance(value, float) else f"{str(value)[:12]}… ({len(str(abs(value)))} digits)"
        raise InputError(f"expected {what}, got {shown}", file=source, field=where)
    try:
        return Plan.model_validate(doc)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        raise InputError(describe_error(errors[0], errors), file=source,
                         field=".".join(str(x) for x in errors[0]["loc"])) from None


def read_plan(path: str | Path) -> Plan:
    """Read and parse a plan JSON file (see :func:`parse_plan`); errors name the file and field."""
    try:
        doc = read_document(path)
    except InputError:
        raise
    except ValueError as e:  # e.g. an integer literal beyond Python's digit limit
        raise InputError(f"invalid JSON: {e}", file=str(path)) from None
    return parse_plan(doc, source=str(path))
