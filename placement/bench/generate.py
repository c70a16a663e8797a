"""Seeded benchmark instances: a fleet family, a realistic traffic mix, rates that load the fleet.

:func:`build_instance` returns an instance document (a plain dict, valid under
:func:`placement.core.instance.loading.parse_instance`); :func:`write_instance` writes it as
YAML; ``placement generate`` does both from the command line. The same
arguments (seed included) always give byte-identical files.

What is generated
    *Fleet*: a family of :mod:`topology.generators` with ``chip_types`` chip
    types, the first K of :data:`topology.generators.CHIP_PREFERENCE` in an
    order permuted by the seed (which decides which pods get which chips).
    *Traffic*: the first ``classes`` of :data:`CLASS_TEMPLATES` (chat,
    summarisation, a coding agent with a 119K cached prefix, reasoning with
    long outputs, RAG, offline batch, voice, code completion, …); beyond the
    12 templates, variants of them with token counts and SLOs jittered by the
    seed. Token counts are jittered ±20 % by the seed for every class.
    *Rates*: class k gets a share s_k of the demand (seeded, each between
    0.5 and 1.5 times the mean) and rate λ_k = ``load`` · s_k · C_k, where
    C_k is the rate the whole fleet would serve if it served only class k,
    aggregated, every chip type with its best replica configuration
    (requests/s per chip from the candidate generator on a one-group-per-type
    copy of the fleet). So ``load`` is roughly the fraction of the fleet's
    chips a single-mode plan would need; the default 0.3 leaves the optimizer
    room to choose, and plans stay feasible.

Examples
--------
>>> doc = build_instance(domains=10, chip_types=2, classes=2, family="leaf-spine", seed=0,
...                      rates={"chat": 10.0, "summarisation": 2.0})
>>> doc["name"], len(doc["hardware"]["domains"]), [c["name"] for c in doc["workload"]["classes"]]
('bench-leaf-spine-d10-k2-c2-s0', 2, ['chat', 'summarisation'])
>>> from placement.core.instance.loading import parse_instance
>>> parse_instance(doc).modes
['aggregated', 'pd', 'pd-af']
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from placement.core.instance.errors import InputError
from placement.core.instance.schema import MODES
from topology.generators import CHIP_PREFERENCE, FAMILIES, FleetSpec, fleet

__all__ = [
    "CLASS_TEMPLATES",
    "MODELS",
    "build_instance",
    "calibrate_rates",
    "generate_sizes",
    "pick_chips",
    "workload",
    "write_instance",
]

#: Catalogue models a benchmark may use (dense 70B, two MoE).
MODELS = ("llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3", "llama-3.1-8b", "gpt-oss-120b", "qwen3-32b",
          "llama-3.1-405b", "kimi-k2")

#: Traffic shapes. Token counts from the project's seeds (coding agent: 119K
#: cached prefix, 875 new, 214 out) and common serving benchmarks; SLOs
#: illustrative. ``weight`` is the relative demand before seeded jitter.
CLASS_TEMPLATES: tuple[dict, ...] = (
    {"name": "chat", "prompt_tokens": 1500, "output_tokens": 400, "ttft_ms": 1500, "tpot_ms": 40},
    {"name": "summarisation", "prompt_tokens": 12000, "output_tokens": 250, "ttft_ms": 5000, "tpot_ms": 60},
    {"name": "coding-agent", "prompt_tokens": 875, "cached_prefix_tokens": 119000, "output_tokens": 214,
     "ttft_ms": 3000, "tpot_ms": 40, "prefix_cached_on_decode": True},
    {"name": "reasoning", "prompt_tokens": 1000, "output_tokens": 6000, "ttft_ms": 3000, "tpot_ms": 25},
    {"name": "rag", "prompt_tokens": 6000, "cached_prefix_tokens": 2000, "output_tokens": 300, "ttft_ms": 2000,
     "tpot_ms": 40},
    {"name": "batch", "prompt_tokens": 3000, "output_tokens": 800, "ttft_ms": 60000, "tpot_ms": 200},
    {"name": "voice", "prompt_tokens": 400, "cached_prefix_tokens": 1500, "output_tokens": 120, "ttft_ms": 500,
     "tpot_ms": 25},
    {"name": "code-completion", "prompt_tokens": 2000, "cached_prefix_tokens": 6000, "output_tokens": 60,
     "ttft_ms": 400, "tpot_ms": 20},
    {"name": "translation", "prompt_tokens": 800, "output_tokens": 800, "ttft_ms": 2000, "tpot_ms": 40},
    {"name": "long-doc-qa", "prompt_tokens": 60000, "output_tokens": 300, "ttft_ms": 15000, "tpot_ms": 60},
    {"name": "tool-agent", "prompt_tokens": 3000, "cached_prefix_tokens": 30000, "output_tokens": 150,
     "ttft_ms": 2000, "tpot_ms": 30, "prefix_cached_on_decode": True},
    {"name": "creative", "prompt_tokens": 500, "output_tokens": 2000, "ttft_ms": 2000, "tpot_ms": 35},
)

_MODE_TAGS = {"aggregated": "agg", "pd": "pd", "pd-af": "af"}

#: Default fraction of the fleet the demand needs (see the module docstring).
DEFAULT_LOAD = 0.3


def _rng(*parts) -> np.random.Generator:
    """A generator seeded from the arguments (stable across runs and platforms)."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _sig(x: float, digits: int = 3) -> float:
    """Round to ``digits`` significant digits (readable instance files)."""
    if x == 0 or not math.isfinite(x):
        return x
    return float(f"{x:.{digits}g}")


