"""ARCHITECTURE.md's "Where to add things", measured: a toy constraint family and a toy objective are added
from files of their own — no file of the repository edited — and reach the model, the bound, the
diagnosis and the verifier.

* The toy family, "at most N chips of a chip type", is two files: its :class:`solvers.family.Family`
  (rows, what becomes of it on the collapsed fleet, its rows over replica counts, its elastic rows) and
  its verifier check with the source that adds it to every solve. A family read from the instance adds
  a field to ``placement/core/instance/schema.py``: four files at most.
* The toy objective, "$/h plus energy at $0.12 per kWh", is two files: its solver measure and its
  placement record (what it measures of a plan and of the verifier's pools). Three at most: the
  instance's ``objective`` takes any registered name, so the schema is not edited.
* A module of ``placement.core`` is one file in its room (its folder): no table names modules, and the
  architecture checks refuse it in a room below what it imports.
"""

from __future__ import annotations

import copy
import importlib
import sys
import textwrap
from pathlib import Path

import pytest

import placement
from placement.core.instance.context import Context
from placement.core.instance.loading import parse_instance
from placement.core.pipeline.problem import build_problem
from placement.core.plans.plan import parse_plan
from placement.core.verify.verifier import verify
from solvers import lagrange, twolevel
from solvers import milp as placement_milp
from solvers.cost_floors import parts
from solvers.family import collapse_families, coupling_rows
from solvers.model import build_model, families_of
from solvers.problem import Column, Demand, Part, Problem, Route, Site
from tests.toy_fixture import TOY

BACKEND = "highs"

FAMILY = {
    "toy_chip_cap.py": '''
        """Toy family: Σ_{(c,p,s): s of chip type T} u_p·n_{c,p,s} ≤ N (chips; T "all": every type)."""
        from functools import partial

        import pulp

        from solvers.family import KEEP, Family, ReplicaRow, no_columns, no_objective, no_start
        from solvers.variables import add_row


        def _of(chip, site):
            return 1.0 if chip in ("all", site.resource.split("@")[0]) else 0.0


        def add_chip_cap(chip, cap, m, v):
            """Σ_{(c,p,s): s of chip type T} u_p·n_{c,p,s} ≤ N."""
            terms = [(var, v.index.units[k] * _of(chip, v.index.site[k[2]])) for k, var in v.n.items()]
            terms = [t for t in terms if t[1]]
            if terms:
                add_row(m, v, "chip_cap", (chip,), ["0"], terms, pulp.LpConstraintLE, float(cap))


        def _needed(v, chip, sol, slack):
            return float(sum(p.replicas * v.index.column[p.column].parts[p.part].units for p in sol.replicas
                             if _of(chip, v.index.site[p.site])))


        def _elastic(chip, em):
            for name, key, row in em.rows("chip_cap"):
                em.relax_limit("chip_cap", "chip_cap", name, key, row, "chips", partial(_needed, em.variables, chip),
                               words="chips of {0}")


        def chip_cap(chip, cap):
            rows = [ReplicaRow(name="chip_cap", rhs=float(cap), per_unit=partial(_of, chip))]
            return Family(name="chip_cap", check="check_chip_cap", rows=partial(add_chip_cap, chip, cap),
                          objective=no_objective, collapse=KEEP, coupling=lambda problem: rows,
                          elastic=partial(_elastic, chip), start=no_start, columns=no_columns)
    ''',
    "toy_chip_cap_check.py": '''
        """Toy family's verifier check and its source: every solve caps the A10G chips at CAP."""
        from placement.core.pipeline.solve import register_families
        from placement.core.verify.verifier import register_check
        from toy_chip_cap import chip_cap

        CHIP, CAP = "a10g", 2


        def check_chip_cap(ctx, plan, facts):
            chips = sum(f.chips for f in facts if f.layout.chip == CHIP)
            return [] if chips <= CAP else [f"chip_cap: {chips} {CHIP} chips, the cap is {CAP}"]


        def source(work, problem, cands):
            return (chip_cap(CHIP, CAP),)


        register_check("check_chip_cap", check_chip_cap)
        register_families(source)
    ''',
}

OBJECTIVE = {
    "toy_energy_measure.py": '''
        """Toy measure: $/h plus the energy the chips draw at $0.12 per kWh (W × 1.2e-4 $/h)."""
        from solvers.problem import Measure, register_objective

        USD_PER_WH = 0.12 / 1000


        def per_unit(site):
            return site.usd_per_hour_per_unit + site.power_w_per_unit * USD_PER_WH


        register_objective(Measure("cost+energy", per_unit, "$/h"))
    ''',
    "toy_energy_objective.py": '''
        """Toy objective: what an instance names, what it measures of a plan and of the verifier's pools."""
        from placement.core.instance.objectives import Objective, register
        from toy_energy_measure import USD_PER_WH

        register(Objective("cost-and-energy", "cost+energy", "$/h", "full plan saves ($/h with energy)",
                           lambda plan: plan.cost_usd_per_hour + plan.power_w * USD_PER_WH,
                           lambda ctx, facts: sum(f.usd_per_hour + f.power_w * USD_PER_WH for f in facts)))
    ''',
}


