"""Fleet graph families for benchmarks: pods of racks, rail-optimised units, mixed pods.

Plain functions, NetworkX style: each family takes sizes and chip names and
returns a :class:`FleetSpec`, the ``hardware`` section of an instance file
(domain groups, switches, switch-to-switch links) in the instance's own units
(GB/s per direction, µs). :func:`to_graph` turns a spec into the fleet graph of
:mod:`topology.graph`. Nothing here is random: a family's output is a pure
function of its arguments, so seeded randomness lives in the caller
(:mod:`placement.bench.generate` permutes the chip list with its seed).

Symmetry grouping
    A *domain group* is ``count`` identical scale-up domains (racks, servers,
    wafers) attached to the same switch the same way. Every family emits one
    group per leaf switch (or scalable unit), never one per rack, so the
    number of groups — which sets the size of the MILP — grows with the number
    of leaves, not racks. :func:`uniform` splits identical racks over a
    chosen number of leaves, from one group of N to N groups of one (the
    ungrouped fleet), to measure what grouping buys.

Bandwidths
    A domain's uplink is left to the instance default (chips × the chip's
    scale-out bandwidth). A switch-to-switch link carries the sum of the
    uplinks below it divided by the tier's *oversubscription* (1 is
    non-blocking, 4 means a quarter of the downstream bandwidth goes up).

Latencies (one way, defaults)
    rack → leaf 2 µs, leaf → spine 1 µs, spine → core 2 µs: racks under one
    leaf are 4 µs apart, under two leaves of one pod 6 µs, in two pods 10 µs.

Examples
--------
>>> spec = leaf_spine(100, ["gb200", "h100"], racks_per_leaf=16, leaves_per_pod=4)
>>> spec.domains_total(), len(spec.domains), spec.chip_types()
(100, 7, ['gb200', 'h100'])
>>> [d["count"] for d in spec.domains]
[16, 16, 16, 16, 16, 16, 4]
>>> G = to_graph(spec)
>>> sorted(n for n, k in G.nodes(data="kind") if k == "switch")[:3]
['core', 'p00-l0', 'p00-l1']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from topology.chips import ChipSpec, load_chip_catalog
from topology.graph import fleet_graph

__all__ = [
    "CHIP_PREFERENCE",
    "FAMILIES",
    "FleetSpec",
    "fleet",
    "leaf_spine",
    "mixed_pods",
    "rail_optimized",
    "split_counts",
    "to_graph",
    "uniform",
]

#: Families accepted by :func:`fleet` (and ``placement generate --family``).
FAMILIES = ("leaf-spine", "rail", "mixed", "uniform")

#: Order in which chip types join a fleet of K types (K = 1..18): current
#: NVIDIA racks and HGX servers first, then AMD, Rubin + LPX, AWS, the rest.
CHIP_PREFERENCE = (
    "gb200", "h100", "h200", "b200", "mi355x", "rubin", "lp30", "trainium3",
    "gb300", "mi300x", "trainium2", "bertha", "wse3", "groq-lpu-v1", "corsair",
    "a100-80gb", "l4", "a10g",
)

RACK_LATENCY_US = 2.0
LEAF_LATENCY_US = 1.0
CORE_LATENCY_US = 2.0


@dataclass
class FleetSpec:
    """The ``hardware`` section of an instance: domain groups, switches, links (instance units)."""

    domains: list[dict] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The spec as an instance's ``hardware`` mapping (plain dicts and lists)."""
        return {"switches": list(self.switches), "links": [dict(x) for x in self.links],
                "domains": [dict(d) for d in self.domains]}

    def domains_total(self) -> int:
        """Scale-up domains in the fleet (sum of group counts)."""
        return sum(d["count"] for d in self.domains)

    def chip_types(self) -> list[str]:
        """Distinct chip names, sorted."""
        return sorted({d["chip"] for d in self.domains})


def split_counts(total: int, per: int) -> list[int]:
    """``total`` items in bins of ``per``, the last bin holding the remainder.

    Examples
    --------
    >>> split_counts(100, 16)
    [16, 16, 16, 16, 16, 16, 4]
    >>> split_counts(3, 16)
    [3]
    """
    if total < 1 or per < 1:
        raise ValueError(f"split_counts: expected total >= 1 and per >= 1, got {total}, {per}")
    full, rest = divmod(total, per)
    return [per] * full + ([rest] if rest else [])