def pick_chips(chip_types: int | Sequence[str], seed: int) -> list[str]:
    """The chip list of a fleet: the first K preferred types in a seeded order, or the names given.

    Examples
    --------
    >>> sorted(pick_chips(3, seed=0))
    ['gb200', 'h100', 'h200']
    >>> pick_chips(["h100", "b200"], seed=5)
    ['h100', 'b200']
    """
    if not isinstance(chip_types, int):
        return list(chip_types)
    if not 1 <= chip_types <= len(CHIP_PREFERENCE):
        raise InputError(f"expected 1..{len(CHIP_PREFERENCE)} chip types, got {chip_types}", field="--chip-types")
    chosen = list(CHIP_PREFERENCE[:chip_types])
    order = _rng("chips", seed, chip_types).permutation(len(chosen))
    return [chosen[i] for i in order]


def workload(classes: int, seed: int) -> list[dict]:
    """``classes`` traffic classes (rates not set): templates, then seeded variants.

    Examples
    --------
    >>> [c["name"] for c in workload(3, seed=1)]
    ['chat', 'summarisation', 'coding-agent']
    >>> workload(14, seed=1)[12]["name"]
    'chat-2'
    """
    if not 1 <= classes <= 20:
        raise InputError(f"expected 1..20 classes, got {classes}", field="--classes")
    rng = _rng("workload", seed, classes)
    out = []
    for i in range(classes):
        t = dict(CLASS_TEMPLATES[i % len(CLASS_TEMPLATES)])
        round_ = i // len(CLASS_TEMPLATES)
        if round_:
            t["name"] = f"{t['name']}-{round_ + 1}"
            # Variants: other lengths and SLOs of the same shape.
            t["ttft_ms"] = _sig(t["ttft_ms"] * float(rng.uniform(0.7, 1.5)), 2)
            t["tpot_ms"] = _sig(t["tpot_ms"] * float(rng.uniform(0.8, 1.5)), 2)
        for key, lo, hi in (("prompt_tokens", 0.8, 1.2), ("output_tokens", 0.8, 1.2),
                            ("cached_prefix_tokens", 0.8, 1.2)):
            if t.get(key):
                spread = (0.5, 2.0) if round_ else (lo, hi)
                t[key] = max(1, round(t[key] * float(rng.uniform(*spread))))
        out.append(t)
    return out


def _shares(n: int, seed: int) -> list[float]:
    w = _rng("shares", seed, n).uniform(0.5, 1.5, size=n)
    return list(w / w.sum())


def calibrate_rates(doc: dict, load: float, seed: int) -> dict[str, float]:
    """Rates λ_k = load · s_k · C_k (module docstring) for the classes of ``doc``.

    Uses the candidate generator on a copy of the fleet with one domain group
    per chip type and only the aggregated mode (a few seconds at most).

    Raises
    ------
    InputError
        When no chip type can serve some class within its SLOs.
    """
    from placement.core.instance.context import Context
    from placement.core.instance.loading import parse_instance
    from placement.core.replicas.candidates import generate

    totals: dict[str, int] = {}
    size: dict[str, int] = {}
    for d in doc["hardware"]["domains"]:
        totals[d["chip"]] = totals.get(d["chip"], 0) + d["count"]
        size[d["chip"]] = d["chips_per_domain"]
    calib = dict(doc)
    calib["modes"] = ["aggregated"]
    calib["hardware"] = {"domains": [{"name": f"all-{c}", "chip": c, "chips_per_domain": size[c], "count": n}
                                     for c, n in sorted(totals.items())]}
    calib["workload"] = {"classes": [dict(c, rate_rps=1.0) for c in doc["workload"]["classes"]]}
    ctx = Context.of(parse_instance(calib))
    cands = generate(ctx)
    best: dict[tuple[str, str], float] = {}  # (class, resource) -> rps per chip
    for col in cands.columns:
        cfg = cands.configs[col.name]
        per_chip = sum(col.capacity.values()) / sum(p.units for p in col.parts)
        key = (cfg.traffic_class, col.parts[0].resource)
        best[key] = max(best.get(key, 0.0), per_chip)
    chips_of = {s.resource: s.chips for s in ctx.sites.values()}
    classes = [c["name"] for c in doc["workload"]["classes"]]
    shares = _shares(len(classes), seed)
    rates = {}
    for k, share in zip(classes, shares):
        cap = sum(chips_of[res] * v for (cls, res), v in best.items() if cls == k)
        if cap <= 0:
            raise InputError(f"no chip type of {', '.join(sorted(totals))} serves class {k!r} within its SLOs; "
                             "add chip types or pass --rates")
        rates[k] = _sig(load * share * cap)
    return rates


