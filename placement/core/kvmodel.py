"""KV retention as a linear choice: session classes split over (tier, window) policies, exactly.

A class with ``sessions`` (:mod:`placement.core.sessions`) is served as
*outcome classes*, ordinary traffic classes the candidate generator and the
verifier already understand:

* ``<class>.kv-miss``: the prefix is recomputed — prompt = prefix + new tokens,
  nothing cached, the whole KV shipped to decode;
* ``<class>.kv-hbm``: the prefix is still in HBM — the class as the instance
  states it (cached prefix, ``prefix_cached_on_decode`` as given);
* ``<class>.kv-<tier>``: the prefix is read back from a host, flash or remote
  tier first — the TTFT gains prefix bytes / (chips × per-chip bandwidth) +
  latency (:func:`placement.core.evaluate.prefix_reload_s`), and the prefill
  ships the whole KV to decode.

A *policy* r = (tier, window T) keeps each call's KV in the tier for T; its hit
probability h_r and mean residence E[min(G, T)] follow from the gap
distribution. The MILP (:mod:`solvers.kv_rows`) chooses shares π_r of the
class's λ calls/s (Σ π_r = 1); the outcome classes are served at::

    λ_miss = λ·Σ_r π_r·(1 − h_r),    λ_tier = λ·Σ_{r∈tier} π_r·h_r

and every other row (coverage, replicas, transfers, links) is the MILP's as
for any class. The ``none`` policy (h = 0) is always offered, so ``none`` ⊆
``hbm-only`` ⊆ ``tiered`` and the optima are ordered the same way.

Tier rows, pooled over the domain groups that have the tier (the store is
shared through the fleet, as Dynamo KVBM's G2/G3 or Mooncake's pool; each
group gets a share of the use proportional to its capacity):

* capacity: Σ_r π_r·λ·E[min(G, T_r)]·B ≤ Σ_g capacity_g  (Little's law, B =
  prefix KV bytes of one session);
* bandwidth: Σ_r π_r·λ·h_r·B ≤ Σ_g chips_g × per-chip bandwidth (reloads);
* HBM: idle KV parked in HBM takes memory that batches could use, so it must
  fit the headroom (HBM − the configuration's memory per chip, × chips) of the
  replicas serving the ``kv-hbm`` class: Σ_r π_r·λ·E[min(G, T_r)]·B ≤
  Σ_c headroom_c·n_c — a row on the replicas, charged as capacity, not price;
* cost: the held bytes × the tier's $/GB-h (capacity-weighted over groups) per π.

Examples
--------
>>> from placement.core.kvmodel import outcome_name, POLICY_MODES
>>> outcome_name("agent", "miss"), POLICY_MODES
('agent.kv-miss', ('tiered', 'hbm-only', 'none'))
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from costmodels import kv_transfer_bytes
from costmodels.kvtiers import default_tier
from placement.core.context import Context
from placement.core.errors import InputError
from placement.core.schema import TrafficClass
from placement.core.sessions import RETENTION_WINDOWS_S, session_hit_and_residence

__all__ = [
    "POLICY_MODES",
    "RetentionPolicy",
    "TierGroups",
    "default_mode",
    "expand",
    "outcome_name",
    "policies_of",
    "prefix_bytes",
    "resolve_tiers",
    "session_classes",
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
    """B: KV bytes of one session's cached prefix (what a tier holds and a hit reloads)."""
    return float(kv_transfer_bytes(ctx.model, 0, cls.cached_prefix_tokens, ctx.instance.precision.kv))


@dataclass(frozen=True)
class TierGroups:
    """One tier over the domain groups that have it: per group (capacity bytes, bandwidth bytes/s over all
    its chips, per-chip bandwidth bytes/s, latency s, $/byte-h)."""

    tier: str
    groups: dict[str, tuple[float, float, float, float, float]]

    @property
    def capacity_bytes(self) -> float:
        return sum(g[0] for g in self.groups.values())

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return sum(g[1] for g in self.groups.values())

    @property
    def chip_bandwidth_bytes_per_s(self) -> float:
        """The slowest group's per-chip link: what one reload is promised."""
        return min(g[2] for g in self.groups.values())

    @property
    def latency_s(self) -> float:
        return max(g[3] for g in self.groups.values())

    @property
    def usd_per_byte_hour(self) -> float:
        """Capacity-weighted price: each group holds its capacity share of the tier."""
        cap = self.capacity_bytes
        return sum(g[0] * g[4] for g in self.groups.values()) / cap if cap else 0.0

    def share(self, group: str) -> float:
        """The group's share of the tier's use (its share of the capacity)."""
        return self.groups[group][0] / self.capacity_bytes if self.capacity_bytes else 0.0


