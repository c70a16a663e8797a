"""MILP optimum == brute-force optimum on random tiny problems, for both backends."""

from __future__ import annotations

import math

import numpy as np
import pytest

from solvers import Column, Demand, Edge, Part, Problem, Route, Site, Transfer, bruteforce, solve
from solvers.bruteforce import replicas_feasible
from solvers.index import Index

# Seeds chosen (by inspection, after cycle cancelling) to cover binding transfer edges, pair
# latency/bandwidth, power caps, budgets, single-resource demands, all three
# objectives and infeasibility; the generator is deterministic per seed.
FLOW_SEEDS = [88, 159, 182, 834]  # lifting every edge's capacity lowers the optimum
EDGE_SEEDS = [154, 594, 786, 1101]  # transfers over edges whose capacity does not bind
PAIR_SEEDS = [1, 8, 12, 22, 53, 60, 62, 70, 76, 78, 82, 98, 100, 120]
PAIR_FLOW_SEEDS = [167, 216, 331, 533]
CAP_SEEDS = [5, 15, 45, 47, 52]
SINGLE_RESOURCE_SEEDS = [2, 10, 17, 29, 110, 356, 375, 441, 480, 553]
SINGLE_BINDING_SEEDS = [110, 356, 375, 441, 480, 553]  # the choice changes the optimum
INFEASIBLE_SEEDS = [0, 3, 4, 6]
PLAIN_SEEDS = [13, 25, 26, 42, 57]
SEEDS = (
    FLOW_SEEDS
    + EDGE_SEEDS
    + PAIR_SEEDS
    + PAIR_FLOW_SEEDS
    + CAP_SEEDS
    + SINGLE_RESOURCE_SEEDS
    + INFEASIBLE_SEEDS
    + PLAIN_SEEDS
)


def random_problem(seed: int, max_vectors: int = 600) -> Problem:
    """A tiny random problem whose replica vectors number at most ``max_vectors``."""
    rng = np.random.default_rng(seed)
    while True:
        problem = _draw(rng)
        vectors = 1
        for c in problem.columns:
            for part in c.parts:
                for s in problem.sites:
                    if s.resource == part.resource:
                        vectors *= s.units_per_domain * s.domains // part.units + 1
        if vectors <= max_vectors:
            # a separate stream, so the flags leave the rest of the problem unchanged
            flags = np.random.default_rng(seed + 10_000).random(len(problem.demands)) < 0.3
            demands = [
                d.model_copy(update={"single_resource": bool(f)})
                for d, f in zip(problem.demands, flags)
            ]
            return problem.model_copy(update={"demands": demands})


