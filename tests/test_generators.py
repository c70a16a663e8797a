"""Fleet families (topology.generators) and the seeded instance builder (placement.bench.generate)."""

from __future__ import annotations

import re

import networkx as nx
import pytest
import yaml
from typer.testing import CliRunner

from placement.bench.generate import (
    CLASS_TEMPLATES,
    build_instance,
    pick_chips,
    workload,
    write_instance,
)
from placement.cli.app import app
from placement.core.instance.loading import load_instance, parse_instance
from topology.chips import load_chip_catalog
from topology.generators import (
    CHIP_PREFERENCE,
    FAMILIES,
    fleet,
    leaf_spine,
    mixed_pods,
    rail_optimized,
    split_counts,
    to_graph,
    uniform,
)
from topology.routing import Routing

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
EIGHT = list(CHIP_PREFERENCE[:8])


def _well_formed(spec):
    names = [d["name"] for d in spec.domains]
    assert len(set(names)) == len(names)
    assert len(set(spec.switches)) == len(spec.switches)
    assert not set(names) & set(spec.switches)
    for n in names + spec.switches:
        assert NAME.match(n) and len(n) <= 64
    for d in spec.domains:
        assert d["switch"] in spec.switches and d["count"] >= 1
    for link in spec.links:
        assert link["source"] in spec.switches and link["target"] in spec.switches
        assert link["bandwidth_gb_per_s"] > 0
    G = to_graph(spec)
    assert nx.is_weakly_connected(G)


@pytest.mark.parametrize("family", ["leaf-spine", "rail", "mixed"])
@pytest.mark.parametrize("n", [1, 7, 10, 100, 1000, 10_000])
def test_families_have_exact_domain_counts_and_all_chip_types(family, n):
    spec = fleet(family, n, EIGHT)
    assert spec.domains_total() == n
    _well_formed(spec)
    if n >= len(EIGHT):
        assert spec.chip_types() == sorted(EIGHT)


def test_groups_grow_with_leaves_not_racks():
    small, big = leaf_spine(1000, EIGHT), leaf_spine(10_000, EIGHT)
    assert len(small.domains) == 63 and len(big.domains) == 625  # 16 racks per leaf
    assert max(d["count"] for d in big.domains) == 16


def test_leaf_spine_oversubscription_and_latency_tiers():
    spec = leaf_spine(64, ["h100", "b200"], racks_per_leaf=8, leaves_per_pod=2, leaf_oversubscription=2,
                      spine_oversubscription=4)
    h100 = load_chip_catalog()["h100"]
    rack_gb = h100.scale_up_domain_chips * h100.scale_out_bandwidth_bytes_per_s / 1e9
    links = {(x["source"], x["target"]): x for x in spec.links}
    assert links["p00-l0", "p00-spine"]["bandwidth_gb_per_s"] == pytest.approx(8 * rack_gb / 2)
    assert links["p00-spine", "core"]["bandwidth_gb_per_s"] == pytest.approx(2 * 8 * rack_gb / 2 / 4)
    G = to_graph(spec)
    assert Routing(G).latency_s("p00-l0-h100", "p00-l1-h100") == pytest.approx(6e-6)
    assert Routing(G).latency_s("p00-l0-h100", "p01-l0-b200") == pytest.approx(10e-6)
    # every pod is homogeneous when there are at least as many pods as chip types
    for d in spec.domains:
        assert d["chip"] == ("h100" if d["name"].startswith(("p00", "p02")) else "b200")


def test_mixed_pods_put_several_types_in_one_pod():
    spec = mixed_pods(512, ["rubin", "lp30", "gb200", "trainium3"], types_per_pod=2)
    pods = {}
    for d in spec.domains:
        pods.setdefault(d["name"][:3], set()).add(d["chip"])
    assert all(len(types) == 2 for types in pods.values())
    G = to_graph(spec)
    assert Routing(G).latency_s("p00-l0-rubin", "p00-l1-lp30") == pytest.approx(6e-6)


def test_rail_units_have_parallel_spine_planes():
    spec = rail_optimized(128, ["h100"], domains_per_unit=32, spine_planes=4)
    assert [d["count"] for d in spec.domains] == [32] * 4
    G = to_graph(spec)
    assert len(list(nx.all_shortest_paths(G, "su00-h100", "su01-h100"))) == 4
    assert Routing(G).latency_s("su00-h100", "su01-h100") == pytest.approx(6e-6)