def resolve_tiers(ctx: Context) -> dict[str, TierGroups]:
    """Every non-HBM tier of the fleet with its groups, missing fields from :mod:`costmodels.kvtiers`."""
    found: dict[str, dict[str, tuple]] = {}
    for gi, d in enumerate(ctx.instance.hardware.domains):
        site = ctx.sites[d.name]
        for ti, spec in enumerate(d.kv_tiers):
            base = default_tier(site.chip.name, spec.tier)
            cap_gb = spec.capacity_gb if spec.capacity_gb is not None else (
                base["capacity_gb_per_chip"] * site.chips_per_domain if "capacity_gb_per_chip" in base else None)
            values = {"capacity_gb": cap_gb,
                      "bandwidth_gb_per_s": spec.bandwidth_gb_per_s or base.get("bandwidth_gb_per_s"),
                      "latency_us": spec.latency_us if spec.latency_us is not None else base.get("latency_us"),
                      "usd_per_gb_hour": spec.usd_per_gb_hour if spec.usd_per_gb_hour is not None
                      else base.get("usd_per_gb_hour")}
            missing = [k for k, x in values.items() if x is None]
            if missing:
                raise InputError(f"no catalogue default for {spec.tier} on {site.chip.name}: give "
                                 f"{', '.join(missing)}", file=ctx.source,
                                 field=f"hardware.domains[{gi}].kv_tiers[{ti}]")
            if d.name in found.get(spec.tier, {}):
                raise InputError(f"tier {spec.tier} listed twice", file=ctx.source,
                                 field=f"hardware.domains[{gi}].kv_tiers[{ti}]")
            chip_bw = values["bandwidth_gb_per_s"] * 1e9
            found.setdefault(spec.tier, {})[d.name] = (
                values["capacity_gb"] * 1e9 * d.count, chip_bw * site.chips, chip_bw, values["latency_us"] * 1e-6,
                values["usd_per_gb_hour"] / 1e9)
    return {t: TierGroups(t, dict(sorted(g.items()))) for t, g in sorted(found.items())}


def default_mode(ctx: Context) -> str:
    """``tiered`` when a domain group has a tier beside HBM, else ``hbm-only``."""
    return "tiered" if any(d.kv_tiers for d in ctx.instance.hardware.domains) else "hbm-only"


@dataclass(frozen=True)
class RetentionPolicy:
    """Keep each call's KV of class ``cls`` in ``tier`` for ``window_s``: hit probability and mean residence."""

    cls: str
    tier: str
    window_s: float
    hit: float
    residence_s: float

    @property
    def name(self) -> str:
        return f"{self.cls}.{self.tier}" if self.tier == NONE else f"{self.cls}.{self.tier}-{self.window_s:g}s"

    @property
    def outcome(self) -> str:
        """The outcome class a hit goes to (``none`` never hits)."""
        return outcome_name(self.cls, self.tier)


def reload_s(tier: TierGroups, nbytes: float) -> float:
    """One prefix read back over one chip's link: latency + bytes / per-chip bandwidth."""
    return tier.latency_s + nbytes / tier.chip_bandwidth_bytes_per_s


def policies_of(ctx: Context, cls: TrafficClass, mode: str, tiers: dict[str, TierGroups]) -> list[RetentionPolicy]:
    """The policies offered to ``cls`` under ``mode``: ``none``, then (tier, window) on the window grid.

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
            out.append(RetentionPolicy(cls.name, tier, w, hit, resid))
    return out


def outcome_class(ctx: Context, cls: TrafficClass, outcome: str, tiers: dict[str, TierGroups],
                  rate_rps: float) -> TrafficClass:
    """The traffic class of one outcome (module docstring) at ``rate_rps``."""
    common = {"name": outcome_name(cls.name, outcome), "rate_rps": rate_rps, "sessions": None}
    if outcome in ("miss", NONE):
        return cls.model_copy(update={**common, "name": outcome_name(cls.name, "miss"),
                                      "prompt_tokens": cls.prompt_tokens + cls.cached_prefix_tokens,
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
