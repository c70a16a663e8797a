"""Tests of the placement MILP (solvers.milp) on hand-made problems with known optima."""

from __future__ import annotations

import math
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import networkx as nx
import numpy as np
import pytest

from solvers import (
    Column,
    Demand,
    Edge,
    Part,
    Problem,
    Route,
    Site,
    Transfer,
    build_model,
    check_packable,
    export_model,
    lp_bound,
    pack_into_domains,
    relax,
    solve,
)
from solvers.extract import cancel_cycles, model_stats
from solvers.milp import NEGLIGIBLE

BACKENDS = ["cbc", "highs"]


# --------------------------------------------------------------------------- builders


def site(name, resource, *, node=None, D=1, m=20, usd=1.0, watts=100.0):
    return Site(
        name=name,
        node=node or f"node_{name}",
        resource=resource,
        units_per_domain=D,
        domains=m,
        usd_per_hour_per_unit=usd,
        power_w_per_unit=watts,
    )


def column(name, resource, capacity, units=1):
    return Column(name=name, parts=[Part(resource=resource, units=units)], capacity=capacity)


def one_step(rate, columns, sites, **kw):
    return Problem(
        demands=[Demand(name="d", rate=rate)],
        routes=[Route(name="r", demand="d", steps=["q"])],
        columns=columns,
        sites=sites,
        **kw,
    )


def ratio_problem(rate=12.0, **kw):
    """X: 4 req/s per replica, $1/h, 300 W; Y: 10 req/s, $2.6/h, 500 W; one unit each.

    rate 12: 3X = $3.00 / 900 W beats 1X+1Y = $3.60 / 800 W and 2Y = $5.20 / 1000 W.
    rate 10: 1Y = $2.60 beats 3X = $3.00 although X has the better $/req ratio.
    """
    return one_step(
        rate,
        [column("X", "x", {"q": 4.0}), column("Y", "y", {"q": 10.0})],
        [site("sx", "x", usd=1.0, watts=300.0), site("sy", "y", usd=2.6, watts=500.0)],
        **kw,
    )


def melange(fixed_assignment=False, single_resource=False):
    """Mélange's toy as a generic problem: 4 request-size buckets, A10G vs A100.

    Rates 30*[0.2, 0.1, 0.5, 0.2] = [6, 3, 15, 6] req/s; A10G ($1.01/h) serves
    [2, 1, 5, 2], A100 ($3.67/h) serves [20, 20, 40, 20] req/s per replica.
    Mixing is linear (Σ a/cap ≤ n). In A100-equivalents the load is
    0.3 + 0.15 + 0.375 + 0.3 = 1.125, so one A100 is not enough; the cheapest
    top-up is bucket 2 on A10G (5 req/s = 0.125 A100-eq on exactly one A10G):
    optimum 1 A100 + 1 A10G = $4.68/h. Mélange's $6.70/h (1 A100 + 3 A10G)
    keeps each bucket on one GPU type: fixing A10G to bucket 2 and A100 to
    buckets 0, 1, 3 reproduces it (15/5 = 3 A10G, 0.75 A100 -> 1), and so
    does letting the solver choose one GPU type per bucket (``single_resource``):
    one A100 holds at most three buckets, the fourth needs 3 A10G (bucket 1
    or 2), or a second A100 ($7.34) — $6.70 is the cheapest.
    """
    rates = [6.0, 3.0, 15.0, 6.0]
    a10g, a100 = [2.0, 1.0, 5.0, 2.0], [20.0, 20.0, 40.0, 20.0]
    small = {f"b{i}": c for i, c in enumerate(a10g) if not fixed_assignment or i == 2}
    large = {f"b{i}": c for i, c in enumerate(a100) if not fixed_assignment or i != 2}
    return Problem(
        demands=[
            Demand(name=f"bucket{i}", rate=r, single_resource=single_resource)
            for i, r in enumerate(rates)
        ],
        routes=[Route(name=f"r{i}", demand=f"bucket{i}", steps=[f"b{i}"]) for i in range(4)],
        columns=[column("A10G", "a10g", small), column("A100", "a100", large)],
        sites=[site("pool_a10g", "a10g", usd=1.01), site("pool_a100", "a100", usd=3.67)],
    )


