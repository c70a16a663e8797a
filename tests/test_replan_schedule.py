"""The multi-period schedule (rolling horizon) against its two references, on the toy (issue 17, item 2)."""

from __future__ import annotations

import io
import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.errors import InputError
from placement.core.schedule import read_profile, schedule
from tests.toy_fixture import TOY, toy_instance

RATES = {c["name"]: c["rate_rps"] for c in TOY["workload"]["classes"]}
SHAPE = (("night", 0.3, 8), ("morning", 1.0, 4), ("peak", 2.0, 4), ("evening", 0.8, 8))


def _profile() -> str:
    return "period,class,rate_rps,hours\n" + "".join(
        f"{p},{c},{r * f},{h}\n" for p, f, h in SHAPE for c, r in RATES.items())


def test_schedule_between_independent_and_static_peak():
    s = schedule(toy_instance(), read_profile(io.StringIO(_profile())), backend="highs", move_usd=1.0)
    assert [p.period for p in s.periods] == ["night", "morning", "peak", "evening"]
    assert all(p.status == "optimal" for p in s.periods)
    assert s.independent_usd <= s.total_usd <= s.static_peak_usd
    assert s.total_usd == pytest.approx(s.run_usd + s.migration_usd)
    assert s.run_usd == pytest.approx(sum(p.cost_usd_per_hour * p.hours for p in s.periods))
    # the peak needs 2.25 A100-equivalents and more chips than the night: the schedule grows, then shrinks
    chips = [p.chips for p in s.periods]
    assert chips[2] == max(chips) > chips[0]
    assert s.periods[2].replicas_added > 0 and s.periods[3].replicas_removed > 0
    assert s.gap_to_independent == pytest.approx(s.total_usd / s.independent_usd - 1)


def test_profile_errors_name_the_row():
    with pytest.raises(InputError, match="row 2"):
        read_profile(io.StringIO("period,class,rate_rps\nnight,chat,lots\n"))
    with pytest.raises(InputError, match="expected a header"):
        read_profile(io.StringIO("when,who,how\n1,2,3\n"))
    with pytest.raises(InputError, match="unknown class 'chat'"):
        schedule(toy_instance(), read_profile(io.StringIO("period,class,rate_rps\nnight,chat,1\n")), backend="highs")


def test_cli_schedule(tmp_path):
    prof = tmp_path / "profile.csv"
    prof.write_text("# a comment\n" + _profile())
    out = tmp_path / "schedule.json"
    toy = tmp_path / "toy.yaml"
    toy.write_text(json.dumps(TOY))
    r = CliRunner().invoke(app, ["schedule", str(toy), "--profile", str(prof), "--solver", "highs",
                                 "--json", str(out)])
    assert r.exit_code == 0, r.output
    assert "independent periods" in r.output and "static peak plan" in r.output
    doc = json.loads(out.read_text())
    assert len(doc["periods"]) == 4 and doc["periods"][1]["plan"]["migration"] is not None
