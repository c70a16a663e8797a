"""KV retention as a linear choice: session classes split over (tier, window) policies, exactly.

A class with ``sessions`` (:mod:`placement.core.instance.sessions`) is served as
*outcome classes*, ordinary traffic classes the candidate generator and the
verifier already understand:

* ``<class>.kv-miss``: the prefix is recomputed — prompt = prefix + new tokens,
  nothing cached, the whole KV shipped to decode;
* ``<class>.kv-hbm``: the prefix is still in HBM — the class as the instance
  states it (cached prefix, ``prefix_cached_on_decode`` as given);
* ``<class>.kv-<tier>``: the prefix is read back from a host, flash or remote
  tier first — the TTFT gains prefix bytes / (chips × per-chip bandwidth) +
  latency (:func:`placement.core.replicas.evaluate.prefix_reload_s`), and the prefill
  ships the whole KV to decode.

A *policy* r = (tier, window T) keeps each call's KV in the tier for T; its hit
probability h_r and mean residence E[min(G, T)] follow from the gap
distribution. The MILP (:mod:`solvers.kv_rows`) chooses shares π_r of the
class's λ calls/s (Σ π_r = 1); the outcome classes are served at::

    λ_miss = λ·Σ_r π_r·(1 − h_r),    λ_tier = λ·Σ_{r∈tier} π_r·h_r

and every other row (coverage, replicas, transfers, links) is the MILP's as
for any class. The ``none`` policy (h = 0) is always offered, so ``none`` ⊆
``hbm-only`` ⊆ ``tiered`` and the optima are ordered the same way.

A tier other than HBM lives in each domain group that lists it (host memory
and local flash are in the group's hosts; a remote store is reached from the
group over the fleet's links), so a (tier, window) policy is offered per
group g: π_{r,g} is the share of the class's sessions pinned to group g whose
KV waits there. Their hits must be served by pools placed in g — a row ties
the first step's load of the tier's outcome class at g's sites to
λ·Σ_r h_r·π_{r,g} (:class:`solvers.problem.PolicyLoad`) — and per tier and group:

* capacity: Σ_r π_{r,g}·λ·E[min(G, T_r)]·B ≤ capacity_g (Little's law, B =
  KV bytes of the session's mean prefix, :func:`~placement.core.instance.sessions.mean_prefix_tokens`);
* read bandwidth: Σ_r π_{r,g}·λ·h_r·B ≤ chips_g × per-chip bandwidth (reloads);
* write bandwidth: Σ_r π_{r,g}·λ·(Δ + (1 − h_r)·B) ≤ chips_g × per-chip write
  bandwidth: after every call its new tokens' KV Δ is offloaded, and after a
  miss the whole recomputed prefix as well (a hit's prefix is still there);
* remote: the reloads λ·h_r·B·π_{r,g} flow from the store's node to g and the
  offloads back, on the lowest-latency paths of the fleet graph, and take their
  share of every link's capacity in the MILP's edge rows
  (:class:`solvers.problem.PolicyFlow`);
* HBM: idle KV parked in HBM takes memory that batches could use, so it must
  fit the headroom (HBM − the configuration's memory per chip, × chips) of the
  replicas serving the ``kv-hbm`` class: Σ_r π_r·λ·E[min(G, T_r)]·B ≤
  Σ_c headroom_c·n_c — a row on the replicas, charged as capacity, not price;
* cost: the held bytes × the group's tier $/GB-h per π.

Examples
--------
>>> from placement.core.kv.kvmodel import outcome_name, POLICY_MODES
>>> outcome_name("agent", "miss"), POLICY_MODES
('agent.kv-miss', ('tiered', 'hbm-only', 'none'))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from costmodels import kv_transfer_bytes
from costmodels.kvtiers import default_tier
from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.schema import TrafficClass
from placement.core.instance.sessions import (
    RETENTION_WINDOWS_S,
    mean_prefix_tokens,
    session_hit_and_residence,
)

__all__ = [
    "POLICY_MODES",
    "GroupTier",
    "RetentionPolicy",
    "TierGroups",
    "default_mode",
    "expand",
    "group_hit_rates",
    "outcome_name",
    "policies_of",
    "prefix_bytes",
    "resolve_tiers",
    "session_classes",
    "written_bytes",
]

#: ``--kv-policy`` values: every tier, HBM only, or recompute every prefix.
POLICY_MODES = ("tiered", "hbm-only", "none")

#: Placeholder for the policy "recompute every prefix".
NONE = "none"

#: Rate (req/s) below which an outcome class counts as not served (as the plan writer and verifier do).
SERVED_RPS = 1e-12


def outcome_name(cls_name: str, outcome: str) -> str:
    """The outcome class of ``cls_name``: ``miss``, ``hbm`` or a tier."""
    return f"{cls_name}.kv-{outcome}"


def session_classes(ctx: Context) -> list[TrafficClass]:
    """The classes of the instance that describe sessions."""
    return [c for c in ctx.instance.workload.classes if c.sessions is not None]


def prefix_bytes(ctx: Context, cls: TrafficClass) -> float:
    """B: KV bytes of one session's mean prefix (what a tier holds and a hit reloads)."""
    return float(kv_transfer_bytes(ctx.model, 0, session_prefix_tokens(cls), ctx.instance.precision.kv))