def transfer_problem(edge_capacity):
    """Prefill P and decode D (10 req/s each per replica) hand over 1e8 B/request.

    The $1 site holds one replica, the $2 site four, on different nodes. With a
    wide link P and D split over the two sites: $3, 1e9 B/s crossing. With a
    5e8 B/s link the crossing is capped, so both go to the $2 site: $4 (half
    prefill on the cheap site would need a third replica: $5).
    """
    return Problem(
        demands=[Demand(name="d", rate=10.0)],
        routes=[Route(name="r", demand="d", steps=["pre", "dec"])],
        transfers=[
            Transfer(name="kv", route="r", source="pre", target="dec", bytes_per_request=1e8)
        ],
        columns=[column("P", "gpu", {"pre": 10.0}), column("D", "gpu", {"dec": 10.0})],
        sites=[
            site("cheap", "gpu", node="n1", m=1, usd=1.0),
            site("dear", "gpu", node="n2", m=4, usd=2.0),
        ],
        edges=[
            Edge(source="n1", target="n2", capacity_bytes_per_s=edge_capacity, latency_s=1e-6),
            Edge(source="n2", target="n1", capacity_bytes_per_s=edge_capacity, latency_s=1e-6),
        ],
    )


def pair_problem(limit=math.inf, far_capacity=1e11):
    """A two-part column (attention + FFN, 10 req/s per pair, 1e9 B/s each way).

    FFN is $1 on a far node (10 µs) and $3 on a near node (2 µs); attention $1.
    No limit: $1 + $1 = $2. Limit 5 µs, or a far link narrower than 1e9 B/s:
    the near FFN, $1 + $3 = $4.
    """
    af = Column(
        name="AF",
        parts=[Part(resource="attn", units=1), Part(resource="ffn", units=1)],
        capacity={"q": 10.0},
        pair_bytes_per_s=1e9,
        pair_max_latency_s=limit,
    )
    edges = []
    for other, lat, cap in (("nf", 10e-6, far_capacity), ("nn", 2e-6, 1e11)):
        edges += [
            Edge(source="na", target=other, capacity_bytes_per_s=cap, latency_s=lat),
            Edge(source=other, target="na", capacity_bytes_per_s=cap, latency_s=lat),
        ]
    return one_step(
        10.0,
        [af],
        [
            site("A", "attn", node="na", m=4, usd=1.0),
            site("Ffar", "ffn", node="nf", m=4, usd=1.0),
            site("Fnear", "ffn", node="nn", m=4, usd=3.0),
        ],
        edges=edges,
    )


