"""Re-solve every plan figure the docs quote and rewrite the docs' generated blocks.

A generated block is the text between ``<!-- figures:NAME -->`` and
``<!-- /figures:NAME -->`` in ``README.md`` or a ``benchmarks/*.md`` page;
everything outside the markers is prose and is never touched. Each block
names the solves it needs; all of them run first (in a process pool, each
solve once even when several blocks quote it), then every doc is rewritten
atomically (``placement.core.plans.output.write_atomic``).

Blocks (``BLOCKS``):

* ``shipped`` (README): every shipped instance solved with the default
  backend (CBC) beside each homogeneous fleet, each mode alone and each other
  KV policy (``placement compare``'s variants).
* ``kv-policies`` (README, KV_TIERS.md): ``agentic-coding`` under
  ``--kv-policy tiered | hbm-only | none`` (CBC).
* ``kv-sweep`` (KV_TIERS.md): the DRAM / flash price sweep of
  ``benchmarks/kv_sweep.py`` (HiGHS).
* ``confidence`` (README): the cost of confidence of ``agentic-coding``
  (``benchmarks/confidence_cost.py``, HiGHS).
* ``seed-draft`` (SEED_CLAIMS.md): the spec-decode-draft studies of
  ``benchmarks/seed_claims.py`` (CBC); their results are merged into
  ``benchmarks/seed_claims.json``. The Rubin and Trainium studies (~100 solves)
  stay with ``seed_claims.py``.

Run from anywhere (~62 solves; a few minutes on two idle cores)::

    .venv/bin/python benchmarks/doc_figures.py            # re-solve and rewrite the docs
    .venv/bin/python benchmarks/doc_figures.py --check    # exit 1 (naming the blocks) when a doc is stale
    .venv/bin/python benchmarks/doc_figures.py --only kv-policies --only confidence

Exit codes: 0 docs current (or rewritten), 1 ``--check`` found a stale block,
2 a doc lacks the markers of a block that names it.

Examples
--------
>>> replace_block("a <!-- figures:x -->old<!-- /figures:x --> b", "x", "new")
'a <!-- figures:x -->\\n\\nnew\\n\\n<!-- /figures:x --> b'
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import kv_sweep
import seed_claims

from placement.core.instance.loading import load_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.output import write_atomic
from placement.core.plans.plan import Plan
from placement.studies.compare import kv_variants, objective_value, reason_of, variants
from placement.studies.confidence import DEFAULT_LEVELS, ConfidenceRow
from placement.studies.confidence import markdown as confidence_markdown

__all__ = ["BLOCKS", "Block", "main", "replace_block", "stale_blocks"]

#: A solve to run: a picklable top-level function and its arguments.
Job = tuple[Callable[..., Any], tuple]

AGENTIC = "instances/agentic-coding.yaml"
KV_POLICIES = ("tiered", "hbm-only", "none")


@dataclass(frozen=True)
class Block:
    """One generated block: the docs holding it, the solves it needs (key -> job) and its text from their results."""

    name: str
    docs: tuple[str, ...]
    jobs: Callable[[], dict[str, Job]]
    render: Callable[[dict[str, Any]], str]


# ---------------------------------------------------------------------------------------------
# solves (run in worker processes: top-level functions of picklable arguments)

def _solve_file(path: str, label: str, backend: str, kv_policy: str | None) -> Plan:
    """The plan of variant ``label`` (``placement.studies.compare.variants``) of the instance at ``path``."""
    inst = load_instance(path)
    variant = next(v for lab, _, v in variants(inst) if lab == label)
    return solve(variant, backend=backend, source=path, kv_policy=kv_policy)


def _solve_kv_prices(host_x: float | None, flash_x: float | None) -> Plan:
    """A row of the DRAM / flash price sweep (``host_x`` None: the remote store row)."""
    tiers = [kv_sweep.REMOTE] if host_x is None else kv_sweep.priced(host_x, flash_x)
    return solve(kv_sweep.instance(tiers), backend="highs")


def _solve_confidence(level: float | None) -> Plan:
    inst = load_instance(AGENTIC)
    return solve(inst.model_copy(update={"confidence": level}), backend="highs", source=AGENTIC)


def _seed_study(condition: str) -> list[dict]:
    study = next(s for s in seed_claims.STUDIES if s.condition == condition)
    return seed_claims.run(study, workers=1)


# ---------------------------------------------------------------------------------------------
# formatting

def _usd(x: float | None) -> str:
    return "–" if x is None else f"${x:,.2f}/h"


def _chips(plan: Plan) -> str:
    return " + ".join(f"{n} {c}" for c, n in sorted(plan.chips_by_type.items())) or "–"


def _ok(plan: Plan) -> bool:
    return plan.verified and plan.status in ("optimal", "feasible")


def _window(seconds: float) -> str:
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds / 60:g} min"


def _gb(x: float) -> str:
    return f"{x / 1e3:.1f} TB" if x >= 1e3 else f"{x:.0f} GB"


# ---------------------------------------------------------------------------------------------
# shipped instances

def _shipped_paths() -> list[str]:
    return sorted(f"instances/{p.name}" for p in (ROOT / "instances").glob("*.yaml"))


def _shipped_labels(path: str) -> list[tuple[str, str | None]]:
    """(variant label, kv policy) of every solve ``placement compare`` makes of the instance."""
    inst = load_instance(ROOT / path)
    full = variants(inst)[0][0]
    return [(lab, None) for lab, _, _ in variants(inst)] + [(full, pol) for _, pol in kv_variants(inst)]


def _shipped_key(path: str, label: str, kv_policy: str | None) -> str:
    return f"shipped:{path}:{label}:{kv_policy or 'default'}"


def shipped_jobs() -> dict[str, Job]:
    return {_shipped_key(p, lab, pol): (_solve_file, (p, lab, "cbc", pol))
            for p in _shipped_paths() for lab, pol in _shipped_labels(p)}


def shipped_render(res: dict[str, Any]) -> str:
    rows = ["| instance | optimum (CBC, verified) | chips | kW | each alternative: $/h (what the optimum saves) |",
            "| --- | --- | --- | --- | --- |"]
    for path in _shipped_paths():
        labels = _shipped_labels(path)
        full = res[_shipped_key(path, *labels[0])]
        objective = full.objective
        base = objective_value(full, objective) if _ok(full) else None
        alts = []
        for lab, pol in labels[1:]:
            plan = res[_shipped_key(path, lab, pol)]
            name = f"KV policy {pol}" if pol else lab
            value = objective_value(plan, objective) if _ok(plan) else None
            if value is None:
                alts.append(f"{name} {plan.status if plan.status != 'optimal' else reason_of(plan)}")
            else:
                save = f" ({1 - base / value:.1%})" if base is not None and value else ""
                alts.append(f"{name} {plan.cost_usd_per_hour:,.2f}{save}")
        head = f"{full.status} {_usd(full.cost_usd_per_hour)}" if _ok(full) else full.status
        kw = f"{full.power_w / 1e3:,.1f}" if _ok(full) and full.power_w is not None else "–"
        rows.append(f"| `{path}` | {head} | {_chips(full) if _ok(full) else '–'} | {kw} | {'; '.join(alts)} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# KV policies of agentic-coding

def kv_policy_jobs() -> dict[str, Job]:
    full = variants(load_instance(ROOT / AGENTIC))[0][0]
    return {_shipped_key(AGENTIC, full, None if p == "tiered" else p): (_solve_file, (AGENTIC, full, "cbc",
                                                                                       None if p == "tiered" else p))
            for p in KV_POLICIES}


def _retention(plan: Plan) -> tuple[str, str, float]:
    """(KV held per tier and group, retention chosen, hit rate) of the plan's session classes."""
    ret = [r for c in plan.classes for r in (c.kv_retention or [])]
    held: dict[str, float] = {}
    for r in ret:
        if r.held_gb > 0:
            where = r.tier + ("@" + r.policy.split("@")[1] if "@" in r.policy else "")
            held[where] = held.get(where, 0.0) + r.held_gb
    chosen = ", ".join(
        f"{r.tier}{'@' + r.policy.split('@')[1] if '@' in r.policy else ''} {_window(r.window_s)} ({r.share:.0%})"
        if r.tier != "none" else f"recompute every prefix ({r.share:.0%})"
        for r in sorted(ret, key=lambda r: -r.share) if r.share >= 5e-3)
    hit = sum(r.share * r.hit_rate for r in ret if r.tier != "none")
    return (", ".join(f"{_gb(v)} {k}" for k, v in sorted(held.items())) or "—"), chosen or "—", hit


