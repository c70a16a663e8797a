"""Candidate replica configurations and the solver-neutral problem they feed.

For every class, serving mode, stage and chip type this enumerates replica
configurations — chips per replica, TP/EP/PP layout, batch, prefill chunk,
micro-batches, the partner chip of a paired replica and the latency level of
the link between the pair — evaluates each with :mod:`placement.core.evaluate`,
drops those that miss an SLO or do not fit, and drops dominated ones
(:mod:`solvers.dominance`):

    X is dominated by Y when m copies of Y fit in X's chips (part by part, m a
    whole number) and serve at least as much, with no more pair traffic and
    no stricter latency limit.

Replica sizes per chip type form a divisibility chain with the domain size
(powers of two dividing the domain, then whole-domain multiples doubling), so
the solver's aggregate chip constraint packs exactly (see
:func:`solvers.milp.check_packable`).

Serving modes become routes (DESIGN §4): ``aggregated`` (one step), ``pd``
(prefill → decode, KV crosses the network), ``pd-af`` (prefill → paired
attention/FFN decode) and, with a draft model, ``pd+draft`` (prefill →
speculative decode, draft co-located or on a remote chip). Roofline columns
serve one class each — a batch that meets one class's TPOT need not meet it
when mixed with longer contexts — while measured (Mélange-style) capacities mix
classes linearly on one replica as the measurements were taken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from costmodels import kv_transfer_bytes
from placement.core.context import Context, SiteInfo
from placement.core.evaluate import PartLayout, PoolConfig, evaluate
from placement.core.schema import TrafficClass
from solvers.dominance import Columns, Row, dominates, undominated
from solvers.problem import Column, Demand, Edge, Part, Problem, Route, Site, Transfer
from topology.graph import path_latency_s

__all__ = ["BATCHES", "CHUNKS", "Candidates", "build_problem", "generate", "replica_sizes"]

BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096], dtype=float)
PREFILL_BATCHES = np.array([1.0])
CHUNKS = (512, 2048, 8192)
#: Ping-pong depth of attention–FFN replicas (MegaScale-Infer uses 2–3).
AF_MICRO_BATCHES = 2
#: Largest replica considered, as a multiple of the smallest one that holds the weights.
SIZE_HEADROOM = 8


@dataclass
class Candidates:
    """Columns kept, their configurations, and how many were generated."""

    configs: dict[str, PoolConfig] = field(default_factory=dict)
    columns: list[Column] = field(default_factory=list)
    generated: int = 0
    feasible: int = 0
    #: Cost-model results shared while generating (see :func:`placement.core.evaluate.evaluate`).
    memo: dict = field(default_factory=dict, repr=False)

    @property
    def kept(self) -> int:
        return len(self.columns)


def replica_sizes(domain_chips: int, max_chips: int) -> list[int]:
    """Chips per replica: powers of two dividing the domain, then the domain doubling.

    Examples
    --------
    >>> replica_sizes(72, 500)
    [1, 2, 4, 8, 72, 144, 288]
    >>> replica_sizes(1, 4)
    [1, 2, 4]
    """
    sizes = [1 << i for i in range(20) if (1 << i) <= domain_chips and domain_chips % (1 << i) == 0]
    if sizes[-1] != domain_chips:
        sizes.append(domain_chips)
    s = domain_chips * 2
    while s <= max_chips:
        sizes.append(s)
        s *= 2
    return sizes


def _layouts(ctx: Context, site: SiteInfo, chips: int, stage: str) -> list[tuple[int, int, int]]:
    """(tp, ep, pp) with tp·pp = chips, tp inside one domain and dividing the heads."""
    m = ctx.model
    out = []
    tp = 1
    while tp <= min(chips, site.chips_per_domain):
        pp = chips // tp
        if chips % tp == 0 and m.attention.heads % tp == 0 and pp <= m.layers:
            eps = [1]
            if m.moe is not None and tp > 1 and m.moe.experts % tp == 0 and stage != "decode-attention":
                eps.append(tp)
            out.extend((tp, ep, pp) for ep in eps)
        tp *= 2
    return out


def _min_chips_for_weights(ctx: Context, site: SiteInfo, weight_bytes: float) -> int:
    return max(1, math.ceil(weight_bytes / site.chip.memory_bytes))


def _parts(ctx: Context, site: SiteInfo, stage: str, weight_bytes: float, memo: dict | None = None) -> list[PartLayout]:
    """Replica layouts of ``stage`` on ``site``'s resource (kept in ``memo``: every class asks again)."""
    key = ("parts", site.resource, stage, weight_bytes)
    if memo is not None and key in memo:
        return memo[key]
    need = _min_chips_for_weights(ctx, site, weight_bytes)
    fleet_chips = sum(s.chips for s in ctx.sites.values() if s.resource == site.resource)
    max_chips = min(fleet_chips, need * SIZE_HEADROOM)
    out = []
    for g in replica_sizes(site.chips_per_domain, max(max_chips, site.chips_per_domain)):
        if g < need:
            continue
        for tp, ep, pp in _layouts(ctx, site, g, stage):
            out.append(PartLayout(chip=site.chip.name, site_resource=site.resource, chips=g, tp=tp, ep=ep, pp=pp))
    if memo is not None:
        memo[key] = out
    return out