# (problem factory, expected status, expected objective)
CASES = {
    "ratio_12": (lambda: ratio_problem(12.0), "optimal", 3.0),
    "ratio_10_integrality": (lambda: ratio_problem(10.0), "optimal", 2.6),
    "ratio_power": (lambda: ratio_problem(objective="power"), "optimal", 800.0),
    "ratio_units": (lambda: ratio_problem(objective="units"), "optimal", 2.0),
    "power_cap_binds": (lambda: ratio_problem(power_cap_w=850.0), "optimal", 3.6),
    "budget_binds": (
        lambda: ratio_problem(objective="power", budget_usd_per_hour=3.2),
        "optimal",
        900.0,
    ),
    "power_cap_infeasible": (lambda: ratio_problem(power_cap_w=700.0), "infeasible", None),
    "too_much_demand": (lambda: ratio_problem(1000.0), "infeasible", None),
    "melange": (melange, "optimal", 4.68),
    "melange_fixed_assignment": (lambda: melange(True), "optimal", 6.70),
    "melange_single_resource": (lambda: melange(single_resource=True), "optimal", 6.70),
    "transfer_wide": (lambda: transfer_problem(1e10), "optimal", 3.0),
    "transfer_bottleneck": (lambda: transfer_problem(5e8), "optimal", 4.0),
    "pair_no_limit": (lambda: pair_problem(), "optimal", 2.0),
    "pair_latency_cut": (lambda: pair_problem(limit=5e-6), "optimal", 4.0),
    "pair_bandwidth_cut": (lambda: pair_problem(far_capacity=5e8), "optimal", 4.0),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_known_optimum(case, backend):
    factory, status, objective = CASES[case]
    sol = solve(factory(), backend=backend)
    assert sol.status == status, sol.message
    if objective is None:
        assert sol.objective is None and sol.replicas == []
    else:
        assert sol.objective == pytest.approx(objective, rel=1e-9)
        assert sol.best_bound == pytest.approx(objective, rel=1e-6)
        assert sol.gap == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("case", sorted(CASES))
def test_backends_agree(case):
    cbc, highs = (solve(CASES[case][0](), backend=b) for b in BACKENDS)
    assert cbc.status == highs.status
    if cbc.objective is not None:
        assert cbc.objective == pytest.approx(highs.objective, rel=1e-9)


def test_melange_replicas():
    assert _counts(solve(melange())) == {("A100", 0, "pool_a100"): 1, ("A10G", 0, "pool_a10g"): 1}
    assert _counts(solve(melange(True))) == {
        ("A100", 0, "pool_a100"): 1,
        ("A10G", 0, "pool_a10g"): 3,
    }
    single = solve(melange(single_resource=True))
    assert _counts(single) == {("A100", 0, "pool_a100"): 1, ("A10G", 0, "pool_a10g"): 3}
    served = {}
    for load in single.loads:  # every bucket is served by one GPU type only
        served.setdefault(load.step, set()).add(load.column)
    assert all(len(columns) == 1 for columns in served.values()), served
    assert single.integer_variables == 2 + 8  # n, and w for 4 buckets x 2 types


def test_objectives_and_totals():
    sol = solve(ratio_problem(objective="power"))
    assert _counts(sol) == {("X", 0, "sx"): 1, ("Y", 0, "sy"): 1}
    assert (sol.power_w, sol.cost_usd_per_hour, sol.units) == (800.0, 3.6, 2)
    assert sum(load.rate for load in sol.loads) == pytest.approx(12.0)
    assert sol.route_rates == {"r": 12.0}


def test_transfer_flows_reported():
    wide = solve(transfer_problem(1e10))
    assert sum(f.bytes_per_s for f in wide.flows) == pytest.approx(1e9)
    assert [(e.load_bytes_per_s, e.capacity_bytes_per_s) for e in wide.edge_loads] == [(1e9, 1e10)]
    narrow = solve(transfer_problem(5e8))
    assert narrow.flows == [] and _counts(narrow) == {("D", 0, "dear"): 1, ("P", 0, "dear"): 1}


def test_pair_traffic_both_directions():
    sol = solve(pair_problem(limit=5e-6))
    assert [(p.column, p.source_site, p.target_site, p.replicas) for p in sol.pairs] == [
        ("AF", "A", "Fnear", 1.0)
    ]
    assert {(e.source, e.target): e.load_bytes_per_s for e in sol.edge_loads} == {
        ("na", "nn"): 1e9,
        ("nn", "na"): 1e9,
    }
    assert _counts(sol) == {("AF", 0, "A"): 1, ("AF", 1, "Fnear"): 1}


def test_no_allowed_pair_fixes_column_to_zero():
    sol = solve(pair_problem(limit=1e-6))  # both FFN sites are farther than 1 µs
    assert sol.status == "infeasible"
    _, v = build_model(pair_problem(limit=1e-6))
    assert v.n == {} and v.z == {}


@pytest.mark.parametrize("backend", ["nonexistent", "GLPK_CMD"])
def test_unavailable_backend_is_an_error_not_an_exception(backend):
    sol = solve(ratio_problem(), backend=backend)
    assert sol.status == "error" and sol.objective is None
    assert "cbc" in sol.message and "highs" in sol.message


def test_relaxation_bound():
    # LP: every bucket is cheaper per request on A100: 1.125 A100 * $3.67 = $4.12875
    assert lp_bound(melange()) == pytest.approx(4.12875, rel=1e-9)
    relaxed = relax(melange(), backend="cbc")
    assert relaxed.status == "optimal" and relaxed.replicas == [] and relaxed.integer_variables == 0
    assert relaxed.objective == pytest.approx(4.12875, rel=1e-9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit_reports_incumbent_or_nothing(backend):
    sol = solve(hard_problem(), backend=backend, time_limit_s=0.05)
    assert sol.status == "time_limit", sol.message
    if sol.objective is None:
        assert sol.replicas == [] and sol.loads == []
    else:
        assert sol.replicas
        # Under load the start's own search can use the whole limit: the start stands with no bound, and says so.
        if sol.best_bound is None:
            assert "before the solver started" in sol.message, sol.message
        else:
            assert sol.best_bound <= sol.objective


@pytest.mark.parametrize("backend", BACKENDS)
def test_deterministic_json(backend):
    problem = combined_problem()
    first, second = (solve(problem, backend=backend) for _ in range(2))
    assert first.status == "optimal"
    assert first.canonical_json() == second.canonical_json()
    assert (
        first.model_dump_json(exclude={"build_seconds", "solve_seconds"}) == second.canonical_json()
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_concurrent_threads_identical(backend):
    problem = combined_problem()
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: solve(problem, backend=backend).canonical_json(), range(4))
        )
    assert len(set(results)) == 1 and '"optimal"' in results[0]


def _solve_cbc_json(problem):
    return solve(problem, backend="cbc").canonical_json()


def test_concurrent_processes_identical():
    problem = combined_problem()
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_solve_cbc_json, [problem] * 2))
    assert results[0] == results[1] == solve(problem, backend="cbc").canonical_json()


