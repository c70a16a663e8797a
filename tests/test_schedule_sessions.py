"""The period-indexed schedule takes session classes (issue 31): expanded per period, KV tiers in every
period's model and plan, each plan verified as a single solve's is.

The instance is the tiny session instance of tests/test_kv_tiers.py (Llama-3.1-8B agents on two H100
nodes with host and flash tiers); its one class runs at a quarter, all and half of its rate.
"""

from __future__ import annotations

import io
import json

import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.operations.profile import with_rates
from placement.core.operations.schedule import read_profile, schedule
from placement.core.pipeline.solve import solve
from solvers.periods import solve_periods
from solvers.problem import Column, Demand, Part, Policy, Problem, Route, Site
from tests.test_kv_tiers import TINY

RATE = TINY["workload"]["classes"][0]["rate_rps"]
DAY = (("night", 0.25, 12), ("day", 1.0, 8), ("evening", 0.5, 4))


def _profile(shape=DAY) -> str:
    return "period,class,rate_rps,hours\n" + "".join(f"{p},agent,{RATE * f},{h}\n" for p, f, h in shape)


def _schedule(shape=DAY, **options):
    return schedule(parse_instance(TINY), read_profile(io.StringIO(_profile(shape))), backend="highs", **options)


def test_session_classes_are_scheduled_by_the_milp_with_kv_tiers_in_every_period():
    s = _schedule(reserved_discount=0.3, move_usd=0.5, keep_plans=True)
    assert s.status == "optimal" and [p.verified for p in s.periods] == [True, True, True]
    assert s.independent_le_schedule and s.schedule_le_static
    assert s.independent_usd <= s.total_usd <= s.static_peak_usd
    # every period's plan is a session plan: its retention per class and its tiers' use, checked by the verifier
    for p in s.periods:
        assert p.plan.kv_policy == "tiered" and {t.tier for t in p.plan.kv_tiers} == {"host", "flash"}
        assert any(c.kv_retention for c in p.plan.classes)
    # the busy day keeps KV in a tier; what it holds is paid for, per period, at that period's rates
    day = s.periods[1]
    assert sum(t.used_gb for t in day.plan.kv_tiers) > 0 and day.kv_usd_per_hour > 0
    assert s.kv_usd == pytest.approx(sum(p.hours * p.kv_usd_per_hour for p in s.periods), rel=1e-6)
    assert s.total_usd == pytest.approx(s.reserved_usd + s.on_demand_usd + s.migration_usd + s.kv_usd, rel=1e-9)


def test_the_milp_no_longer_refuses_session_classes_and_takes_the_kv_policy():
    tiered = _schedule()
    none = _schedule(kv_policy="none")  # every prefix recomputed: a subset of the tiered choices
    assert tiered.status == none.status == "optimal" and all(p.verified for p in none.periods)
    assert none.kv_usd == 0 and all(p.plan is None for p in none.periods)
    assert tiered.total_usd <= none.total_usd * (1 + 1e-9)
    assert tiered.kv_usd > 0
    with pytest.raises(InputError, match="--kv-policy"):
        _schedule(kv_policy="everywhere")


def test_sessions_do_not_straddle_periods():
    """Each period's KV is the steady state of its own rates: a period split in two identical halves costs
    the same, KV included (nothing carried over a boundary), and one period is the single solve of its rates."""
    whole = _schedule((("day", 1.0, 12),))
    halves = _schedule((("am", 1.0, 6), ("pm", 1.0, 6)))
    assert whole.total_usd == pytest.approx(halves.total_usd, rel=1e-9) and not halves.changes
    assert whole.kv_usd == pytest.approx(halves.kv_usd, rel=1e-9) and whole.kv_usd > 0
    alone = solve(with_rates(parse_instance(TINY), {"agent": RATE}), backend="highs")
    assert alone.verified and whole.periods[0].verified
    assert whole.total_usd == pytest.approx(12 * alone.cost_usd_per_hour, rel=1e-6)


def test_periods_pay_each_policy_for_their_own_hours():
    """Solver level: a policy's $/h (Policy.cost) is paid per period, weighted by its hours."""
    def problem(rate: float, cost: float) -> Problem:
        return Problem(
            demands=[Demand(name="miss", rate=rate), Demand(name="hit", rate=rate)],
            routes=[Route(name="rm", demand="miss", steps=["qm"]), Route(name="rh", demand="hit", steps=["qh"])],
            columns=[Column(name="gpu", parts=[Part(resource="gpu", units=1)], capacity={"qm": 1.0, "qh": 4.0})],
            sites=[Site(name="g", node="g", resource="gpu", units_per_domain=1, domains=100,
                        usd_per_hour_per_unit=1.0, power_w_per_unit=1.0)],
            policies=[Policy(name="keep", group="s", demands={"hit": 1.0}, cost=cost),
                      Policy(name="drop", group="s", demands={"miss": 1.0})])

    # 4 calls/s: keeping them all needs 1 GPU and costs 0.5 $/h, dropping them 4 GPUs; at 1 call/s keeping
    # costs 3 $/h (a dear tier) and dropping 1 GPU, so the second period drops: 10 h x (1 + 0.5) + 5 h x 1
    out = solve_periods([problem(4.0, 0.5), problem(1.0, 3.0)], [10.0, 5.0],
                        reserved_usd_per_hour_per_unit={"g": 1.0}, backend="highs")
    assert out.status == "optimal" and out.policy_usd == pytest.approx(5.0)
    assert [s.policy_shares for s in out.solutions] == [{"keep": 1.0}, {"drop": 1.0}]
    assert out.objective == pytest.approx(20.0)


def test_cli_schedule_takes_kv_policy(tmp_path):
    inst, prof, out = tmp_path / "tiny.yaml", tmp_path / "day.csv", tmp_path / "s.json"
    inst.write_text(yaml.safe_dump(TINY))
    prof.write_text(_profile())
    r = CliRunner().invoke(app, ["schedule", str(inst), "--profile", str(prof), "--kv-policy", "hbm-only",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    s = json.loads(out.read_text())
    assert all(p["verified"] and p["plan"]["kv_policy"] == "hbm-only" for p in s["periods"])
    assert all(t["tier"] == "hbm" for p in s["periods"] for t in p["plan"].get("kv_tiers", []))
    r = CliRunner().invoke(app, ["schedule", str(inst), "--profile", str(prof), "--kv-policy", "attic"])
    assert r.exit_code != 0 and "Traceback" not in r.output


def test_rolling_schedule_still_takes_session_classes():
    s = _schedule(DAY[:2], method="rolling", kv_policy="hbm-only", keep_plans=True)
    assert s.total_usd is not None and all(p.verified for p in s.periods)
    assert all(p.plan.kv_policy == "hbm-only" for p in s.periods)


def test_session_schedules_get_the_second_opinion_and_the_diagnosis():
    s = _schedule(references="bound", certify=True)
    assert s.status == "optimal" and s.certified is True and s.independent_le_schedule
    # a period no fleet serves is diagnosed on its expanded model: the outcome classes say what is short
    s = _schedule((("storm", 1000.0, 1),))
    assert s.status == "infeasible" and s.diagnosis and all(d.startswith("period storm: ") for d in s.diagnosis)
    assert any("agent.kv-" in d for d in s.diagnosis)
