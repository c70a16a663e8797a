"""Checks that a plan is well formed before anything is re-derived from it.

A plan read from a file is hostile input: these checks make sure every number
is finite, every name refers to something the instance has, and every pool's
configuration is one the cost models can evaluate on the chips it sits on.
The other checks assume they hold.

Examples
--------
>>> from placement.core.verify.structure import check_numbers
>>> from placement.core.plans.plan import Plan
>>> check_numbers(Plan(instance="t", status="optimal", objective="cost", power_w=float("nan")))
['power_w is nan; every number in a plan must be finite']
"""

from __future__ import annotations

from collections import Counter

from costmodels.models import ModelSpec
from placement.core.instance.context import Context
from placement.core.modes.enabled import enabled_modes
from placement.core.modes.registry import pool_kind
from placement.core.plans.plan import Plan, bad_numbers
from placement.core.replicas.evaluate import PartLayout, PoolConfig
from placement.core.verify.facts import transfers

__all__ = ["check_configurations", "check_numbers", "check_references"]



def check_numbers(plan: Plan) -> list[str]:
    """Every number finite and within ±2^53; replicas, loads, flows, pairs and link loads ≥ 0."""
    v = [f"{where} is {value}; every number in a plan must be finite" if isinstance(value, float)
         else f"{where} is an integer of {len(str(abs(value)))} digits; expected at most ±2^53"
         for where, value in bad_numbers(plan.model_dump())]
    for i, pool in enumerate(plan.pools):
        if pool.replicas < 0:
            v.append(f"pools[{i}].replicas is {pool.replicas}; replicas must be ≥ 0")
        for j, s in enumerate(pool.sites):
            if s.replicas < 0:
                v.append(f"pools[{i}].sites[{j}].replicas is {s.replicas}; replicas must be ≥ 0")
            v += [f"pools[{i}].sites[{j}].load_rps.{step} is {rate}; loads must be ≥ 0"
                  for step, rate in s.load_rps.items() if rate < 0]
    v += [f"flows[{i}].bytes_per_s is {f.bytes_per_s}; flows must be ≥ 0" for i, f in enumerate(plan.flows)
          if f.bytes_per_s < 0]
    v += [f"pairs[{i}].replicas is {p.replicas}; pairs must be ≥ 0" for i, p in enumerate(plan.pairs) if p.replicas < 0]
    v += [f"links[{i}].load_bytes_per_s is {lk.load_bytes_per_s}; link loads must be ≥ 0"
          for i, lk in enumerate(plan.links) if lk.load_bytes_per_s < 0]
    return v


def _duplicates(names) -> list:
    return sorted(n for n, k in Counter(names).items() if k > 1)


def check_references(ctx: Context, plan: Plan) -> list[str]:
    """Ids unique; every site, class, column, load step, transfer, link and pair end names something that exists."""
    v = [f"pool id {d!r} appears more than once" for d in _duplicates(p.id for p in plan.pools)]
    v += [f"column {c!r} part {k} appears in more than one pool"
          for c, k in _duplicates((p.column, p.part) for p in plan.pools)]
    v += [f"class {d!r} appears more than once in classes" for d in _duplicates(c.name for c in plan.classes)]
    v += [f"class {c.name!r} is not in the instance" for c in plan.classes
          if c.name not in ctx.classes and c.kv_retention is None]  # session classes: verify.kv
    sites_of: dict[tuple[str, int], set[str]] = {}
    steps = {str(s) for c in ctx.instance.workload.classes for m in enabled_modes(ctx) for s in m.steps(c.name)}
    for pool in plan.pools:
        if pool.part not in (0, 1):
            v.append(f"pool {pool.id}: part is {pool.part}; expected 0 (main) or 1 (partner)")
        v += [f"pool {pool.id}: site {d!r} appears more than once" for d in _duplicates(s.site for s in pool.sites)]
        v += [f"pool {pool.id}: unknown domain group {s.site!r}" for s in pool.sites if s.site not in ctx.sites]
        sites_of[pool.column, pool.part] = {s.site for s in pool.sites}
        v += [f"pool {pool.id}: site {s.site}: load on {step!r}, which is no step of a route the instance allows"
              for s in pool.sites for step in s.load_rps if step not in steps]
    known = transfers(ctx)
    for i, f in enumerate(plan.flows):
        if f.transfer not in known:
            v.append(f"flows[{i}]: unknown transfer {f.transfer!r}")
        if not ctx.graph.has_edge(f.source, f.target):
            v.append(f"flow {f.transfer} uses {f.source}->{f.target}, which is not a link")
    v += [f"flow {t} on {a}->{b} appears more than once"
          for t, a, b in _duplicates((f.transfer, f.source, f.target) for f in plan.flows)]
    for i, lk in enumerate(plan.links):
        if not ctx.graph.has_edge(lk.source, lk.target):
            v.append(f"links[{i}]: {lk.source}->{lk.target} is not a link of the fleet")
    v += [f"link {a}->{b} appears more than once" for a, b in _duplicates((lk.source, lk.target) for lk in plan.links)]
    for i, pr in enumerate(plan.pairs):
        for end, site, part in (("source_site", pr.source_site, 0), ("target_site", pr.target_site, 1)):
            if site not in ctx.sites:
                v.append(f"pairs[{i}].{end}: unknown domain group {site!r}")
            elif (pr.column, part) not in sites_of:
                v.append(f"pairs[{i}]: column {pr.column!r} has no {'main' if part == 0 else 'partner'} pool")
            elif site not in sites_of[pr.column, part]:
                v.append(f"pairs[{i}].{end}: column {pr.column!r} has no replicas in {site!r}")
    return v