def _draw(rng: np.random.Generator) -> Problem:
    resources, nodes = ["a", "b"], ["n0", "n1", "n2"]
    sites = []
    for i in range(int(rng.integers(2, 4))):
        sites.append(
            Site(
                name=f"s{i}",
                node=nodes[i] if rng.random() < 0.8 else str(rng.choice(nodes)),
                resource=resources[i % 2] if i < 2 else str(rng.choice(resources)),
                units_per_domain=int(rng.choice([1, 2])),
                domains=int(rng.integers(1, 4)),
                usd_per_hour_per_unit=round(float(rng.uniform(0.5, 3)), 2),
                power_w_per_unit=round(float(rng.uniform(100, 700))),
            )
        )
    demands, routes, transfers, steps = [], [], [], []
    for k in range(int(rng.integers(1, 3))):
        demands.append(Demand(name=f"d{k}", rate=round(float(rng.uniform(1, 6)), 2)))
        for r in range(int(rng.integers(1, 3))):
            rs = [f"q{k}{r}{j}" for j in range(int(rng.integers(1, 3)))]
            steps += rs
            routes.append(Route(name=f"r{k}{r}", demand=f"d{k}", steps=rs))
            if len(rs) == 2:
                transfers.append(
                    Transfer(
                        name=f"t{k}{r}",
                        route=f"r{k}{r}",
                        source=rs[0],
                        target=rs[1],
                        bytes_per_request=round(float(rng.uniform(1e8, 2e9)), -6),
                    )
                )
    columns = []
    for c in range(int(rng.integers(2, 4))):
        two = rng.random() < 0.45
        parts = [
            Part(resource=str(rng.choice(resources)), units=int(rng.choice([1, 2])))
            for _ in range(2 if two else 1)
        ]
        chosen = [q for q in steps if rng.random() < 0.7] or [str(rng.choice(steps))]
        limit = (
            float(rng.choice([math.inf, round(float(rng.uniform(1e-6, 2e-5)), 9)]))
            if two
            else math.inf
        )
        columns.append(
            Column(
                name=f"c{c}",
                parts=parts,
                capacity={q: round(float(rng.uniform(2, 10)), 2) for q in chosen},
                pair_bytes_per_s=round(float(rng.uniform(0, 3e9)), -6) if two else 0.0,
                pair_max_latency_s=limit,
            )
        )
    edges = []
    for i, u in enumerate(nodes):
        for v in nodes[i + 1 :]:
            if rng.random() < 0.8:
                # half of the links are asymmetric, so the two directions of pair traffic differ
                symmetric = rng.random() < 0.5
                cap, lat = (
                    round(float(rng.uniform(1e8, 5e9)), -6),
                    round(float(rng.uniform(1e-6, 1e-5)), 9),
                )
                back_cap = cap if symmetric else round(float(rng.uniform(1e8, 5e9)), -6)
                back_lat = lat if symmetric else round(float(rng.uniform(1e-6, 1e-5)), 9)
                edges += [
                    Edge(source=u, target=v, capacity_bytes_per_s=cap, latency_s=lat),
                    Edge(source=v, target=u, capacity_bytes_per_s=back_cap, latency_s=back_lat),
                ]
    objective = str(rng.choice(["cost", "cost", "power", "units"]))
    power_cap = round(float(rng.uniform(300, 3000))) if rng.random() < 0.25 else None
    budget = round(float(rng.uniform(1, 10)), 2) if rng.random() < 0.25 else None
    return Problem(
        name="random",
        demands=demands,
        routes=routes,
        transfers=transfers,
        columns=columns,
        sites=sites,
        edges=edges,
        objective=objective,
        power_cap_w=power_cap,
        budget_usd_per_hour=budget,
    )


@pytest.fixture(scope="module")
def references():
    return {seed: bruteforce(random_problem(seed)) for seed in SEEDS}


@pytest.mark.parametrize("split", ["auto", "hubs"])
@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_milp_matches_bruteforce(references, backend, split):
    """Every seed, with pairs as the Index chooses them and with half-pairs at hubs forced on every
    tree fleet (see solvers.index)."""
    mismatches = [m for seed in SEEDS
                  if (m := _mismatch(seed, random_problem(seed), references[seed], backend, split))]
    assert not mismatches


def _mismatch(seed: int, problem: Problem, ref, backend: str, split: str = "auto"):
    """None when the MILP agrees with the brute-force reference ``ref``, else what differs."""
    sol = solve(problem, backend=backend, pair_split=split)
    same = sol.status == ref.status and (
        ref.objective is None
        or math.isclose(sol.objective, ref.objective, rel_tol=1e-6, abs_tol=1e-9)
    )
    if not same:
        return (seed, sol.status, sol.objective, ref.status, ref.objective)
    if sol.status == "optimal":
        counts = {(p.column, p.part, p.site): p.replicas for p in sol.replicas}
        if not replicas_feasible(problem, counts):
            return (seed, "MILP replicas fail the brute-force LP", counts)
    return None


def _edge_capacity_binds(problem: Problem) -> bool:
    """Whether lifting every edge's capacity (×1e6) lowers the optimum: a property of the problem,
    whichever optimal vertex a solver returns."""
    lifted = problem.model_copy(update={"edges": [
        e.model_copy(update={"capacity_bytes_per_s": e.capacity_bytes_per_s * 1e6}) for e in problem.edges
    ]})
    base, free = solve(problem, backend="cbc"), solve(lifted, backend="cbc")
    return base.status == free.status == "optimal" and free.objective < base.objective * (1 - 1e-6)