def kv_policy_render(res: dict[str, Any]) -> str:
    full = variants(load_instance(ROOT / AGENTIC))[0][0]
    rows = ["| `--kv-policy` | $/h | GPUs | KV held | KV $/h | reloads / offloads GB/s | retention chosen | hit rate |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for p in KV_POLICIES:
        plan = res[_shipped_key(AGENTIC, full, None if p == "tiered" else p)]
        if not _ok(plan):
            rows.append(f"| `{p}` | {plan.status} | – | – | – | – | {reason_of(plan) or '–'} | – |")
            continue
        held, chosen, hit = _retention(plan)
        reload = sum(t.bandwidth_used_gb_per_s for t in plan.kv_tiers)
        offload = sum(t.write_used_gb_per_s for t in plan.kv_tiers)
        rows.append(f"| `{p}` | {plan.cost_usd_per_hour:.2f} | {plan.chips} ({_chips(plan)}) | {held} | "
                    f"{plan.kv_usd_per_hour or 0:.2f} | {reload:.1f} / {offload:.1f} | {chosen} | {hit:.1%} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# DRAM / flash price sweep

def kv_sweep_jobs() -> dict[str, Job]:
    out = {f"kv-sweep:{h}:{f}": (_solve_kv_prices, (h, f)) for h, f in kv_sweep.POINTS}
    out["kv-sweep:remote"] = (_solve_kv_prices, (None, None))
    return out


def kv_sweep_render(res: dict[str, Any]) -> str:
    rows = ["| host $/GB-h | flash $/GB-h | $/h | KV $/h | policies (share ≥ 0.005) |", "| --- | --- | --- | --- | --- |"]
    for h, f in kv_sweep.POINTS:
        flash = "-" if f is None else f"{kv_sweep.FLASH * f:.5g}"
        rows.append(kv_sweep.row(res[f"kv-sweep:{h}:{f}"], f"{kv_sweep.HOST * h:.5g}", flash))
    remote = res["kv-sweep:remote"]
    rows.append(kv_sweep.row(remote, "remote store", "-"))
    rows.append("")
    for fl in remote.kv_flows:
        link = next(lk for lk in remote.links if (lk.source, lk.target) == (fl.source, fl.target))
        rows.append(f"* remote store, `{fl.transfer}`: {fl.source} → {fl.target} {fl.bytes_per_s / 1e9:.1f} GB/s "
                    f"({link.utilisation:.2%} of the link's {link.capacity_bytes_per_s / 1e9:,.0f} GB/s)")
    return "\n".join(rows)


# ---------------------------------------------------------------------------------------------
# cost of confidence, seed claims

LEVELS = (None, *DEFAULT_LEVELS)


def confidence_jobs() -> dict[str, Job]:
    return {f"confidence:{c}": (_solve_confidence, (c,)) for c in LEVELS}


def confidence_render(res: dict[str, Any]) -> str:
    return confidence_markdown([ConfidenceRow(c, res[f"confidence:{c}"]) for c in LEVELS])


DRAFT = tuple(s.condition for s in seed_claims.STUDIES if s.family == "draft")


def seed_draft_jobs() -> dict[str, Job]:
    return {f"seed:{c}": (_seed_study, (c,)) for c in DRAFT}


def seed_draft_render(res: dict[str, Any]) -> str:
    lines = seed_claims.section("draft", {c: res[f"seed:{c}"] for c in DRAFT})
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines)


BLOCKS: dict[str, Block] = {b.name: b for b in (
    Block("shipped", ("README.md",), shipped_jobs, shipped_render),
    Block("kv-policies", ("README.md", "benchmarks/KV_TIERS.md"), kv_policy_jobs, kv_policy_render),
    Block("kv-sweep", ("benchmarks/KV_TIERS.md",), kv_sweep_jobs, kv_sweep_render),
    Block("confidence", ("README.md",), confidence_jobs, confidence_render),
    Block("seed-draft", ("benchmarks/SEED_CLAIMS.md",), seed_draft_jobs, seed_draft_render),
)}


# ---------------------------------------------------------------------------------------------
# the docs

def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- figures:{re.escape(name)} -->)(.*?)(<!-- /figures:{re.escape(name)} -->)", re.DOTALL)