def check_configurations(ctx: Context, plan: Plan) -> list[str]:
    """Each configuration evaluable: parts as its kind needs, known chips and classes, layouts the chips
    and model allow, on sites of its chip; a partner pool's configuration is its main pool's."""
    v: list[str] = []
    main_cfg = {p.column: p.config for p in plan.pools if p.part == 0}
    for pool in plan.pools:
        cfg = pool.config
        v += _config_problems(ctx, pool.id, cfg)
        if pool.part not in (0, 1):
            continue  # check_references names it
        if pool.part == 1:
            if cfg.partner is None:
                v.append(f"pool {pool.id}: a partner pool (part 1) of a {cfg.kind} configuration without a partner")
                continue
            if main_cfg.get(pool.column) != cfg:
                v.append(f"pool {pool.id}: its configuration differs from its main pool's (column {pool.column!r})")
        lay = cfg.main if pool.part == 0 else cfg.partner
        for s in pool.sites:
            info = ctx.sites.get(s.site)
            if info is None:
                continue
            if info.chip.name != lay.chip:
                v.append(f"pool {pool.id}: {lay.chip} replicas (config) placed in {s.site}, a group of "
                         f"{info.chip.name}")
            elif info.resource != lay.site_resource:
                v.append(f"pool {pool.id}: config resource {lay.site_resource!r} placed in {s.site}, a group of "
                         f"{info.resource}")
    return v




def _config_problems(ctx: Context, pid: str, cfg: PoolConfig) -> list[str]:
    v: list[str] = []
    kind = pool_kind(cfg.kind)  # the kind's own record says what a configuration of it may be
    partner = kind.partner
    if partner == "never" and cfg.partner is not None:
        v.append(f"pool {pid}: config kind {cfg.kind!r} has no partner part, but one is given")
    if partner == "always" and cfg.partner is None:
        v.append(f"pool {pid}: config kind {cfg.kind!r} needs a partner part")
    if kind.measured:
        if cfg.traffic_class != "*":
            v.append(f"pool {pid}: a measured configuration serves every measured class ('*'), not "
                     f"{cfg.traffic_class!r}")
        if not any(m.chip == cfg.main.chip and m.chips == cfg.main.chips for m in ctx.instance.measured_capacity):
            v.append(f"pool {pid}: no measured capacity for {cfg.main.chips} × {cfg.main.chip} in the instance")
    else:
        if cfg.traffic_class not in ctx.classes:
            v.append(f"pool {pid}: config serves unknown class {cfg.traffic_class!r}")
        if ctx.instance.only_measured:
            v.append(f"pool {pid}: a {cfg.kind} (roofline) configuration in an instance with only_measured")
    if kind.chunked != (cfg.chunk_tokens is not None):
        v.append(f"pool {pid}: chunk_tokens is {cfg.chunk_tokens}; only an aggregated configuration has a chunk")
    elif cfg.chunk_tokens is not None and cfg.chunk_tokens < 1:
        v.append(f"pool {pid}: chunk_tokens is {cfg.chunk_tokens}; expected ≥ 1")
    if cfg.micro_batches < 1 or (cfg.micro_batches != 1 and kind.weights is None):
        v.append(f"pool {pid}: micro_batches is {cfg.micro_batches}; expected 1 (≥ 1 for decode-af)")
    if kind.drafts:
        draft = ctx.instance.draft
        if draft is None or ctx.draft_model is None:
            v.append(f"pool {pid}: a decode-spec configuration in an instance without a draft model")
        elif cfg.draft_tokens is not None and not 1 <= cfg.draft_tokens <= draft.gamma:
            v.append(f"pool {pid}: draft_tokens is {cfg.draft_tokens}; expected 1 … {draft.gamma}")
    elif cfg.draft_tokens is not None:
        v.append(f"pool {pid}: draft_tokens is set on a {cfg.kind} configuration")
    for name, part in (("main", cfg.main), ("partner", cfg.partner)):
        if part is None:
            continue
        # Measured capacities need no model; a remote draft runs the draft model.
        model = None if kind.measured else (ctx.draft_model if kind.drafts and name == "partner" else ctx.model)
        v += _layout_problems(ctx, f"pool {pid}: config.{name}", part, model,
                              attention=kind.weights is not None and name == "main",
                              shared_batch=kind.shared_batch and name == "main",
                              expert_stage=kind.weights is not None and name == "partner")
    return v