def _chips(names: Sequence[str], catalog: dict[str, ChipSpec] | None) -> dict[str, ChipSpec]:
    catalog = load_chip_catalog() if catalog is None else catalog
    unknown = [n for n in names if n not in catalog]
    if unknown:
        raise ValueError(f"unknown chip {unknown[0]!r}; expected one of {', '.join(sorted(catalog))}")
    if not names:
        raise ValueError("expected at least one chip type")
    return {n: catalog[n] for n in names}


def _uplink_gb(chip: ChipSpec, count: int) -> float:
    """Total uplink of ``count`` domains of ``chip`` (default uplink: chips × scale-out), GB/s."""
    return chip.scale_up_domain_chips * chip.scale_out_bandwidth_bytes_per_s / 1e9 * count


def _group(name: str, chip: ChipSpec, count: int, switch: str) -> dict:
    return {"name": name, "chip": chip.name, "chips_per_domain": chip.scale_up_domain_chips, "count": int(count),
            "switch": switch, "uplink_latency_us": RACK_LATENCY_US}


def _link(a: str, b: str, gb: float, latency_us: float) -> dict:
    return {"source": a, "target": b, "bandwidth_gb_per_s": round(max(gb, 1e-3), 6), "latency_us": latency_us}


def _check_oversub(*values: float) -> None:
    for v in values:
        if not (v >= 1.0 and math.isfinite(v)):
            raise ValueError(f"oversubscription must be a finite number >= 1, got {v}")


def _clos(pods: list[list[tuple[str, int]]], chips: dict[str, ChipSpec], leaf_oversub: float,
          spine_oversub: float) -> FleetSpec:
    """Three tiers: each pod a list of leaves (chip, racks); leaf → pod spine → core."""
    spec = FleetSpec()
    multi_pod = len(pods) > 1
    if multi_pod:
        spec.switches.append("core")
    for p, leaves in enumerate(pods):
        spine = f"p{p:02d}-spine"
        spec.switches.append(spine)
        pod_up = 0.0
        for j, (chip_name, racks) in enumerate(leaves):
            chip = chips[chip_name]
            leaf = f"p{p:02d}-l{j}"
            spec.switches.append(leaf)
            spec.domains.append(_group(f"p{p:02d}-l{j}-{chip_name}", chip, racks, leaf))
            up = _uplink_gb(chip, racks) / leaf_oversub
            spec.links.append(_link(leaf, spine, up, LEAF_LATENCY_US))
            pod_up += up
        if multi_pod:
            spec.links.append(_link(spine, "core", pod_up / spine_oversub, CORE_LATENCY_US))
    return spec