def _add(tmp_path: Path, monkeypatch, files: dict[str, str]) -> list:
    """Write the toy's files beside each other and import them in order (which registers them)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    modules = []
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
        modules.append(importlib.import_module(name.removesuffix(".py")))
    return modules


@pytest.fixture
def chip_cap(tmp_path, monkeypatch):
    from placement.core.pipeline import solve as pipeline
    from placement.core.verify.verifier import unregister_check

    plain = placement.solve(placement.load_instance("instances/melange-toy.yaml"), backend=BACKEND)
    family, check = _add(tmp_path, monkeypatch, FAMILY)
    yield family, check, plain
    pipeline.unregister_families(check.source)
    unregister_check("check_chip_cap")
    for name in FAMILY:
        sys.modules.pop(name.removesuffix(".py"), None)


def test_a_constraint_family_from_two_files_reaches_the_model_bound_diagnosis_and_verifier(chip_cap, monkeypatch):
    family, _, plain = chip_cap
    assert len(FAMILY) <= 4
    inst = placement.load_instance("instances/melange-toy.yaml")
    ctx = Context.of(inst)
    problem, _ = build_problem(ctx)
    toy = family.chip_cap("a10g", 2)
    # the model: its row, and the plan it forces
    m, _ = build_model(problem, families=families_of([toy]))
    assert "chip_cap__0" in {row.name for row in m.constraints()}
    assert plain.chips_by_type["a10g"] == 3 and plain.cost_usd_per_hour == pytest.approx(6.7)
    capped = placement.solve(inst, backend=BACKEND)
    assert capped.verified and capped.chips_by_type.get("a10g", 0) <= 2 and capped.cost_usd_per_hour > 6.7 + 1e-9
    # the bound: the collapsed fleet keeps it, and so does the Lagrangian's combination of part plans
    merged = twolevel.collapsed(problem)
    kept = collapse_families(families_of([toy]), merged)
    assert toy in kept
    # Two demands of 2 req/s, each cheapest on 2 GPU units ($1/h) rather than 2 LPU units ($2/h); at most 2 GPU:
    split = Problem(demands=[Demand(name=k, rate=2.0) for k in "ab"],
                    routes=[Route(name=f"r{k}", demand=k, steps=[f"q{k}"]) for k in "ab"],
                    columns=[Column(name=f"{k}{r}", parts=[Part(resource=r, units=1)], capacity={f"q{k}": 1.0})
                             for k in "ab" for r in ("gpu", "lpu")],
                    sites=[Site(name=r, node="v", resource=r, units_per_domain=8, domains=1, usd_per_hour_per_unit=usd,
                                power_w_per_unit=1.0) for r, usd in (("gpu", 1.0), ("lpu", 2.0))])
    capped_split = families_of([family.chip_cap("gpu", 2)])
    rows = coupling_rows(capped_split, split)
    assert "chip_cap" in {r.name for r in rows}
    names = [frozenset(c.name for c in part.columns) for part in parts(split, capped_split)]
    known = lagrange.first_plans(split, split, names, None, rows, backend=BACKEND, families=capped_split)
    others = [r for r in rows if r.name != "chip_cap"]
    assert lagrange.best_combination(known, others)[0] == pytest.approx(4.0)  # each demand on 2 GPU units
    assert lagrange.best_combination(known, rows) is None  # together 4 GPU: the cap refuses the combination
    assert placement_milp.solve(split, backend=BACKEND, families=capped_split).objective == pytest.approx(6.0)
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    two = placement.solve(inst, backend=BACKEND)
    assert "collapsed" in two.solver.message and two.verified
    assert capped.cost_usd_per_hour * (1 - 1e-6) <= two.solver.best_bound <= two.cost_usd_per_hour * (1 + 1e-9)
    # the verifier: the plan made without it breaks it
    assert any(v.startswith("chip_cap: 3 a10g chips") for v in verify(ctx, plain)), verify(ctx, plain)


def test_the_toy_family_is_diagnosed_and_a_half_registered_one_is_not_solved(chip_cap):
    from placement.core.pipeline import solve as pipeline
    from placement.core.verify.verifier import unregister_check

    family, check, _ = chip_cap
    pipeline.unregister_families(check.source)
    tight = (family.chip_cap("a100-80gb", 0),)  # with the A10G cap of 2: too few chips for the classes
    pipeline.register_families(lambda work, problem, cands: (*check.source(work, problem, cands), *tight))
    with pytest.raises(ValueError, match="given twice"):
        placement.solve(placement.load_instance("instances/melange-toy.yaml"), backend=BACKEND)
    pipeline.SOURCES.clear()
    inst = parse_instance(copy.deepcopy(TOY))
    pipeline.register_families(lambda work, problem, cands: (family.chip_cap("all", 1),))
    infeasible = placement.solve(inst, backend=BACKEND)
    assert infeasible.status == "infeasible"
    assert any(s.startswith("chips of all: the plan needs") and "the limit is 1 chips" in s
               for s in infeasible.diagnosis), infeasible.diagnosis
    unregister_check("check_chip_cap")
    with pytest.raises(ValueError, match="verifier check 'check_chip_cap' is not registered"):
        placement.solve(inst, backend=BACKEND)
    pipeline.SOURCES.clear()


@pytest.fixture
def energy(tmp_path, monkeypatch):
    from placement.core.instance.objectives import OBJECTIVES
    from solvers.problem import OBJECTIVES as MEASURES

    modules = _add(tmp_path, monkeypatch, OBJECTIVE)
    yield modules
    OBJECTIVES.pop("cost-and-energy", None)
    MEASURES.pop("cost+energy", None)
    for name in OBJECTIVE:
        sys.modules.pop(name.removesuffix(".py"), None)


def test_an_objective_from_two_files_reaches_the_model_bound_diagnosis_and_verifier(energy, monkeypatch):
    measure, _ = energy
    assert len(OBJECTIVE) <= 3
    inst = placement.load_instance("instances/melange-toy.yaml").model_copy(update={"objective": "cost-and-energy"})
    ctx = Context.of(inst)
    problem, _ = build_problem(ctx)
    assert problem.objective == "cost+energy"
    # the model: each replica's coefficient is its units at $/h plus energy
    m, v = build_model(problem)
    key = next(iter(v.n))
    site = v.index.site[key[2]]
    assert m.objective[v.n[key]] * v.objective_scale == pytest.approx(
        measure.per_unit(site) * v.index.units[key], rel=1e-6)
    plan = placement.solve(inst, backend=BACKEND)
    energy_usd = plan.cost_usd_per_hour + plan.power_w * measure.USD_PER_WH
    assert plan.verified and plan.objective == "cost-and-energy"
    assert plan.solver.objective == pytest.approx(energy_usd, rel=1e-9)
    # the bound: the collapsed fleet's optimum, in the same measure
    monkeypatch.setattr(twolevel, "MIN_SIZE", 0)
    two = placement.solve(inst, backend=BACKEND)
    assert "collapsed" in two.solver.message and two.solver.best_bound == pytest.approx(energy_usd, rel=1e-6)
    # the diagnosis: an infeasible instance under it is diagnosed as under any objective
    doc = copy.deepcopy(TOY)
    doc["objective"] = "cost-and-energy"
    for d in doc["hardware"]["domains"]:
        d["count"] = 1
    for c in doc["workload"]["classes"]:
        c["rate_rps"] *= 100
    short = placement.solve(parse_instance(doc), backend=BACKEND)
    assert short.status == "infeasible" and any("needs" in s and "chips" in s for s in short.diagnosis)
    # the verifier: what it measures of the plan is re-derived from the pools
    tampered = plan.model_copy(update={"power_w": plan.power_w * 2})
    assert any(s.startswith("objective cost-and-energy: the plan measures") for s in verify(ctx, tampered))
    doc = plan.model_dump(mode="json")
    doc["objective"] = "latency"
    with pytest.raises(placement.InputError, match="objective"):
        parse_plan(doc)



TOY_MODULE = {
    "toy_crossing_feeds.py": '''
        """Toy KV-room module: how many of a plan's prefill-to-decode feeds cross sites."""
        from placement.core.kv.kv_feeds import kv_feeds_of
        from placement.core.plans.plan import Plan


        def crossing_feeds(ctx, plan: Plan) -> int:
            return sum(f.prefill_site != f.decode_site for f in kv_feeds_of(ctx, plan))
    ''',
}


UPWARDS = "placement.core.plans.toy_crossing_feeds (plans) imports placement.core.kv.kv_feeds (kv)"


@pytest.mark.parametrize("room, refused", [("kv", []), ("operations", []), ("plans", [UPWARDS])])
def test_a_module_of_placement_core_is_one_file_in_its_room(room, refused, tmp_path, monkeypatch):
    """A module added to a room is one file and no table: the architecture checks read its room from its
    folder. Put in a room below what it imports, it is refused by the arrow it breaks, and it closes a
    cycle between rooms."""
    import ast

    from tests.test_architecture import arrows, module_graph, package_cycles, room_violations

    try:
        (toy,) = _add(tmp_path, monkeypatch, TOY_MODULE)
        ctx = Context.of(parse_instance(copy.deepcopy(TOY)))
        assert toy.crossing_feeds(ctx, placement.solve(ctx.instance, backend=BACKEND)) == 0  # one site
    finally:
        sys.modules.pop("toy_crossing_feeds", None)
    graph = module_graph()
    name = f"placement.core.{room}.toy_crossing_feeds"
    with_toy = {**graph, name: arrows(ast.parse(textwrap.dedent(TOY_MODULE["toy_crossing_feeds.py"])), graph)}
    assert with_toy[name] == {"placement.core.kv.kv_feeds", "placement.core.plans.plan"}
    assert room_violations(with_toy) == refused
    assert bool(package_cycles(with_toy)) == bool(refused)