def session_prefix_tokens(cls: TrafficClass) -> float:
    """The prefix a call of ``cls`` reads on average: its stated prefix, grown over the session if it grows."""
    if cls.sessions is None:
        return float(cls.cached_prefix_tokens)
    return mean_prefix_tokens(cls.cached_prefix_tokens, cls.sessions)


def written_bytes(ctx: Context, cls: TrafficClass, hit: float) -> float:
    """Bytes offloaded to a tier per call: the new tokens' KV Δ, and after a miss the recomputed prefix B too."""
    delta = float(kv_transfer_bytes(ctx.model, 0, cls.prompt_tokens + cls.output_tokens, ctx.instance.precision.kv))
    return delta + (1.0 - hit) * prefix_bytes(ctx, cls)


@dataclass(frozen=True)
class GroupTier:
    """One tier in one domain group: bytes, bytes/s over all its chips, one chip's read link, latency, price."""

    capacity_bytes: float
    bandwidth_bytes_per_s: float
    chip_bandwidth_bytes_per_s: float
    write_bytes_per_s: float
    latency_s: float
    usd_per_byte_hour: float
    #: The store's fleet node (remote tier): reloads and offloads cross the links between it and the group.
    node: str | None = None


@dataclass(frozen=True)
class TierGroups:
    """One tier over the domain groups that have it."""

    tier: str
    groups: dict[str, GroupTier]

    @property
    def chip_bandwidth_bytes_per_s(self) -> float:
        """The slowest group's per-chip link: what one reload is promised."""
        return min(g.chip_bandwidth_bytes_per_s for g in self.groups.values())

    @property
    def latency_s(self) -> float:
        return max(g.latency_s for g in self.groups.values())

    @property
    def usd_per_byte_hour(self) -> float:
        """One price for the tier (``placement kv-prices``): its groups' prices weighted by their capacity."""
        cap = sum(g.capacity_bytes for g in self.groups.values())
        return sum(g.capacity_bytes * g.usd_per_byte_hour for g in self.groups.values()) / cap if cap else 0.0


def resolve_tiers(ctx: Context) -> dict[str, TierGroups]:
    """Every non-HBM tier of the fleet with its groups, missing fields from :mod:`costmodels.kvtiers`."""
    found: dict[str, dict[str, GroupTier]] = {}
    for gi, d in enumerate(ctx.instance.hardware.domains):
        site = ctx.sites[d.name]
        for ti, spec in enumerate(d.kv_tiers):
            where = f"hardware.domains[{gi}].kv_tiers[{ti}]"
            base = default_tier(site.chip.name, spec.tier)
            cap_gb = spec.capacity_gb if spec.capacity_gb is not None else (
                base["capacity_gb_per_chip"] * site.chips_per_domain if "capacity_gb_per_chip" in base else None)
            read = spec.bandwidth_gb_per_s or base.get("bandwidth_gb_per_s")
            values = {"capacity_gb": cap_gb, "bandwidth_gb_per_s": read,
                      "write_gb_per_s": spec.write_gb_per_s or base.get("write_gb_per_s", read),
                      "latency_us": spec.latency_us if spec.latency_us is not None else base.get("latency_us"),
                      "usd_per_gb_hour": spec.usd_per_gb_hour if spec.usd_per_gb_hour is not None
                      else base.get("usd_per_gb_hour")}
            missing = [k for k, x in values.items() if x is None]
            if missing:
                raise InputError(f"no catalogue default for {spec.tier} on {site.chip.name}: give "
                                 f"{', '.join(missing)}", file=ctx.source, field=where)
            if d.name in found.get(spec.tier, {}):
                raise InputError(f"tier {spec.tier} listed twice", file=ctx.source, field=where)
            if spec.node is not None and (spec.tier != "remote" or spec.node not in ctx.graph):
                raise InputError(f"node {spec.node!r}: only a remote tier names a node, and it must be a node of "
                                 "the fleet (a switch or a domain group)", file=ctx.source, field=f"{where}.node")
            if spec.node is not None and ctx.routing.path(spec.node, d.name) is None:
                raise InputError(f"no path between the store's node {spec.node!r} and {d.name!r}",
                                 file=ctx.source, field=f"{where}.node")
            chip_bw = values["bandwidth_gb_per_s"] * 1e9
            found.setdefault(spec.tier, {})[d.name] = GroupTier(
                capacity_bytes=values["capacity_gb"] * 1e9 * d.count, bandwidth_bytes_per_s=chip_bw * site.chips,
                chip_bandwidth_bytes_per_s=chip_bw, write_bytes_per_s=values["write_gb_per_s"] * 1e9 * site.chips,
                latency_s=values["latency_us"] * 1e-6, usd_per_byte_hour=values["usd_per_gb_hour"] / 1e9,
                node=spec.node)
    return {t: TierGroups(t, dict(sorted(g.items()))) for t, g in sorted(found.items())}