def leaf_spine(
    domains: int,
    chips: Sequence[str],
    *,
    racks_per_leaf: int = 16,
    leaves_per_pod: int = 8,
    leaf_oversubscription: float = 2.0,
    spine_oversubscription: float = 4.0,
    catalog: dict[str, ChipSpec] | None = None,
) -> FleetSpec:
    """Homogeneous pods of racks under leaf and spine switches, pods joined by a core.

    Racks fill leaves of ``racks_per_leaf`` and leaves fill pods of
    ``leaves_per_pod``; every rack of a pod has the same chip, pods take the
    chip types in turn (``chips[p % len(chips)]``), the way generations are
    deployed hall by hall. When there are fewer pods than chip types, leaves
    take the types in turn instead, so every type appears when
    ``domains >= len(chips)`` (``racks_per_leaf`` shrinks to make room).

    Parameters
    ----------
    domains : int
        Scale-up domains (racks / servers) in the fleet, ≥ 1.
    chips : sequence of str
        Chip names from the catalogue; each domain is one full scale-up domain.
    racks_per_leaf, leaves_per_pod : int
        Fan-out of the two lower tiers.
    leaf_oversubscription, spine_oversubscription : float
        Downstream ÷ upstream bandwidth at the leaf and at the pod spine (≥ 1).

    Returns
    -------
    FleetSpec
        One domain group per leaf.

    Examples
    --------
    >>> s = leaf_spine(10, ["h100", "h200", "b200"])
    >>> [(d["chip"], d["count"]) for d in s.domains]
    [('h100', 3), ('h200', 3), ('b200', 3), ('h100', 1)]
    >>> s = leaf_spine(512, ["gb200", "rubin"], racks_per_leaf=16, leaves_per_pod=8)
    >>> len(s.domains), sorted({d["chip"] for d in s.domains if d["name"].startswith("p01")})
    (32, ['rubin'])
    """
    _check_oversub(leaf_oversubscription, spine_oversubscription)
    names = list(dict.fromkeys(chips))
    spec_chips = _chips(names, catalog)
    per_leaf = max(1, min(racks_per_leaf, domains // len(names)))
    leaves = split_counts(domains, per_leaf)
    pods_n = math.ceil(len(leaves) / leaves_per_pod)
    pods: list[list[tuple[str, int]]] = []
    for p in range(pods_n):
        block = leaves[p * leaves_per_pod:(p + 1) * leaves_per_pod]
        if pods_n >= len(names):
            pods.append([(names[p % len(names)], n) for n in block])
        else:  # fewer pods than types: rotate types over leaves
            pods.append([(names[(p * leaves_per_pod + j) % len(names)], n) for j, n in enumerate(block)])
    return _clos(pods, spec_chips, leaf_oversubscription, spine_oversubscription)


def mixed_pods(
    domains: int,
    chips: Sequence[str],
    *,
    types_per_pod: int = 3,
    racks_per_leaf: int = 16,
    leaves_per_pod: int = 8,
    leaf_oversubscription: float = 2.0,
    spine_oversubscription: float = 4.0,
    catalog: dict[str, ChipSpec] | None = None,
) -> FleetSpec:
    """Pods that each hold several chip types (one per leaf), e.g. Rubin NVL72 beside Groq LPX.

    Pod ``p`` holds the ``types_per_pod`` types starting at ``p·types_per_pod``
    (cyclically), its leaves taking them in turn, so disaggregated stages can
    pair across chip types inside a pod (6 µs) rather than across the core
    (10 µs).

    Examples
    --------
    >>> s = mixed_pods(96, ["rubin", "lp30", "gb200"], types_per_pod=2, racks_per_leaf=8, leaves_per_pod=4)
    >>> [(d["name"], d["count"]) for d in s.domains][:4]
    [('p00-l0-rubin', 8), ('p00-l1-lp30', 8), ('p00-l2-rubin', 8), ('p00-l3-lp30', 8)]
    >>> sorted({d["chip"] for d in s.domains if d["name"].startswith("p01")})
    ['gb200', 'rubin']
    """
    _check_oversub(leaf_oversubscription, spine_oversubscription)
    names = list(dict.fromkeys(chips))
    spec_chips = _chips(names, catalog)
    k = max(1, min(types_per_pod, len(names)))
    per_leaf = max(1, min(racks_per_leaf, domains // len(names)))
    leaves = split_counts(domains, per_leaf)
    # Enough pods to cover every type, even when leaves are few.
    lpp = max(k, min(leaves_per_pod, len(leaves) // math.ceil(len(names) / k)))
    pods: list[list[tuple[str, int]]] = []
    for p in range(math.ceil(len(leaves) / lpp)):
        types = [names[(p * k + i) % len(names)] for i in range(k)]
        block = leaves[p * lpp:(p + 1) * lpp]
        pods.append([(types[j % k], n) for j, n in enumerate(block)])
    return _clos(pods, spec_chips, leaf_oversubscription, spine_oversubscription)


def rail_optimized(
    domains: int,
    chips: Sequence[str],
    *,
    domains_per_unit: int = 32,
    spine_planes: int = 4,
    oversubscription: float = 1.0,
    catalog: dict[str, ChipSpec] | None = None,
) -> FleetSpec:
    """Rail-optimised scalable units (SUs) over parallel spine planes.

    In a rail-optimised fabric NIC *r* of every server of an SU goes to rail
    leaf *r*; the SU's rail leaves are non-blocking among themselves. Since a
    domain group attaches to one switch, an SU's rail leaves are aggregated
    into one switch node ``su{i}`` (one hop between any two of its servers,
    2 µs up and down). Every SU links to every one of ``spine_planes`` spine
    planes with ``1/spine_planes`` of its uplink (÷ ``oversubscription``), so
    traffic between SUs has several parallel paths. SUs are homogeneous and
    take the chip types in turn.

    Examples
    --------
    >>> s = rail_optimized(100, ["h100", "b200"], domains_per_unit=32, spine_planes=2)
    >>> [(d["name"], d["count"]) for d in s.domains]
    [('su00-h100', 32), ('su01-b200', 32), ('su02-h100', 32), ('su03-b200', 4)]
    >>> len(s.links), s.links[0]["bandwidth_gb_per_s"]
    (8, 6400.0)
    """
    _check_oversub(oversubscription)
    if spine_planes < 1:
        raise ValueError(f"spine_planes must be >= 1, got {spine_planes}")
    names = list(dict.fromkeys(chips))
    spec_chips = _chips(names, catalog)
    per_unit = max(1, min(domains_per_unit, domains // len(names)))
    units = split_counts(domains, per_unit)
    spec = FleetSpec()
    planes = [f"plane{q}" for q in range(spine_planes)] if len(units) > 1 else []
    spec.switches.extend(planes)
    for i, n in enumerate(units):
        chip = spec_chips[names[i % len(names)]]
        su = f"su{i:02d}"
        spec.switches.append(su)
        spec.domains.append(_group(f"{su}-{chip.name}", chip, n, su))
        for plane in planes:
            spec.links.append(_link(su, plane, _uplink_gb(chip, n) / spine_planes / oversubscription,
                                    LEAF_LATENCY_US))
    return spec


def uniform(
    domains: int,
    chip: str,
    *,
    groups: int = 1,
    oversubscription: float = 1.0,
    catalog: dict[str, ChipSpec] | None = None,
) -> FleetSpec:
    """``domains`` identical racks split as evenly as possible over ``groups`` leaves under one spine.

    ``groups=1`` is the grouped fleet (one domain group of ``domains``);
    ``groups=domains`` is the same fleet ungrouped (one group per rack). The
    leaves are identical, so all splits have the same optimum whenever the
    network does not bind.

    Examples
    --------
    >>> [d["count"] for d in uniform(10, "gb200", groups=3).domains]
    [4, 3, 3]
    >>> len(uniform(1000, "gb200").domains), uniform(1000, "gb200").domains_total()
    (1, 1000)
    """
    _check_oversub(oversubscription)
    if not 1 <= groups <= domains:
        raise ValueError(f"groups must be in 1..domains ({domains}), got {groups}")
    spec_chip = _chips([chip], catalog)[chip]
    base, extra = divmod(domains, groups)
    spec = FleetSpec(switches=["spine"])
    width = len(str(groups - 1))
    for g in range(groups):
        n = base + (1 if g < extra else 0)
        leaf = f"leaf{g:0{width}d}"
        spec.switches.append(leaf)
        spec.domains.append(_group(f"{leaf}-{chip}", spec_chip, n, leaf))
        spec.links.append(_link(leaf, "spine", _uplink_gb(spec_chip, n) / oversubscription, LEAF_LATENCY_US))
    return spec


def fleet(family: str, domains: int, chips: Sequence[str], **kwargs) -> FleetSpec:
    """Dispatch to a family by its CLI name (``leaf-spine``, ``rail``, ``mixed``, ``uniform``).

    ``uniform`` uses the first chip only.

    Examples
    --------
    >>> fleet("rail", 10, ["h100"]).domains_total()
    10
    """
    if family == "leaf-spine":
        return leaf_spine(domains, chips, **kwargs)
    if family == "rail":
        return rail_optimized(domains, chips, **kwargs)
    if family == "mixed":
        return mixed_pods(domains, chips, **kwargs)
    if family == "uniform":
        return uniform(domains, chips[0], **kwargs)
    raise ValueError(f"unknown family {family!r}; expected one of {', '.join(FAMILIES)}")


def to_graph(spec: FleetSpec, catalog: dict[str, ChipSpec] | None = None) -> nx.DiGraph:
    """The fleet graph of a spec (:func:`topology.graph.fleet_graph`, base units).

    Examples
    --------
    >>> G = to_graph(uniform(4, "h100", groups=2))
    >>> G.edges["leaf0-h100", "leaf0"]["bandwidth_bytes_per_s"]
    800000000000.0
    """
    chips = _chips(spec.chip_types(), catalog)
    groups = []
    for d in spec.domains:
        chip = chips[d["chip"]]
        size = d.get("chips_per_domain") or chip.scale_up_domain_chips
        up = d.get("uplink_gb_per_s")
        groups.append({"name": d["name"], "chip": d["chip"], "chips_per_domain": size, "count": d["count"],
                       "switch": d.get("switch"),
                       "uplink_bytes_per_s": up * 1e9 if up else size * chip.scale_out_bandwidth_bytes_per_s,
                       "uplink_latency_s": d.get("uplink_latency_us", 2.0) * 1e-6})
    links = [{"source": x["source"], "target": x["target"], "bandwidth_bytes_per_s": x["bandwidth_gb_per_s"] * 1e9,
              "latency_s": x.get("latency_us", 1.0) * 1e-6} for x in spec.links]
    return fleet_graph(groups, switches=spec.switches, links=links)