def test_uniform_is_the_symmetry_grouping_knob():
    assert len(uniform(1000, "gb200").domains) == 1
    assert [d["count"] for d in uniform(1000, "gb200", groups=10).domains] == [100] * 10
    ungrouped = uniform(50, "gb200", groups=50)
    assert len(ungrouped.domains) == 50 and {d["count"] for d in ungrouped.domains} == {1}


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="unknown chip"):
        leaf_spine(10, ["nope"])
    with pytest.raises(ValueError, match="oversubscription"):
        leaf_spine(10, ["h100"], leaf_oversubscription=0.5)
    with pytest.raises(ValueError, match="groups"):
        uniform(10, "h100", groups=11)
    with pytest.raises(ValueError, match="family"):
        fleet("torus", 10, ["h100"])
    assert split_counts(33, 16) == [16, 16, 1]
    assert set(FAMILIES) == {"leaf-spine", "rail", "mixed", "uniform"}


def test_workload_is_realistic_and_unique():
    classes = workload(20, seed=3)
    names = [c["name"] for c in classes]
    assert len(set(names)) == 20
    agent = next(c for c in classes if c["name"] == "coding-agent")
    assert agent["cached_prefix_tokens"] > 90_000 and agent["prefix_cached_on_decode"]
    reasoning = next(c for c in classes if c["name"] == "reasoning")
    assert reasoning["output_tokens"] > 4 * reasoning["prompt_tokens"]
    assert len(CLASS_TEMPLATES) >= 6
    assert workload(6, seed=3) == workload(6, seed=3) != workload(6, seed=4)


def test_build_instance_is_seeded_valid_and_written(tmp_path):
    rates = {"chat": 20.0, "summarisation": 3.0}
    kw = {"domains": 40, "chip_types": 3, "classes": 2, "family": "mixed", "rates": rates}
    a, b, c = build_instance(seed=1, **kw), build_instance(seed=1, **kw), build_instance(seed=2, **kw)
    assert a == b and a != c
    inst = parse_instance(a)
    assert inst.modes == ["aggregated", "pd", "pd-af"] and inst.model == "llama-3.1-70b"
    assert sum(d.count for d in inst.hardware.domains) == 40
    p1, p2 = write_instance(a, tmp_path / "a.yaml"), write_instance(b, tmp_path / "b.yaml")
    assert p1.read_bytes() == p2.read_bytes()
    assert load_instance(p1) == inst
    assert sorted(pick_chips(3, seed=1)) == sorted(CHIP_PREFERENCE[:3])


def test_calibrated_rates_load_the_fleet():
    doc = build_instance(domains=10, chip_types=["h100", "b200"], classes=2, family="leaf-spine", seed=0,
                         modes=["aggregated"], load=0.3)
    rates = {c["name"]: c["rate_rps"] for c in doc["workload"]["classes"]}
    assert set(rates) == {"chat", "summarisation"} and all(r > 0 for r in rates.values())
    more = build_instance(domains=20, chip_types=["h100", "b200"], classes=2, family="leaf-spine", seed=0,
                          modes=["aggregated"], load=0.3)
    # twice the fleet, about twice the demand
    assert more["workload"]["classes"][0]["rate_rps"] == pytest.approx(2 * rates["chat"], rel=0.05)


def test_generate_cli_writes_a_loadable_instance(tmp_path):
    out = tmp_path / "g.yaml"
    r = CliRunner().invoke(app, ["generate", "--domains", "12", "--chip-types", "2", "--classes", "1",
                                 "--family", "uniform", "--groups", "3", "--modes", "aggregated", "--out", str(out)])
    assert r.exit_code == 0, r.output
    inst = load_instance(out)
    assert [d.count for d in inst.hardware.domains] == [4, 4, 4]
    assert yaml.safe_load(out.read_text())["name"].startswith("bench-uniform-d12-g3")
    bad = CliRunner().invoke(app, ["generate", "--domains", "5", "--family", "torus", "--out", str(out)])
    assert bad.exit_code == 2