def default_mode(ctx: Context) -> str:
    """``tiered`` when a domain group has a tier beside HBM, else ``hbm-only``."""
    return "tiered" if any(d.kv_tiers for d in ctx.instance.hardware.domains) else "hbm-only"


@dataclass(frozen=True)
class RetentionPolicy:
    """Keep each call's KV of class ``cls`` in ``tier`` (of domain group ``group``; none for HBM) for
    ``window_s``: hit probability and mean residence."""

    cls: str
    tier: str
    window_s: float
    hit: float
    residence_s: float
    group: str = ""

    @property
    def name(self) -> str:
        if self.tier == NONE:
            return f"{self.cls}.{self.tier}"
        return f"{self.cls}.{self.tier}-{self.window_s:g}s" + (f"@{self.group}" if self.group else "")

    @property
    def outcome(self) -> str:
        """The outcome class a hit goes to (``none`` never hits)."""
        return outcome_name(self.cls, self.tier)


def reload_s(tier: TierGroups, nbytes: float) -> float:
    """One prefix read back over one chip's link: latency + bytes / per-chip bandwidth."""
    return tier.latency_s + nbytes / tier.chip_bandwidth_bytes_per_s


def policies_of(ctx: Context, cls: TrafficClass, mode: str, tiers: dict[str, TierGroups]) -> list[RetentionPolicy]:
    """The policies offered to ``cls`` under ``mode``: ``none``, then (tier, window) on the window grid, per
    domain group that has the tier (HBM: one, the replicas serving its hits hold it).

    A tier whose reload alone would take the class's whole TTFT is not offered.
    """
    out = [RetentionPolicy(cls.name, NONE, 0.0, 0.0, 0.0)]
    names = [] if mode == "none" else ["hbm"] if mode == "hbm-only" else ["hbm", *tiers]
    nbytes = prefix_bytes(ctx, cls)
    for tier in names:
        if tier != "hbm" and reload_s(tiers[tier], nbytes) >= cls.ttft_s:
            continue
        for w in RETENTION_WINDOWS_S:
            hit, resid = session_hit_and_residence(cls.sessions, w)
            for g in [""] if tier == "hbm" else tiers[tier].groups:
                out.append(RetentionPolicy(cls.name, tier, w, hit, resid, g))
    return out


def outcome_class(ctx: Context, cls: TrafficClass, outcome: str, tiers: dict[str, TierGroups],
                  rate_rps: float) -> TrafficClass:
    """The traffic class of one outcome (module docstring) at ``rate_rps``."""
    prefix = round(session_prefix_tokens(cls))
    common = {"name": outcome_name(cls.name, outcome), "rate_rps": rate_rps, "sessions": None,
              "cached_prefix_tokens": prefix}
    if outcome in ("miss", NONE):
        return cls.model_copy(update={**common, "name": outcome_name(cls.name, "miss"),
                                      "prompt_tokens": cls.prompt_tokens + prefix,
                                      "cached_prefix_tokens": 0, "prefix_cached_on_decode": False})
    if outcome == "hbm":
        return cls.model_copy(update=common)
    t = tiers[outcome]
    return cls.model_copy(update={**common, "prefix_cached_on_decode": False,
                                  "prefix_reload_gb_per_s": t.chip_bandwidth_bytes_per_s / 1e9,
                                  "prefix_reload_latency_us": t.latency_s * 1e6})