def test_check_packable():
    bad = one_step(1.0, [column("c3", "gpu", {"q": 1.0}, units=3)], [site("s8", "gpu", D=8)])
    with pytest.raises(ValueError, match="c3.*|s8"):
        check_packable(bad)
    with pytest.raises(ValueError, match="s8"):
        build_model(bad)
    not_multiple = one_step(
        1.0, [column("c12", "gpu", {"q": 1.0}, units=12)], [site("s8", "gpu", D=8)]
    )
    with pytest.raises(ValueError, match="c12"):
        check_packable(not_multiple)
    chain = [column(f"c{u}", "gpu", {"q": 1.0}, units=u) for u in (1, 2, 4, 8, 16, 32)]
    check_packable(one_step(1.0, chain, [site("s8", "gpu", D=8)]))


def test_pack_into_domains_exact_and_overflow():
    s = site("s", "gpu", D=8, m=6)
    sizes = {
        "two_domains": (16, 1),
        "full": (8, 1),
        "half": (4, 3),
        "quarter": (2, 2),
        "one": (1, 8),
    }
    packed = pack_into_domains(s, sizes)  # 16 + 8 + 12 + 4 + 8 = 48 = 6 domains * 8: exact
    assert sorted(packed) == list(range(6))
    assert all(sum(u for _, u in hosted) == 8 for hosted in packed.values())
    assert packed[0] == [("two_domains", 8)] and packed[1] == [("two_domains", 8)]
    listed = {k: sum(u for hosted in packed.values() for kk, u in hosted if kk == k) for k in sizes}
    assert listed == {k: units * count for k, (units, count) in sizes.items()}
    with pytest.raises(ValueError, match="does not fit"):
        pack_into_domains(s, {**sizes, "extra": (1, 1)})


def test_solution_packs_into_domains():
    sol = solve(chain_problem())
    assert sol.status == "optimal"
    problem = chain_problem()
    for s in problem.sites:
        here = {
            (p.column, p.part): (problem_units(problem, p.column, p.part), p.replicas)
            for p in sol.replicas
            if p.site == s.name
        }
        pack_into_domains(s, here)  # raises if the aggregate unit constraint was not exact


def test_export_names(tmp_path):
    problem = combined_problem()
    lp, mps = export_model(problem, tmp_path / "m.lp"), export_model(problem, tmp_path / "m.mps")
    text = lp.read_text()
    assert (
        "n__AF__0__A" in text
        and "edge_capacity__na__nn" in text
        and "flow_conservation__kv__n1" in text
    )
    assert export_model(problem, tmp_path / "again.lp").read_text() == text
    assert mps.read_text().startswith("*SENSE:Minimize") or "ROWS" in mps.read_text()
    with pytest.raises(ValueError):
        export_model(problem, tmp_path / "m.txt")


def test_unsafe_names_round_trip(tmp_path):
    problem = one_step(
        5.0,
        [
            column("A100 (80GB)/tp-2", "gpu+x", {"q": 2.0}),
            column("A100_80GB_tp_2", "gpu+x", {"q": 3.0}),
        ],
        [site("rack 1/slot[0]", "gpu+x", usd=1.0)],
    )
    _, v = build_model(problem)
    assert all(len(name) <= 100 and " " not in name and "/" not in name for name in v.labels)
    assert len({name for name in v.labels}) == len(v.labels)
    export_model(problem, tmp_path / "u.lp")
    sol = solve(problem)
    assert sol.status == "optimal" and {p.column for p in sol.replicas} <= {
        "A100 (80GB)/tp-2",
        "A100_80GB_tp_2",
    }
    assert sol.replicas[0].site == "rack 1/slot[0]"


def test_model_size_counts():
    m, v = build_model(melange())
    assert model_stats(m) == model_stats(m, v)  # the fast count agrees with PuLP's own
    sol = solve(melange())
    # x: 4 routes, y: 4 steps x 2 columns, n: 2 -> 14 variables; rows: 4 splits, 4 coverages,
    # 2 replica capacities, 2 site units
    assert (sol.variables, sol.integer_variables, sol.constraints) == (14, 2, 12)
    assert sol.nonzeros == 4 + 4 * 3 + 2 * 5 + 2