def _attention_parts(ctx: Context, site: SiteInfo, weight_bytes: float) -> list[PartLayout]:
    """Attention halves: dp groups of tp chips filling a chain size (no pipeline)."""
    need = _min_chips_for_weights(ctx, site, weight_bytes)
    fleet_chips = sum(s.chips for s in ctx.sites.values() if s.resource == site.resource)
    out = []
    for g in replica_sizes(site.chips_per_domain, max(min(fleet_chips, site.chips_per_domain * 4),
                                                      site.chips_per_domain)):
        tp = 1
        while tp <= min(g, site.chips_per_domain):
            if g % tp == 0 and tp >= need and ctx.model.attention.heads % tp == 0:
                out.append(PartLayout(chip=site.chip.name, site_resource=site.resource, chips=g, tp=tp, ep=1,
                                      pp=1, dp=g // tp))
            tp *= 2
    return out


def _pair_latencies(ctx: Context, res_a: str, res_b: str, memo: dict | None = None) -> list[float]:
    """Distinct one-way path latencies between sites of two resources (finite only).

    ``memo`` keeps them per resource pair: every class asks again, and each
    asks for a path between every two sites.
    """
    key = ("pair latencies", res_a, res_b)
    if memo is not None and key in memo:
        return memo[key]
    lats = set()
    for a, sa in ctx.sites.items():
        for b, sb in ctx.sites.items():
            if sa.resource == res_a and sb.resource == res_b:
                lat = path_latency_s(ctx.graph, a, b)
                if math.isfinite(lat):
                    lats.add(round(lat, 12))
    if memo is not None:
        memo[key] = sorted(lats)
    return sorted(lats)


@dataclass
class _Pending:
    """A feasible configuration awaiting pruning: ``cfg`` at batch ``batch`` (one copy made for those kept)."""

    name: str
    cfg: PoolConfig
    cls: str
    steps: list[str]
    capacity: float
    units: tuple[int, ...]
    pair_bytes_per_s: float = 0.0
    pair_max_latency_s: float = float("inf")
    batch: int = 1

    def config(self) -> PoolConfig:
        return self.cfg.model_copy(update={"batch": self.batch})


def _grid(out: Candidates, pend: list[_Pending], ctx: Context, base: PoolConfig, cls: TrafficClass,
          steps: list[str], batches: np.ndarray, latency: float = 0.0, with_latency: bool = False) -> None:
    perf = evaluate(ctx, base, cls, batch=batches, pair_latency_s=latency, memo=out.memo)
    ok = perf.ok(cls)
    out.generated += len(batches)
    out.feasible += int(ok.sum())
    units = (base.main.chips,) + ((base.partner.chips,) if base.partner else ())
    head, tail = _name_around_batch(base, latency if with_latency else None)
    for i in np.flatnonzero(ok):
        batch = int(batches[i])
        pend.append(_Pending(f"{head}|b{batch}{tail}", base, cls.name, steps,
                             float(perf.capacity_rps[i]), units,
                             float(perf.pair_bytes_per_s[i]) if base.partner else 0.0,
                             latency if with_latency else float("inf"), batch))


def _part_tag(p: PartLayout) -> str:
    dp = f"-dp{p.dp}" if p.dp > 1 else ""
    return f"{p.site_resource}-g{p.chips}{dp}-tp{p.tp}-ep{p.ep}-pp{p.pp}"


def _column_name(cfg: PoolConfig, batch: int, latency: float | None) -> str:
    """``class|kind|main[|partner]|b<batch>[|c<chunk>][|k<draft>][|l<latency>us]``."""
    head, tail = _name_around_batch(cfg, latency)
    return f"{head}|b{batch}{tail}"


def _name_around_batch(cfg: PoolConfig, latency: float | None) -> tuple[str, str]:
    """The column name before and after its batch field (one grid shares them)."""
    head = [cfg.traffic_class, cfg.kind, _part_tag(cfg.main)] + ([_part_tag(cfg.partner)] if cfg.partner else [])
    tail = ([f"c{cfg.chunk_tokens}"] if cfg.chunk_tokens else []) + ([f"k{cfg.draft_tokens}"] if cfg.draft_tokens else [])
    if latency is not None:
        tail.append(f"l{latency * 1e6:.3g}us")
    return "|".join(head), "".join(f"|{t}" for t in tail)


def _dominated(x: _Pending, y: _Pending) -> bool:
    """Whether y dominates x (:func:`solvers.dominance.dominates`; equal columns: the first by name stays)."""
    def row(p: _Pending, other: _Pending) -> Row:
        return Row(p.units, (p.capacity,), (p.pair_bytes_per_s,), (p.pair_max_latency_s,), int(p.name > other.name))

    return x is not y and dominates(row(y, x), row(x, y))


def _columns(group: list[_Pending]) -> Columns:
    """The numbers dominance compares, ranked by name (equal columns: the first by name stays)."""
    rank = {name: r for r, name in enumerate(sorted(p.name for p in group))}
    return Columns.of(units=[p.units for p in group], supply=[[p.capacity] for p in group],
                      load=[[p.pair_bytes_per_s] for p in group], limit=[[p.pair_max_latency_s] for p in group],
                      rank=[rank[p.name] for p in group])


#: Candidates tested against the survivors at once (see :func:`solvers.dominance.undominated`).
PRUNE_BLOCK = 64


def prune_groups(pend: list[_Pending]) -> list[list[_Pending]]:
    """Candidates that may dominate each other (class, kind, resources), each best capacity per chip
    first (a few strong columns prune most of the rest quickly), then by name."""
    groups: dict[tuple, list[_Pending]] = {}
    for p in pend:
        key = (p.cls, p.cfg.kind, p.cfg.main.site_resource, p.cfg.partner.site_resource if p.cfg.partner else None)
        groups.setdefault(key, []).append(p)
    return [sorted(sorted(groups[key], key=lambda p: p.name), key=lambda p: -p.capacity / sum(p.units))
            for key in sorted(groups, key=str)]


def _prune(pend: list[_Pending]) -> list[_Pending]:
    """The undominated candidates of every group (:func:`solvers.dominance.undominated`), by name."""
    kept = []
    for g in prune_groups(pend):
        kept.extend(g[i] for i in undominated(_columns(g), block=PRUNE_BLOCK))
    return sorted(kept, key=lambda p: p.name)


def _steps(ctx: Context, cls: TrafficClass) -> dict[str, list[str]]:
    """Route name -> its step names, for the modes the instance allows."""
    k = cls.name
    modes = ctx.instance.modes
    routes: dict[str, list[str]] = {}
    if "aggregated" in modes:
        routes[f"{k}|aggregated"] = [f"{k}|aggregated|serve"]
    if not ctx.instance.only_measured:
        if "pd" in modes:
            routes[f"{k}|pd"] = [f"{k}|pd|prefill", f"{k}|pd|decode"]
            if ctx.draft_model is not None:
                routes[f"{k}|pd+draft"] = [f"{k}|pd+draft|prefill", f"{k}|pd+draft|decode"]
        if "pd-af" in modes:
            routes[f"{k}|pd-af"] = [f"{k}|pd-af|prefill", f"{k}|pd-af|decode"]
    return routes


def generate(ctx: Context) -> Candidates:
    """Enumerate, evaluate and prune every replica configuration of the instance."""
    out = Candidates()
    pend: list[_Pending] = []
    resources = ctx.resources()
    m, prec = ctx.model, ctx.instance.precision
    w_all = m.weight_bytes(prec.weights)
    w_attn = m.attention_params * (w_all / m.total_params) + m.embedding_params * (w_all / m.total_params)
    w_ffn = m.ffn_params * (w_all / m.total_params)
    draft = ctx.instance.draft
    for cls in ctx.instance.workload.classes:
        routes = _steps(ctx, cls)
        prefill_steps = [steps[0] for steps in routes.values() if len(steps) == 2]
        agg = [steps[0] for steps in routes.values() if len(steps) == 1]
        pd = routes.get(f"{cls.name}|pd", [None, None])[1]
        spec = routes.get(f"{cls.name}|pd+draft", [None, None])[1]
        af = routes.get(f"{cls.name}|pd-af", [None, None])[1]
        if ctx.instance.only_measured:
            continue
        for res, site in resources.items():
            for part in _parts(ctx, site, "prefill", w_all, out.memo):
                if prefill_steps:
                    base = PoolConfig(kind="prefill", traffic_class=cls.name, main=part, batch=1)
                    _grid(out, pend, ctx, base, cls, prefill_steps, PREFILL_BATCHES)
                if pd:
                    base = PoolConfig(kind="decode", traffic_class=cls.name, main=part, batch=1)
                    _grid(out, pend, ctx, base, cls, [pd], BATCHES)
                if agg:
                    for chunk in CHUNKS:
                        base = PoolConfig(kind="aggregated", traffic_class=cls.name, main=part, batch=1,
                                          chunk_tokens=chunk)
                        _grid(out, pend, ctx, base, cls, agg, BATCHES)
                if spec and draft.placement in ("any", "colocated"):
                    for gamma in range(1, draft.gamma + 1):
                        base = PoolConfig(kind="decode-spec", traffic_class=cls.name, main=part, batch=1,
                                          draft_tokens=gamma)
                        _grid(out, pend, ctx, base, cls, [spec], BATCHES)
            if spec and draft.placement in ("any", "remote"):
                dw = ctx.draft_model.weight_bytes(prec.weights)
                for res_d, site_d in resources.items():
                    if res_d == res:
                        continue
                    lats = _pair_latencies(ctx, res, res_d, out.memo)
                    drafts = _parts(ctx, site_d, "decode", dw, out.memo)
                    # A draft model is small: replicas beyond twice the smallest that holds it add nothing.
                    drafts = [d for d in drafts if d.chips <= 2 * drafts[0].chips] if drafts else []
                    for part, dpart, gamma in product(_parts(ctx, site, "decode", w_all, out.memo), drafts,
                                                      range(1, draft.gamma + 1)):
                        base = PoolConfig(kind="decode-spec", traffic_class=cls.name, main=part, partner=dpart,
                                          batch=1, draft_tokens=gamma)
                        for lat in lats:
                            _grid(out, pend, ctx, base, cls, [spec], BATCHES, lat, with_latency=True)
            if af:
                for res_f, site_f in resources.items():
                    if res_f == res:
                        continue
                    lats = _pair_latencies(ctx, res, res_f, out.memo)
                    for apart, fpart in product(_attention_parts(ctx, site, w_attn),
                                                _parts(ctx, site_f, "decode-ffn", w_ffn, out.memo)):
                        base = PoolConfig(kind="decode-af", traffic_class=cls.name, main=apart, partner=fpart,
                                          batch=1, micro_batches=AF_MICRO_BATCHES)
                        for lat in lats:
                            _grid(out, pend, ctx, base, cls, [af], BATCHES, lat, with_latency=True)
    for p in _prune(pend):
        out.configs[p.name] = p.config()
        out.columns.append(Column(
            name=p.name,
            parts=[Part(resource=p.cfg.main.site_resource, units=p.cfg.main.chips)]
            + ([Part(resource=p.cfg.partner.site_resource, units=p.cfg.partner.chips)] if p.cfg.partner else []),
            capacity={s: p.capacity for s in p.steps},
            pair_bytes_per_s=p.pair_bytes_per_s,
            pair_max_latency_s=p.pair_max_latency_s,
        ))
    _measured_columns(ctx, out)
    out.memo.clear()  # only needed while generating; plans and executors need not carry it
    return out


def _measured_columns(ctx: Context, out: Candidates) -> None:
    """One column per (chip, chips) measured, serving every class it was measured for."""
    if "aggregated" not in ctx.instance.modes:
        return
    by_chip: dict[tuple[str, int], dict[str, float]] = {}
    for mc in ctx.instance.measured_capacity:
        by_chip.setdefault((mc.chip, mc.chips), {})[f"{mc.traffic_class}|aggregated|serve"] = mc.max_rps_per_replica
    for (chip, chips), caps in sorted(by_chip.items()):
        res = next(s.resource for _, s in sorted(ctx.sites.items()) if s.chip.name == chip)
        part = PartLayout(chip=chip, site_resource=res, chips=chips, tp=chips, ep=1, pp=1)
        name = f"measured|{res}-g{chips}"
        out.configs[name] = PoolConfig(kind="measured", traffic_class="*", main=part, batch=1)
        out.columns.append(Column(name=name, parts=[Part(resource=res, units=chips)], capacity=dict(sorted(caps.items()))))
        out.generated += len(caps)
        out.feasible += len(caps)


def build_problem(ctx: Context, cands: Candidates | None = None) -> tuple[Problem, Candidates]:
    """The solver-neutral problem of an instance (and the candidates behind it)."""
    cands = generate(ctx) if cands is None else cands
    inst = ctx.instance
    demands, routes, transfers = [], [], []
    for cls in inst.workload.classes:
        demands.append(Demand(name=cls.name, rate=cls.rate_rps, single_resource=cls.single_chip_type))
        kv = kv_transfer_bytes(ctx.model, cls.prompt_tokens, cls.cached_prefix_tokens, inst.precision.kv,
                               cls.prefix_cached_on_decode)
        for rname, steps in _steps(ctx, cls).items():
            routes.append(Route(name=rname, demand=cls.name, steps=steps))
            if len(steps) == 2:
                transfers.append(Transfer(name=f"{rname}|kv", route=rname, source=steps[0], target=steps[1],
                                          bytes_per_request=float(kv)))
    sites = [
        Site(name=n, node=n, resource=s.resource, units_per_domain=s.chips_per_domain, domains=s.group.count,
             usd_per_hour_per_unit=s.usd_per_hour_per_chip, power_w_per_unit=s.chip.power_w)
        for n, s in sorted(ctx.sites.items())
    ]
    edges = [Edge(source=u, target=v, capacity_bytes_per_s=d["bandwidth_bytes_per_s"], latency_s=d["latency_s"])
             for u, v, d in sorted(ctx.graph.edges(data=True))]
    objective = {"cost": "cost", "power": "power", "chips": "units"}[inst.objective]
    problem = Problem(
        name=inst.name,
        demands=demands,
        routes=routes,
        transfers=transfers,
        columns=cands.columns,
        sites=sites,
        nodes=sorted(inst.hardware.switches),
        edges=edges,
        objective=objective,
        power_cap_w=inst.limits.power_kw * 1e3 if inst.limits.power_kw else None,
        budget_usd_per_hour=inst.limits.budget_usd_per_hour,
    )
    return problem, cands
