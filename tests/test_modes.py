"""Serving modes as one registry: routes, stages, labels, typed step ids, the shared enumerator."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance, parse_instance
from placement.core.instance.schema import MODES as SCHEMA_MODES
from placement.core.pipeline.diagnose import slo_floor
from placement.core.pipeline.problem import build_problem
from placement.core.plans.plan import STAGE_OF_KIND
from placement.core.replicas.candidates import generate
from placement.core.replicas.evaluate import PartLayout, Perf, PoolConfig
from placement.modes import (
    MODES,
    Grid,
    PoolKind,
    RouteId,
    ServingMode,
    StepId,
    enabled_modes,
    get_mode,
    labels,
    options,
    register,
)
from solvers import solve

# name, label, option, stages, kind -> (stage of main part, stage of partner part)
EXPECTED = [
    ("aggregated", "aggregated", "aggregated", ("serve",),
     {"aggregated": ("aggregated", None), "measured": ("aggregated", None)}),
    ("pd", "PD", "pd", ("prefill", "decode"), {"prefill": ("prefill", None), "decode": ("decode", None)}),
    ("pd+draft", "PD+draft", "pd", ("prefill", "decode"),
     {"prefill": ("prefill", None), "decode-spec": ("decode", "draft")}),
    ("pd-af", "PD+AF", "pd-af", ("prefill", "decode"),
     {"prefill": ("prefill", None), "decode-af": ("decode-attention", "decode-ffn")}),
]


def test_registry_holds_the_four_modes_in_route_order():
    assert list(MODES) == [e[0] for e in EXPECTED]
    assert options() == SCHEMA_MODES == ("aggregated", "pd", "pd-af")
    assert labels() == {e[0]: e[1] for e in EXPECTED}


@pytest.mark.parametrize(("name", "label", "option", "stages", "kinds"), EXPECTED)
def test_each_mode_routes_stages_kinds_and_labels(name, label, option, stages, kinds):
    mode = get_mode(name)
    assert (mode.label, mode.option, mode.stages) == (label, option, stages)
    assert str(mode.route("chat")) == f"chat|{name}"
    assert [str(s) for s in mode.steps("chat")] == [f"chat|{name}|{s}" for s in stages]
    assert {k.name: k.stages for k in mode.kinds} == kinds
    for kind, parts in kinds.items():
        assert STAGE_OF_KIND[kind] == parts


def test_unknown_mode_names_the_known_ones():
    with pytest.raises(KeyError, match="expected one of aggregated, pd, pd\\+draft, pd-af"):
        get_mode("disaggregated")


@pytest.mark.parametrize("text", ["chat|pd|prefill", "a.b-c_1|pd+draft|decode", "x|pd-af|decode"])
def test_step_ids_round_trip(text):
    step = StepId.parse(text)
    assert str(step) == text
    assert StepId(step.traffic_class, step.mode, step.stage) == step
    assert RouteId.parse(str(step.route)) == step.route
    assert step.route.step(step.stage) == step


@pytest.mark.parametrize("text", ["chat|pd", "chat|pd|decode|x", "chat||decode", ""])
def test_malformed_step_ids_are_refused(text):
    with pytest.raises(ValueError, match="step id"):
        StepId.parse(text)


def test_problem_routes_and_transfers_come_from_the_modes():
    ctx = Context.of(load_instance("instances/spec-decode-draft.yaml"))
    problem, _ = build_problem(ctx)
    enabled = [m.name for m in enabled_modes(ctx)]
    assert "pd+draft" in enabled
    for cls in ctx.instance.workload.classes:
        routes = [r for r in problem.routes if r.demand == cls.name]
        assert [r.name for r in routes] == [f"{cls.name}|{m}" for m in enabled]
        for r in routes:
            assert [StepId.parse(s).route for s in r.steps] == [RouteId.parse(r.name)] * len(r.steps)
    kv = {t.name: (t.source, t.target) for t in problem.transfers}
    assert kv[f"{cls.name}|pd+draft|kv"] == (f"{cls.name}|pd+draft|prefill", f"{cls.name}|pd+draft|decode")
    assert not any("|aggregated|" in name for name in kv)


def test_kinds_and_options_are_checked_against_the_registry():
    part = PartLayout(chip="h100", site_resource="h100@8", chips=1, tp=1, ep=1, pp=1)
    with pytest.raises(ValidationError, match="Input should be 'aggregated', 'measured', 'prefill'"):
        PoolConfig(kind="decode-magic", traffic_class="c", main=part, batch=1)


# ---- the SLO floor is the enumerator of generation --------------------------------------------


def _with_slo(inst, name: str, tpot_ms: float):
    """``inst`` with class ``name``'s TPOT SLO set and its TTFT lifted (as the floor search lifts it)."""
    classes = [c.model_copy(update={"tpot_ms": tpot_ms, "ttft_ms": 1e9}) if c.name == name else c
               for c in inst.workload.classes]
    return inst.model_copy(update={"workload": inst.workload.model_copy(update={"classes": classes})})