def test_trivial_and_invalid_problems():
    idle = solve(ratio_problem(0.0))  # no demand: nothing to place, no solver call
    assert (idle.status, idle.objective, idle.replicas, idle.variables) == ("optimal", 0.0, [], 0)
    no_route = Problem(
        demands=[Demand(name="d", rate=1.0)],
        routes=[],
        columns=[column("X", "x", {"q": 1.0})],
        sites=[site("sx", "x")],
    )
    assert solve(no_route).status == "infeasible"
    twice = ratio_problem().model_copy(update={"sites": [site("sx", "x"), site("sx", "y")]})
    with pytest.raises(ValueError, match="site names must be unique"):
        build_model(twice)
    doubled = transfer_problem(1e9)
    doubled = doubled.model_copy(update={"edges": doubled.edges + doubled.edges[:1]})
    with pytest.raises(ValueError, match="two edges"):
        build_model(doubled)


# --------------------------------------------------------------------------- scaling


def _rows(m):
    return {row.name: {var.name: a for var, a in row.items()} for row in m.constraints()}


def test_rows_are_divided_by_powers_of_two_exactly():
    """Every row is its natural-unit row divided by a power of two: exact in binary.

    With powers of ten, 0.3/0.1 != 3 and CBC's preprocessing returned 2 A100 ($7.34) as optimal
    for the single-resource Mélange toy (test_known_optimum covers the solve itself).
    """
    m, v = build_model(melange(single_resource=True))
    rows = _rows(m)
    for name, scale in v.row_scale.items():
        assert scale == 2.0 ** round(math.log2(scale)) and scale != 1.0, (name, scale)
    for name, row in rows.items():
        assert 2**-0.5 <= max(abs(a) for a in row.values()) <= 2**0.5, (name, row)
    for i, (lam, small, large) in enumerate(
        zip([6.0, 3.0, 15.0, 6.0], [2, 1, 5, 2], [20, 20, 40, 20])
    ):
        name = f"step_coverage__b{i}"
        natural = {k: a * v.row_scale.get(name, 1.0) for k, a in rows[name].items()}
        assert natural == {
            f"y__A10G__b{i}__pool_a10g": small,
            f"y__A100__b{i}__pool_a100": large,
            f"x__r{i}": -lam,
        }


def test_flow_and_pair_units_read_back_exactly():
    """Flows in powers of ten of bytes/s, pairs in powers of ten of pairs: whole values survive
    CBC's 8-digit solution text. Pair traffic 1e3 B/s beside 1e9 B/s flows gets μ = 1000."""
    base = combined_problem()
    light = base.model_copy(
        update={
            "columns": [
                c.model_copy(update={"pair_bytes_per_s": 1e3}) if c.name == "AF" else c
                for c in base.columns
            ]
        }
    )
    _, v = build_model(light)
    assert v.flow_unit == {"kv": 1e9} and v.pair_unit == {"AF": 1e3}
    assert all(var.upBound is None for var in v.z.values())  # the pair rows bound z
    for backend in BACKENDS:
        sol = solve(light, backend=backend)
        assert sol.status == "optimal" and sol.objective == pytest.approx(8.0, rel=1e-12)
        assert [(p.column, p.source_site, p.target_site, p.replicas) for p in sol.pairs] == [
            ("AF", "A", "Fnear", 1.0)
        ]
        assert {(e.source, e.target): e.load_bytes_per_s for e in sol.edge_loads} == {
            ("na", "nn"): 1e3,
            ("nn", "na"): 1e3,
        }
    wide = solve(transfer_problem(1e10), backend="cbc")
    assert [f.bytes_per_s for f in wide.flows] == [1e9]


