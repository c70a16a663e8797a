"""Deployable units: one per pool and domain group of a plan, with what an engine needs to run it.

A pool whose replicas sit in several domain groups becomes one unit per group,
so that each unit's node affinity can pin its replicas to the domains the plan
chose (``sites[].domains``). A unit runs on an engine when its chip is one an
engine targets and its stage is one the engines expose (aggregated, prefill,
decode); otherwise it is *vendor-neutral* and the reason says why.

Node labels the manifests select on (documented in ``docs/deploy.md``):

==============================  ===========================================
label                           value
==============================  ===========================================
``placement.io/chip``           the chip's catalogue name (``h100``)
``placement.io/domain-group``   the instance's domain group (``h100-pod``)
``placement.io/domain``         group and index of one scale-up domain
                                (``h100-pod-3``)
==============================  ===========================================

A value that is not a valid label value (longer than 63 characters, or ending
in ``-``, ``_`` or ``.``) is shortened with a hash suffix
(:func:`placement.deploy.names.label_value`); the folder's README lists the
domains' values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from placement.core.instance.errors import InputError
from placement.core.plans.plan import Plan, Pool, pool_kind
from placement.deploy.engines import CHIPS_PER_NODE, EngineLayout, target_engines
from placement.deploy.names import dns_name, label_value, require_unique

__all__ = ["LABEL_CHIP", "LABEL_DOMAIN", "LABEL_GROUP", "Unit", "replica_bounds", "unit_rate_rps", "units_of"]

LABEL_CHIP = "placement.io/chip"
LABEL_GROUP = "placement.io/domain-group"
LABEL_DOMAIN = "placement.io/domain"
#: Accelerators per node for a chip missing from :data:`CHIPS_PER_NODE` (an 8-GPU board).
DEFAULT_CHIPS_PER_NODE = 8


@dataclass
class Unit:
    """The replicas of one pool in one domain group."""

    name: str
    pool: Pool
    site: str
    replicas: int
    domains: list[int]
    role: str
    chips_per_node: int
    nodes: int
    pod_chips: int
    domain_chips: int
    vendor: str
    engines: tuple[str, ...]
    layout: EngineLayout | None
    neutral_reason: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def domain_values(self) -> list[str]:
        """Values of :data:`LABEL_DOMAIN` for the domains the plan chose."""
        return [label_value(f"{self.site}-{i}") for i in self.domains]

    @property
    def node_selector(self) -> dict[str, str]:
        """The labels every node of the unit carries: its chip and domain group."""
        return {LABEL_CHIP: label_value(self.pool.chip), LABEL_GROUP: label_value(self.site)}


_ROLE_OF_STAGE = {"aggregated": "aggregated", "prefill": "prefill", "decode": "decode"}


def _neutral_reason(pool: Pool, engines: tuple[str, ...], engine: str) -> str | None:
    if not engines:
        return (f"no engine among vLLM, SGLang and TensorRT-LLM targets {pool.chip}; it runs its vendor's own "
                "serving stack")
    if pool.stage not in _ROLE_OF_STAGE:
        what = {"decode-attention": "the attention half of an attention-FFN split",
                "decode-ffn": "the FFN half of an attention-FFN split",
                "draft": "a remote speculative-decoding draft"}.get(pool.stage, f"stage {pool.stage}")
        return f"{what}: no listed engine exposes it as a launch option"
    if engine not in engines:
        return f"{engine} does not target {pool.chip} (engines that do: {', '.join(engines)})"
    return None


def _domain_chips(pool: Pool) -> int:
    """Chips of one scale-up domain where the pool runs (its resource is ``chip@domain size``)."""
    size = pool.config.main.site_resource.rpartition("@")[2]
    return int(size) if size.isdigit() else pool.chips_per_replica


def _chip_vendor(chip: str) -> str:
    from topology.chips import load_chip_catalog

    spec = load_chip_catalog().get(chip)
    return spec.vendor if spec is not None else ""


def units_of(plan: Plan, engine: str, *, kv: str, draft_model: str | None = None,
             chips_per_node: dict[str, int] | None = None, max_tokens: dict[str, int] | None = None) -> list[Unit]:
    """The plan's pools split by domain group, each with its engine layout or the reason it has none.

    Each layout serves its class under the class's name; ``max_tokens`` (class -> the longest request's
    prefix + prompt + output) sets the engine's context limit (left to the engine's default without it)."""
    per_node = {**CHIPS_PER_NODE, **(chips_per_node or {})}
    units = []
    for pool in plan.pools:
        vendor = _chip_vendor(pool.chip)
        engines = target_engines(pool.chip, vendor)
        reason = _neutral_reason(pool, engines, engine)
        node = per_node.get(pool.chip, DEFAULT_CHIPS_PER_NODE)
        if reason is None and pool.chips_per_replica > node and pool.chips_per_replica % node:
            raise InputError(f"{pool.chip}: {node} chips per node do not divide a replica of pool {pool.id} "
                             f"({pool.chips_per_replica} chips); expected a divisor of {pool.chips_per_replica} "
                             f"or at least {pool.chips_per_replica}", field="--chips-per-node")
        nodes = max(1, -(-pool.chips_per_replica // node))
        pod_chips = min(pool.chips_per_replica, node)
        notes = []
        if pool.chip not in per_node and not reason:
            notes.append(f"{pool.chip}: {DEFAULT_CHIPS_PER_NODE} chips per node assumed "
                         "(give --chips-per-node chip=N)")
        draft = None
        tokens = None
        if pool_kind(pool.config.kind).drafts and pool.part == 0:
            draft, tokens = draft_model, pool.config.draft_tokens
            if pool.config.partner is not None:
                notes.append(f"the plan runs the draft on {pool.config.partner.chip}; the engines run it beside "
                             "the target, on these chips")
        layout = None if reason else EngineLayout(
            tp=pool.tp, pp=pool.pp, dp=pool.config.main.dp, ep=pool.ep, batch=pool.batch,
            chunk_tokens=pool.chunk_tokens, kv=kv, role=_ROLE_OF_STAGE[pool.stage], draft_model=draft,
            draft_tokens=tokens, nodes=nodes, served_name=pool.traffic_class,
            max_model_len=(max_tokens or {}).get(pool.traffic_class))
        for site in pool.sites:
            if site.replicas <= 0:
                continue
            units.append(Unit(
                name=dns_name(plan.instance, pool.id, site.site), pool=pool, site=site.site,
                replicas=site.replicas, domains=list(site.domains), role=_ROLE_OF_STAGE.get(pool.stage, pool.stage),
                chips_per_node=node, nodes=nodes, pod_chips=pod_chips, domain_chips=_domain_chips(pool),
                vendor=vendor, engines=engines,
                layout=layout, neutral_reason=reason, notes=list(notes)))
    require_unique(((u.name, f"pool {u.pool.id} in {u.site}") for u in units), "object name", "pools")
    return units


def unit_rate_rps(unit: Unit) -> float:
    """Requests/s the plan sends to a unit: its pool's load in the unit's domain group."""
    return sum(r for s in unit.pool.sites if s.site == unit.site for r in s.load_rps.values())


def replica_bounds(unit: Unit) -> tuple[int, int]:
    """(fewest, most) replicas the unit's planned load needs across its pool's capacity band — ⌈Σ_s λ_s / c_s⌉
    over the steps it serves, at each level (which end is the fast one depends on the stage's band) — the plan's
    own count when the pool has no band; the fewest never above, the most never below, the plan's count."""
    bands = unit.pool.bands
    loads = {st: r for s in unit.pool.sites if s.site == unit.site for st, r in s.load_rps.items() if r > 0}
    if bands is None or not loads or any(st not in bands.capacity_rps_per_replica for st in loads):
        return unit.replicas, unit.replicas

    def needed(level: float) -> int:
        i = bands.levels.index(level)
        caps = {st: bands.capacity_rps_per_replica[st][i] for st in loads}
        if any(c <= 0 for c in caps.values()):
            return unit.replicas
        return math.ceil(sum(r / caps[st] for st, r in loads.items()) * (1 - 1e-12))

    counts = [needed(level) for level in bands.levels]
    return min(max(1, min(counts)), unit.replicas), max(max(counts), unit.replicas)