def build_instance(
    *,
    domains: int,
    chip_types: int | Sequence[str] = 8,
    classes: int = 6,
    family: str = "leaf-spine",
    seed: int = 0,
    model: str = "llama-3.1-70b",
    modes: Sequence[str] = MODES,
    load: float = DEFAULT_LOAD,
    rates: dict[str, float] | None = None,
    precision: str = "fp8",
    name: str | None = None,
    fleet_options: dict | None = None,
) -> dict:
    """A benchmark instance document (see the module docstring).

    Parameters
    ----------
    domains : int
        Scale-up domains in the fleet (10 .. 10,000 in the benchmarks).
    chip_types : int or sequence of str
        How many chip types (the first K preferred ones, seeded order) or their names.
    classes : int
        Traffic classes, 1..20.
    family : str
        ``leaf-spine``, ``rail``, ``mixed`` or ``uniform`` (:mod:`topology.generators`).
    seed : int
        Seeds the chip order, token-count jitter, class variants and demand shares.
    model : str
        A catalogue model name.
    modes : sequence of str
        Serving modes allowed (default all).
    load : float
        Fraction of the fleet the demand needs (ignored when ``rates`` is given).
    rates : dict, optional
        Explicit class rates (requests/s); skips calibration.
    precision : str
        Weights and KV precision (``fp8`` default).
    fleet_options : dict, optional
        Keyword arguments of the family function (``racks_per_leaf``, ``groups``, ...).

    Returns
    -------
    dict
        An instance document (plain YAML-able types).
    """
    if family not in FAMILIES:
        raise InputError(f"expected one of {', '.join(FAMILIES)}, got {family!r}", field="--family")
    if domains < 1:
        raise InputError(f"expected domains >= 1, got {domains}", field="--domains")
    if not 0 < load <= 1:
        raise InputError(f"expected a load in (0, 1], got {load}", field="--load")
    chips = pick_chips(chip_types, seed)
    try:
        spec: FleetSpec = fleet(family, domains, chips, **(fleet_options or {}))
    except (ValueError, TypeError) as e:
        raise InputError(str(e), field="--chips" if "chip" in str(e) else "--family") from None
    k = len(chips) if family != "uniform" else 1
    grouping = f"-g{len(spec.domains)}" if family == "uniform" else ""
    # Modes other than all of them are part of the name, so different mode sets never share a file.
    modes_tag = "" if list(modes) == list(MODES) else "-" + ".".join(_MODE_TAGS[m] for m in modes)
    name = name or f"bench-{family}-d{domains}{grouping}-k{k}-c{classes}-s{seed}{modes_tag}"
    doc = {
        "name": name,
        "description": (f"Generated benchmark: {family} fleet of {domains} scale-up domains "
                        f"({', '.join(spec.chip_types())}) in {len(spec.domains)} domain groups, "
                        f"{classes} classes, {model}, seed {seed}"),
        "model": model,
        "precision": {"weights": precision, "kv": precision},
        "modes": list(modes),
        "objective": "cost",
        "workload": {"classes": workload(classes, seed)},
        "hardware": spec.to_dict(),
    }
    if rates is None:
        rates = calibrate_rates(doc, load, seed)
    missing = [c["name"] for c in doc["workload"]["classes"] if c["name"] not in rates]
    if missing:
        raise InputError(f"no rate given for class {missing[0]!r}", field="rates")
    doc["workload"]["classes"] = [dict({"name": c["name"], "rate_rps": float(rates[c["name"]])},
                                       **{k2: v for k2, v in c.items() if k2 != "name"})
                                  for c in doc["workload"]["classes"]]
    return doc


def write_instance(doc: dict, path: str | Path) -> Path:
    """Write an instance document as YAML (atomically) after validating it; returns the path."""
    from placement.core.instance.loading import parse_instance
    from placement.core.plans.output import write_atomic

    parse_instance(doc, source=str(path))
    header = (f"# {doc.get('description', '')}\n"
              "# Written by `placement generate` (placement/generate.py); regenerate rather than edit.\n")
    write_atomic(path, header + yaml.safe_dump(doc, sort_keys=False, width=120))
    return Path(path)


def generate_sizes(sizes: Sequence[int], out_dir: Path, *, family: str, chip_types: int | Sequence[str],
                   classes: int, model: str, modes: Sequence[str], seed: int,
                   load: float | None = None) -> list[Path]:
    """Write one generated instance per size (domain count) into ``out_dir``; returns the paths."""
    paths = []
    for n in sizes:
        doc = build_instance(domains=n, chip_types=chip_types, classes=classes, family=family, seed=seed,
                             model=model, modes=list(modes), load=load or DEFAULT_LOAD)
        path = out_dir / f"{doc['name']}.yaml"
        write_instance(doc, path)
        paths.append(path)
    return paths