def _layout_problems(ctx: Context, where: str, part: PartLayout, model: ModelSpec | None,
                     attention: bool, shared_batch: bool = False, expert_stage: bool = False) -> list[str]:
    """A replica's chips are dp·tp·pp of a catalogue chip; TP inside one domain and dividing the heads;
    no more stages than layers; data-parallel groups only in an attention half, (``shared_batch``) a
    decode or aggregated replica, or (``expert_stage``) an FFN half whose stage of dp·tp chips, inside one
    domain, holds the experts (ep = dp·tp); ep divides the dp·tp chips of a stage (ep = 1 in an attention half).
    An all-to-all across domains is priced on the scale-out NICs by the cost models, and the pool's
    re-derived ``tpot_ms`` is compared with the plan's (``check_pool_fields``)."""
    chip = ctx.chips.get(part.chip)
    if chip is None:
        return [f"{where}.chip {part.chip!r} is not in the catalogue or the instance's chips"]
    v = []
    if part.chips != part.dp * part.tp * part.pp:
        v.append(f"{where}: chips ({part.chips}) must equal dp·tp·pp ({part.dp}·{part.tp}·{part.pp})")
    if min(part.chips, part.tp, part.ep, part.pp, part.dp) < 1:
        v.append(f"{where}: chips, tp, ep, pp and dp must be ≥ 1")
        return v
    sizes = {s.chips_per_domain for s in ctx.sites.values() if s.resource == part.site_resource}
    if not sizes:
        v.append(f"{where}.site_resource {part.site_resource!r} is no domain group of the fleet")
    elif part.tp > max(sizes):
        v.append(f"{where}: tp {part.tp} spans more than one {max(sizes)}-chip domain")
    if model is not None and model.attention.heads % part.tp:
        v.append(f"{where}: tp {part.tp} does not divide the model's {model.attention.heads} heads")
    if model is not None and part.pp > model.layers:
        v.append(f"{where}: pp {part.pp} exceeds the model's {model.layers} layers")
    if part.dp > 1 and expert_stage:
        if part.ep != part.dp * part.tp:
            v.append(f"{where}: dp {part.dp} in an FFN half needs its stage's experts over all dp·tp chips "
                     f"(ep {part.ep}, expected {part.dp * part.tp})")
        elif sizes and part.ep > max(sizes):
            v.append(f"{where}: an expert-parallel stage of {part.ep} chips spans more than one "
                     f"{max(sizes)}-chip domain")
    elif part.dp > 1 and not (attention or shared_batch):
        v.append(f"{where}: dp {part.dp}; only decode and aggregated replicas, the attention half of a "
                 f"decode-af replica and its expert-parallel FFN stages are data-parallel")
    stage_chips = part.tp if attention else part.dp * part.tp
    if (part.ep > 1 and attention) or stage_chips % part.ep:
        v.append(f"{where}: ep {part.ep} must divide the {stage_chips} chips of a stage (dp·tp"
                 f"{'; 1 in an attention half' if attention else ''})")
    return v