def test_negligible_pair_traffic_is_left_out_of_edge_rows():
    """Pair terms whose most traffic, summed, stays below 1e-9 of the edge are left out.

    Two identical columns, 4 pairs at most each, one crossing of na->nf per pair: 4·B each on a
    1e11 B/s edge (budget 100 B/s). At B = 15 one term (60) fits the budget, two (120) do not.
    """
    base = pair_problem()
    twins = [
        base.columns[0].model_copy(update={"name": n, "pair_bytes_per_s": 15.0})
        for n in ("AF1", "AF2")
    ]
    problem = base.model_copy(update={"columns": twins})
    assert NEGLIGIBLE * 1e11 == pytest.approx(100.0)
    m, _ = build_model(problem)
    row = _rows(m)["edge_capacity__na__nf"]
    assert sorted(row) == ["z__AF2__A__Ffar"]  # smallest (most traffic, key) first: AF1 left out
    tiny = base.model_copy(
        update={"columns": [base.columns[0].model_copy(update={"pair_bytes_per_s": 1.0})]}
    )
    m, _ = build_model(tiny)
    assert not any(name.startswith("edge_capacity") for name in _rows(m))  # nothing left to bound
    for backend in BACKENDS:
        sol = solve(tiny, backend=backend)
        assert sol.objective == pytest.approx(2.0, rel=1e-12)  # the far $1 FFN, as without traffic
        # the traffic left out of the rows is still reported
        assert {(e.source, e.target): e.load_bytes_per_s for e in sol.edge_loads} == {
            ("na", "nf"): 1.0,
            ("nf", "na"): 1.0,
        }


def test_cancel_cycles_keeps_net_flow_and_leaves_no_cycle():
    rng = np.random.default_rng(7)
    nodes = [f"v{i}" for i in range(6)]
    for _ in range(50):
        flow = {
            (a, b): float(rng.integers(1, 10))
            for a in nodes
            for b in nodes
            if a != b and rng.random() < 0.4
        }
        out = cancel_cycles(flow)

        def net(f):
            total = dict.fromkeys(nodes, 0.0)
            for (a, b), x in f.items():
                total[a] += x
                total[b] -= x
            return total

        assert net(out) == pytest.approx(net(flow))
        assert all(0 < x <= flow[e] for e, x in out.items())
        assert nx.is_directed_acyclic_graph(nx.DiGraph(list(out)))
    assert cancel_cycles({("a", "b"): 2.0, ("b", "a"): 2.0}) == {}


# --------------------------------------------------------------------------- helpers


def _counts(sol):
    return {(p.column, p.part, p.site): p.replicas for p in sol.replicas}


def problem_units(problem, column_name, part):
    return next(c for c in problem.columns if c.name == column_name).parts[part].units


def combined_problem():
    """Transfer bottleneck and latency-cut pair in one problem (two demands)."""
    t, p = transfer_problem(5e8), pair_problem(limit=5e-6)
    return Problem(
        demands=[Demand(name="d", rate=10.0), Demand(name="e", rate=10.0)],
        routes=[t.routes[0], Route(name="rp", demand="e", steps=["q"])],
        transfers=t.transfers,
        columns=t.columns + p.columns,
        sites=t.sites + p.sites,
        edges=t.edges + p.edges,
    )


def chain_problem():
    """Sizes 1, 2, 4, 8, 16 in 8-unit domains; units are scarce so several sizes share a site."""
    cols = [column(f"c{u}", "gpu", {"q": 3.0 * u**0.8}, units=u) for u in (1, 2, 4, 8, 16)]
    return one_step(
        60.0, cols, [site("big", "gpu", D=8, m=3, usd=1.0), site("small", "gpu", D=8, m=2, usd=1.3)]
    )


def hard_problem(seed=1, n_sites=40, n_columns=100):
    """Random mid-size problem whose MILP neither backend proves optimal in 50 ms."""
    rng = np.random.default_rng(seed)
    resources, size = ["h100", "a100", "l40", "tpu"], {"h100": 8, "a100": 8, "l40": 4, "tpu": 4}
    sites = [
        Site(
            name=f"s{i}",
            node=f"n{i % 10}",
            resource=resources[i % 4],
            units_per_domain=size[resources[i % 4]],
            domains=int(rng.integers(1, 9)),
            usd_per_hour_per_unit=round(float(rng.uniform(0.5, 4)), 2),
            power_w_per_unit=300.0,
        )
        for i in range(n_sites)
    ]
    routes = [Route(name=f"r{i}", demand=f"d{i % 4}", steps=[f"q{i}"]) for i in range(8)]
    columns = []
    for c in range(n_columns):
        r = str(rng.choice(resources))
        units = int(rng.choice([1, 2, 4, 8] if size[r] == 8 else [1, 2, 4]))
        steps = rng.choice([f"q{i}" for i in range(8)], size=int(rng.integers(1, 4)), replace=False)
        columns.append(
            column(
                f"c{c}", r, {str(q): round(float(rng.uniform(0.5, 30)), 2) for q in steps}, units
            )
        )
    return Problem(
        demands=[Demand(name=f"d{k}", rate=round(float(rng.uniform(5, 200)), 1)) for k in range(4)],
        routes=routes,
        columns=columns,
        sites=sites,
    )
