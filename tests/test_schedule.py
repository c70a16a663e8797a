"""The multi-period schedule: one MILP with a period index, against its two references, on the toy (issue 17)."""

from __future__ import annotations

import io
import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.operations.schedule import read_profile, schedule
from tests.toy_fixture import TOY, toy_instance

RATES = {c["name"]: c["rate_rps"] for c in TOY["workload"]["classes"]}
SHAPE = (("night", 0.3, 8), ("morning", 1.0, 4), ("peak", 2.0, 4), ("evening", 0.8, 8))


def _profile(extra: str = "", values=lambda period: "") -> str:
    return f"period,class,rate_rps,hours{extra}\n" + "".join(
        f"{p},{c},{r * f},{h}{values(p)}\n" for p, f, h in SHAPE for c, r in RATES.items())


def test_milp_schedule_between_independent_and_static_peak():
    s = schedule(toy_instance(), read_profile(io.StringIO(_profile())), backend="highs", move_usd=1.0,
                 reserved_discount=0.4)
    assert s.status == "optimal" and all(p.verified for p in s.periods)
    assert s.independent_le_schedule and s.schedule_le_static
    assert s.independent_usd < s.total_usd < s.static_peak_usd
    # By hand: 1 A100 ($3.67/h) reserved all 24 h at 40 % off = 52.848; on demand the morning's A10G ($1.01/h)
    # for 4 h and the peak's A100 + 2 A10G for 4 h = 4.04 + 22.76 = 26.8; six replicas changed at ~$1 each.
    assert s.reserved_chips == {"a100-pool": 1}
    assert (s.reserved_usd, s.on_demand_usd) == (pytest.approx(52.848), pytest.approx(26.8))
    assert [(p.reserved_chips, p.on_demand_chips) for p in s.periods] == [(1, 0), (1, 1), (1, 3), (1, 0)]
    assert s.migration_usd == pytest.approx(6.0, abs=0.02) and len(s.changes) == 5
    assert s.total_usd == pytest.approx(s.reserved_usd + s.on_demand_usd + s.migration_usd)
    # each period alone at the cheaper (reserved) price: 0.6 x (3.67·8 + 4.68·4 + 9.36·4 + 3.67·8); the peak
    # plan (2 A100 + 2 A10G) reserved all day: 0.6 x 9.36 x 24
    assert s.independent_usd == pytest.approx(68.928) and s.static_peak_usd == pytest.approx(134.784)
    assert s.gap == 0.0 and s.static_peak_verified


def test_lp_bound_references_give_the_same_schedule():
    prof = read_profile(io.StringIO(_profile()))
    exact = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4)
    fast = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4, references="bound")
    assert fast.references == "bound" and fast.independent_usd is None and fast.status == "optimal"
    assert fast.total_usd == pytest.approx(exact.total_usd) and fast.reserved_chips == exact.reserved_chips
    # each period's LP relaxation (fractional replicas at the reserved price) bounds its optimum from below:
    # the night alone is one reserved A100 (0.6 x 3.67 = 2.202 $/h), its LP a fraction of an A100 and an A10G
    bounds = [p.independent_bound_usd_per_hour for p in fast.periods]
    assert all(0 < b <= e.independent_usd_per_hour for b, e in zip(bounds, exact.periods))
    assert bounds[0] < 2.202 == pytest.approx(exact.periods[0].independent_usd_per_hour)
    assert fast.independent_bound_usd <= exact.independent_usd and fast.independent_le_schedule
    assert fast.schedule_le_static and all(p.verified for p in fast.periods)
    with pytest.raises(InputError, match="references exact or bound"):
        schedule(toy_instance(), prof, references="lp")


def test_forked_references_give_the_same_schedule(monkeypatch):
    """Two forked processes for the periods' references and start re-solves: the same schedule as one."""
    prof = read_profile(io.StringIO(_profile()))
    monkeypatch.setenv("PLACEMENT_WORKERS", "1")
    alone = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4)
    monkeypatch.setenv("PLACEMENT_WORKERS", "2")
    forked = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4)
    timings = {"solver_seconds", "build_seconds", "reference_seconds"}
    assert forked.model_dump(exclude=timings) == alone.model_dump(exclude=timings)


def test_period_prices_change_the_periods_cost():
    factor = {"night": 1.0, "morning": 1.0, "peak": 2.0, "evening": 1.0}
    s = schedule(toy_instance(), read_profile(io.StringIO(_profile(",price_factor", lambda p: f",{factor[p]}"))),
                 backend="highs")
    peak = s.periods[2]
    assert peak.period_usd_per_hour == pytest.approx(2 * peak.cost_usd_per_hour)
    # With no discount a reserved chip costs what it costs on demand at the instance's prices, so the A100
    # in use all day is reserved (3.67 x 24 = 88.08) rather than paid double at the peak; on demand: the
    # morning's A10G for 4 h (4.04) and the peak's A100 + 2 A10G at twice the price for 4 h (45.52).
    assert s.reserved_chips == {"a100-pool": 1}
    assert (s.reserved_usd, s.on_demand_usd) == (pytest.approx(88.08), pytest.approx(49.56))
    assert s.independent_usd == pytest.approx(114.88) and s.independent_le_schedule and s.schedule_le_static


def test_spot_price_moves_a_period_off_the_dear_chip():
    spot = read_profile(io.StringIO(_profile(",usd_per_hour:a10g", lambda p: ",100" if p == "morning" else ",")))
    s = schedule(toy_instance(), spot, backend="highs")
    # the morning is 1 A100 + 1 A10G at the instance's prices; with the A10G at $100/h it takes a second A100
    assert [p.chips_by_type for p in s.periods[:2]] == [{"a100-80gb": 1}, {"a100-80gb": 2}]
    assert s.periods[1].period_usd_per_hour == pytest.approx(7.34) and s.periods[1].verified