def outcome_rates(policies: list[RetentionPolicy], shares: dict[str, float], rate_rps: float) -> dict[str, float]:
    """Rate of each outcome (``miss`` and each tier) of a class at λ = ``rate_rps`` under policy shares π.

    Examples
    --------
    >>> ps = [RetentionPolicy("a", "none", 0, 0, 0), RetentionPolicy("a", "hbm", 60, 0.8, 20)]
    >>> outcome_rates(ps, {"a.none": 0.5, "a.hbm-60s": 0.5}, 10.0)
    {'hbm': 4.0, 'miss': 6.0}
    """
    out: dict[str, float] = {}
    for p in policies:
        share = shares.get(p.name, 0.0)
        if share <= 0:
            continue
        if p.hit > 0:
            out[p.tier] = out.get(p.tier, 0.0) + rate_rps * share * p.hit
        if p.hit < 1:
            out["miss"] = out.get("miss", 0.0) + rate_rps * share * (1.0 - p.hit)
    return dict(sorted(out.items()))


def group_hit_rates(policies: list[RetentionPolicy], shares: dict[str, float],
                    rate_rps: float) -> dict[tuple[str, str], float]:
    """Hits per second of each (tier, domain group) under policy shares π: where the hits must be served.

    Examples
    --------
    >>> ps = [RetentionPolicy("a", "host", 60, 0.8, 20, "g1"), RetentionPolicy("a", "host", 60, 0.8, 20, "g2")]
    >>> group_hit_rates(ps, {"a.host-60s@g1": 0.25, "a.host-60s@g2": 0.75}, 10.0)
    {('host', 'g1'): 2.0, ('host', 'g2'): 6.0}
    """
    out: dict[tuple[str, str], float] = {}
    for p in policies:
        share = shares.get(p.name, 0.0)
        if share > 0 and p.group and p.hit > 0:
            out[p.tier, p.group] = out.get((p.tier, p.group), 0.0) + rate_rps * share * p.hit
    return dict(sorted(out.items()))


def outcomes_offered(policies: list[RetentionPolicy]) -> list[str]:
    """The outcome classes some policy may send calls to."""
    return sorted({"miss"} | {p.tier for p in policies if p.hit > 0})


@dataclass
class Expansion:
    """The instance with each session class replaced by its outcome classes."""

    context: Context
    mode: str
    tiers: dict[str, TierGroups]
    policies: dict[str, list[RetentionPolicy]] = field(default_factory=dict)


def expand(ctx: Context, mode: str | None = None, shares: dict[str, dict[str, float]] | None = None) -> Expansion:
    """Replace every session class by its outcome classes.

    Without ``shares`` (solving) every outcome class some policy of ``mode`` can feed gets the class's whole
    rate λ, the most it can carry (the MILP decides the rest). With ``shares`` (class -> policy -> π, verifying)
    each gets λ·Σ π·h as the plan's shares give, and outcomes of rate 0 are left out.
    """
    mode = default_mode(ctx) if mode is None else mode
    if mode not in POLICY_MODES:
        raise InputError(f"expected one of {', '.join(POLICY_MODES)}, got {mode!r}", field="--kv-policy")
    tiers = resolve_tiers(ctx) if mode == "tiered" else {}
    names = {c.name for c in ctx.instance.workload.classes}
    classes: list[TrafficClass] = []
    out = Expansion(ctx, mode, tiers)
    for i, cls in enumerate(ctx.instance.workload.classes):
        if cls.sessions is None:
            classes.append(cls)
            continue
        if cls.cached_prefix_tokens == 0:
            raise InputError("a class with sessions needs the prefix it re-reads: cached_prefix_tokens > 0",
                             file=ctx.source, field=f"workload.classes[{i}].cached_prefix_tokens")
        ps = out.policies[cls.name] = policies_of(ctx, cls, mode, tiers)
        rates = ({o: cls.rate_rps for o in outcomes_offered(ps)} if shares is None
                 else outcome_rates(ps, shares.get(cls.name, {}), cls.rate_rps))
        for outcome, rate in rates.items():
            if rate <= SERVED_RPS:  # as the plan writer: a step below this carries nothing
                continue
            virtual = outcome_class(ctx, cls, outcome, tiers, rate)
            if virtual.name in names:
                raise InputError(f"class name {virtual.name!r} is taken: it names an outcome of class {cls.name}",
                                 file=ctx.source, field=f"workload.classes[{i}].name")
            classes.append(virtual)
    inst = ctx.instance.model_copy(update={"workload": ctx.instance.workload.model_copy(update={"classes": classes})})
    out.context = dataclasses.replace(ctx, instance=inst, classes={c.name: c for c in classes})
    return out