def replace_block(text: str, name: str, body: str) -> str:
    """``text`` with every block ``name`` holding ``body`` (between blank lines, so a Markdown table in it
    is not read as part of the HTML comment before it).

    Raises
    ------
    KeyError
        When ``text`` has no block ``name``.
    """
    pat = _pattern(name)
    if not pat.search(text):
        raise KeyError(name)
    return pat.sub(lambda m: f"{m.group(1)}\n\n{body}\n\n{m.group(3)}", text)


def stale_blocks(old: str, new: str, names: list[str]) -> list[str]:
    """The names among ``names`` whose block differs between two versions of a doc."""
    return [n for n in names if [m.group(2) for m in _pattern(n).finditer(old)]
            != [m.group(2) for m in _pattern(n).finditer(new)]]


def _run_jobs(jobs: dict[str, Job], workers: int) -> dict[str, Any]:
    """Every job's result, keyed as ``jobs`` (longest first over ``workers`` processes; 1: in-process)."""
    order = sorted(jobs, key=lambda k: (not k.startswith(("seed:", "shipped:instances/rubin")), k))
    if workers <= 1:
        return {k: jobs[k][0](*jobs[k][1]) for k in order}
    out: dict[str, Any] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = {k: pool.submit(jobs[k][0], *jobs[k][1]) for k in order}
        for n, (k, fut) in enumerate(futures.items(), 1):
            out[k] = fut.result()
            print(f"  [{n}/{len(futures)}] {k}", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="rewrite nothing; exit 1 when a block is stale")
    ap.add_argument("--only", action="append", choices=sorted(BLOCKS), help="blocks to refresh (default all)")
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1), help="solver processes")
    args = ap.parse_args(argv)
    os.chdir(ROOT)  # the instances and kv_sweep's paths are relative to the repository root
    blocks = [BLOCKS[n] for n in (args.only or BLOCKS)]
    docs = {d: (ROOT / d).read_text() for b in blocks for d in b.docs}
    missing = [f"{d}: no <!-- figures:{b.name} --> block" for b in blocks for d in b.docs
               if not _pattern(b.name).search(docs[d])]
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 2
    jobs: dict[str, Job] = {}
    for b in blocks:
        jobs.update(b.jobs())
    print(f"{len(jobs)} solves for {', '.join(b.name for b in blocks)}", file=sys.stderr, flush=True)
    res = _run_jobs(jobs, args.workers)
    docs = {d: (ROOT / d).read_text() for d in docs}  # read again: the prose may have been edited meanwhile
    new = dict(docs)
    for b in blocks:
        body = b.render(res)
        for d in b.docs:
            new[d] = replace_block(new[d], b.name, body)
    stale = [f"{d}: {n}" for d, text in docs.items()
             for n in stale_blocks(text, new[d], [b.name for b in blocks if d in b.docs])]
    print("stale: " + "; ".join(stale) if stale else "every block is current", file=sys.stderr)
    if args.check:
        return 1 if stale else 0
    for d, text in new.items():
        if text != docs[d]:
            write_atomic(ROOT / d, text)
    if BLOCKS["seed-draft"] in blocks:
        path = HERE / "seed_claims.json"
        merged = {**json.loads(path.read_text()), **{c: res[f"seed:{c}"] for c in DRAFT}}
        write_atomic(path, json.dumps(merged, indent=1, sort_keys=True, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