def test_rolling_horizon_kept():
    s = schedule(toy_instance(), read_profile(io.StringIO(_profile())), method="rolling", backend="highs",
                 move_usd=1.0)
    assert s.method.startswith("rolling") and all(p.status == "optimal" for p in s.periods)
    assert s.independent_le_schedule and s.schedule_le_static
    assert s.periods[2].replicas_added > 0 and s.periods[3].replicas_removed > 0


def test_profile_errors_name_the_row():
    with pytest.raises(InputError, match="row 2"):
        read_profile(io.StringIO("period,class,rate_rps\nnight,chat,lots\n"))
    with pytest.raises(InputError, match="expected a header"):
        read_profile(io.StringIO("when,who,how\n1,2,3\n"))
    with pytest.raises(InputError, match="price_factor of period 'n' is 2 on an earlier row, 3 here"):
        read_profile(io.StringIO("period,class,rate_rps,price_factor\nn,a,1,2\nn,b,1,3\n"))
    with pytest.raises(InputError, match="unknown class 'chat'"):
        schedule(toy_instance(), read_profile(io.StringIO("period,class,rate_rps\nnight,chat,1\n")))
    first = next(iter(RATES))
    with pytest.raises(InputError, match="chip 'tpu' is in no domain group"):
        schedule(toy_instance(), read_profile(io.StringIO(f"period,class,rate_rps,usd_per_hour:tpu\nn,{first},1,2\n")))
    with pytest.raises(InputError, match="reserved capacity"):
        schedule(toy_instance(), read_profile(io.StringIO(_profile())), method="rolling", reserved_discount=0.4)


def test_cli_schedule(tmp_path):
    prof = tmp_path / "profile.csv"
    prof.write_text("# a comment\n" + _profile())
    out = tmp_path / "schedule.json"
    toy = tmp_path / "toy.yaml"
    toy.write_text(json.dumps(TOY))
    r = CliRunner().invoke(app, ["schedule", str(toy), "--profile", str(prof), "--reserved-discount", "0.4",
                                 "--move-usd", "1", "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "independent periods $68.93 ≤ schedule: yes" in r.output and "static peak plan $134.78: yes" in r.output
    doc = json.loads(out.read_text())
    assert len(doc["periods"]) == 4 and doc["periods"][2]["plan"]["verified"] is True
    assert doc["reserved_chips"] == {"a100-pool": 1}
    r = CliRunner().invoke(app, ["schedule", str(toy), "--profile", str(prof), "--reserved-discount", "1"])
    assert r.exit_code == 2 and "--reserved-discount" in r.output


def test_an_infeasible_schedule_is_diagnosed_period_by_period():
    """A period no fleet of the instance can serve (its rates ×1000) leaves the schedule without a plan; the
    diagnosis names that period and what is short, as a solve's would."""
    text = "period,class,rate_rps,hours\n" + "".join(
        f"{p},{c},{r * f},{h}\n" for p, f, h in (("quiet", 1.0, 12), ("flood", 1000.0, 12)) for c, r in RATES.items())
    s = schedule(toy_instance(), read_profile(io.StringIO(text)), backend="highs")
    assert s.status == "infeasible" and not s.periods
    assert s.diagnosis and all(d.startswith("period flood: ") for d in s.diagnosis), s.diagnosis
    assert any("domain group" in d and "needs" in d for d in s.diagnosis), s.diagnosis


def test_certify_asks_the_other_backend_and_says_so(tmp_path):
    """``--certify``: the schedule MILP solved again by CBC agrees with HiGHS on the toy's schedule."""
    prof = read_profile(io.StringIO(_profile()))
    s = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4, certify=True)
    assert s.certified is True and s.notes and s.notes[0].startswith("certified: cbc agrees (optimal")
    plain = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4)
    assert plain.certified is None and not plain.notes and s.total_usd == pytest.approx(plain.total_usd)
    path = tmp_path / "profile.csv"
    path.write_text(_profile())
    inst = tmp_path / "toy.json"
    inst.write_text(json.dumps(TOY))
    r = CliRunner().invoke(app, ["schedule", str(inst), "--profile", str(path), "--certify"])
    assert r.exit_code == 0, r.output
    assert "note: certified: cbc agrees" in r.output


def test_a_refuted_schedule_is_not_certified_and_the_cheaper_one_is_kept(monkeypatch):
    """A second backend whose verified schedule lies below the first's proven bound refutes it: the
    schedule is not certified, the note says why, and the cheaper verified schedule is returned."""
    from placement.core.operations import schedule as mod

    real = mod._periods

    def doctored(strategy, **options):
        out = real(strategy, **options)
        if options.get("backend") == "cbc" and out.ok:  # the same plans, claimed at half the price
            out.objective /= 2
        return out

    monkeypatch.setattr(mod, "_periods", doctored)
    prof = read_profile(io.StringIO(_profile()))
    s = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4, certify=True)
    assert s.certified is False
    assert "NOT certified: the cbc backend found a verified plan at" in s.notes[0]
    assert "the schedule of cbc is returned" in s.notes[0]
    honest = schedule(toy_instance(), prof, backend="highs", move_usd=1.0, reserved_discount=0.4)
    assert s.total_usd == pytest.approx(honest.total_usd / 2)