def test_seed_list_covers_the_features(references):
    statuses = {references[s].status for s in SEEDS}
    assert statuses == {"optimal", "infeasible"}
    assert sum(references[s].status == "optimal" for s in SEEDS) >= 40
    milp = {
        s: solve(random_problem(s), backend="highs")
        for s in PAIR_SEEDS + PAIR_FLOW_SEEDS
    }
    assert all(_edge_capacity_binds(random_problem(s)) for s in FLOW_SEEDS)
    assert all(milp[s].pairs for s in PAIR_SEEDS) and all(
        milp[s].pairs and milp[s].flows for s in PAIR_FLOW_SEEDS
    )
    assert {random_problem(s).objective for s in SEEDS} == {"cost", "power", "units"}
    singles = [s for s in SEEDS if any(d.single_resource for d in random_problem(s).demands)]
    assert len(singles) >= 10 and set(SINGLE_RESOURCE_SEEDS) <= set(singles)
    for seed in SINGLE_BINDING_SEEDS:
        problem = random_problem(seed)
        free = problem.model_copy(
            update={
                "demands": [
                    d.model_copy(update={"single_resource": False}) for d in problem.demands
                ]
            }
        )
        unconstrained, ref = bruteforce(free), references[seed]
        assert (unconstrained.status, unconstrained.objective) != (ref.status, ref.objective)
    assert any(random_problem(s).power_cap_w for s in CAP_SEEDS) and any(
        random_problem(s).budget_usd_per_hour for s in CAP_SEEDS
    )


def test_bruteforce_hand_made():
    # One demand of 10 req/s; X serves 4 for $1, Y serves 10 for $2.6: one Y ($2.60) beats three X ($3).
    problem = Problem(
        demands=[Demand(name="d", rate=10.0)],
        routes=[Route(name="r", demand="d", steps=["q"])],
        columns=[
            Column(name="X", parts=[Part(resource="x", units=1)], capacity={"q": 4.0}),
            Column(name="Y", parts=[Part(resource="y", units=1)], capacity={"q": 10.0}),
        ],
        sites=[
            Site(
                name="sx",
                node="n",
                resource="x",
                units_per_domain=1,
                domains=4,
                usd_per_hour_per_unit=1.0,
                power_w_per_unit=1.0,
            ),
            Site(
                name="sy",
                node="n",
                resource="y",
                units_per_domain=1,
                domains=2,
                usd_per_hour_per_unit=2.6,
                power_w_per_unit=1.0,
            ),
        ],
    )
    ref = bruteforce(problem)
    assert ref.status == "optimal" and ref.objective == pytest.approx(2.6)
    assert [(p.column, p.replicas) for p in ref.replicas] == [("Y", 1)]
    assert bruteforce(problem, backend="cbc").objective == pytest.approx(2.6)
    assert replicas_feasible(problem, {("X", 0, "sx"): 3}) and not replicas_feasible(
        problem, {("X", 0, "sx"): 2}
    )


def test_bruteforce_refuses_large_problems():
    with pytest.raises(ValueError, match="max_vectors"):
        bruteforce(random_problem(3), max_vectors=1)


def tree_problem(seed: int) -> Problem:
    """``random_problem(seed)`` on a tree fleet instead: n0, n1 under switch w0, n2 under w1, w0–w1;
    every link symmetric in latency (capacities may differ per direction), so pairs split at hubs."""
    problem = random_problem(seed)
    rng = np.random.default_rng(seed + 20_000)
    edges = []
    for u, v in [("n0", "w0"), ("n1", "w0"), ("n2", "w1"), ("w0", "w1")]:
        lat = round(float(rng.uniform(1e-6, 1e-5)), 9)
        for a, b in [(u, v), (v, u)]:
            cap = round(float(rng.uniform(1e7, 2e9)), -6)
            edges.append(Edge(source=a, target=b, capacity_bytes_per_s=cap, latency_s=lat))
    return problem.model_copy(update={"edges": edges})


TREE_SEEDS = PAIR_SEEDS + PAIR_FLOW_SEEDS


@pytest.mark.parametrize("backend", ["cbc", "highs"])
def test_milp_with_hubs_matches_bruteforce_on_trees(backend):
    mismatches, with_hubs, optimal = [], 0, 0
    for seed in TREE_SEEDS:
        problem = tree_problem(seed)
        ref = bruteforce(problem)
        with_hubs += bool(Index.from_problem(problem, "hubs").hub_keys)
        optimal += ref.status == "optimal"
        if m := _mismatch(seed, problem, ref, backend, "hubs"):
            mismatches.append(m)
    assert not mismatches
    assert with_hubs >= 12 and optimal >= 8, (with_hubs, optimal)