def _decoding_columns(inst, name: str) -> int:
    """Kept columns serving a decoding step of class ``name``."""
    cands = generate(Context.of(inst))
    return sum(1 for c in cands.columns for s in c.capacity
               if StepId.parse(s).traffic_class == name and StepId.parse(s).stage in ("decode", "serve"))


def test_slo_floor_is_the_best_tpot_generation_reaches():
    """spec-decode-draft: the copy of the enumerator diagnose used to keep tried only the longest draft
    and reported 1.41 ms; generation reaches a lower TPOT with a shorter draft."""
    inst = load_instance("instances/spec-decode-draft.yaml")
    cls = inst.workload.classes[0]
    floor = slo_floor(Context.of(inst), cls)
    assert floor.tpot_s is not None and floor.tpot_where
    at = _decoding_columns(_with_slo(inst, cls.name, floor.tpot_s * 1e3 * (1 + 1e-7)), cls.name)
    below = _decoding_columns(_with_slo(inst, cls.name, floor.tpot_s * 1e3 * (1 - 1e-6)), cls.name)
    assert at > 0 and below == 0


# ---- a mode registered from outside is generated, routed and solved -----------------------------


def _toy_evaluate(ctx, cfg, cls, b, lat, memo) -> Perf:
    z = np.zeros(b.shape)
    return Perf(capacity_rps=b * 1.0, ttft_s=z + 1e-3, tpot_s=z + 1e-3, fits=np.ones(b.shape, dtype=bool),
                pair_bytes_per_s=z, memory_per_chip_bytes=z)


TOY_KIND = PoolKind("toy", ("toy", None), _toy_evaluate)


def _toy_grids(ctx, cls, memo):
    for res, site in ctx.resources().items():
        part = PartLayout(chip=site.chip.name, site_resource=res, chips=1, tp=1, ep=1, pp=1)
        yield Grid(PoolConfig(kind="toy", traffic_class=cls.name, main=part, batch=1), "serve", np.array([1.0, 2.0]))


TOY = ServingMode(name="toy", label="Toy", option="toy", stages=("serve",), kinds=(TOY_KIND,), grids=_toy_grids)


@pytest.fixture
def toy_mode():
    register(TOY)
    yield TOY
    del MODES[TOY.name]


DOC = {"name": "toy", "model": "llama-3.1-8b", "modes": ["toy"],
       "workload": {"classes": [{"name": "chat", "rate_rps": 3, "prompt_tokens": 100, "output_tokens": 10,
                                 "ttft_ms": 1000, "tpot_ms": 50}]},
       "hardware": {"domains": [{"name": "g", "chip": "h100", "count": 1}]}}


def test_a_registered_mode_is_generated_routed_and_solved(toy_mode):
    ctx = Context.of(parse_instance(DOC))
    problem, cands = build_problem(ctx)
    assert [m.name for m in enabled_modes(ctx)] == ["toy"]
    assert [(r.name, r.steps) for r in problem.routes] == [("chat|toy", ["chat|toy|serve"])]
    # batch 1 is dominated by batch 2 on the same chip
    assert {c.name: c.capacity for c in problem.columns} == {"chat|toy|h100@8-g1-tp1-ep1-pp1|b2": {"chat|toy|serve": 2.0}}
    assert (cands.generated, cands.feasible) == (2, 2) and STAGE_OF_KIND["toy"] == ("toy", None)
    sol = solve(problem, backend="highs")
    assert sol.status == "optimal" and sol.route_rates == {"chat|toy": pytest.approx(3.0)}


def test_an_unregistered_mode_is_an_input_error():
    with pytest.raises(InputError, match="modes\\[0\\]: input should be 'aggregated', 'pd' or 'pd-af'; got 'toy'"):
        parse_instance(DOC)


def test_registering_twice_or_redefining_a_kind_is_refused(toy_mode):
    with pytest.raises(ValueError, match="already registered"):
        register(TOY)
    clash = ServingMode(name="toy2", label="Toy 2", option="toy", stages=("serve",),
                        kinds=(PoolKind("toy", ("toy", None), _toy_evaluate),), grids=_toy_grids)
    with pytest.raises(ValueError, match="redefines the replica kind 'toy'"):
        register(clash)
    with pytest.raises(ValueError, match="free of"):
        register(ServingMode(name="a|b", label="x", option="x", stages=("s",), kinds=(), grids=_toy_grids))


def test_a_kind_without_a_floor_is_refused_by_the_verifier(toy_mode):
    """Its record names no physical floor (PoolKind.floor): the plan is not accepted unchecked."""
    import placement

    plan = placement.solve(parse_instance(DOC), backend="highs")
    assert plan.status == "error" and not plan.verified
    assert any("names no physical floor" in v for v in plan.violations), plan.violations
