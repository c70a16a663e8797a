"""`placement sweep`: range grammar, path setting, validation before any solve, outputs."""

from __future__ import annotations

import copy
import json
import re

import pytest
from typer.testing import CliRunner

import placement.studies.executor
from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance, parse_instance
from placement.studies.sweep import run_sweep, to_csv
from placement.studies.whatif import (
    build_points,
    instance_document,
    parse_assignment,
    parse_values,
    set_path,
)

BERTHA = "instances/bertha-lpddr.yaml"
runner = CliRunner()

from tests.toy_fixture import TOY, toy_instance


@pytest.fixture
def toy_path(tmp_path):
    path = tmp_path / "toy.json"
    path.write_text(json.dumps(TOY))
    return str(path)


# ---- the range grammar -----------------------------------------------------------------------

@pytest.mark.parametrize("spec, values, log", [
    ("10:100:4", [10, 40, 70, 100], False),
    ("0.5:3:6", [0.5, 1, 1.5, 2, 2.5, 3], False),
    ("100:10:4", [100, 70, 40, 10], False),
    ("1:1000:4:log", [1, 10, 100, 1000], True),
    ("10:1000:log10", [10, 100, 1000], True),
    ("1:10:log2", [1, 2, 4, 8], True),
    ("10:1000:log100", [10, 1000], True),
    ("7:7:1", [7], False),
    ("5", [5], False),
    ("0.1", [0.1], False),
    ("h100,b200", ["h100", "b200"], False),
    ("1,2.5,none,true", [1, 2.5, None, True], False),
])
def test_range_grammar(spec, values, log):
    assert parse_values(spec) == (values, log)


def test_whole_values_are_ints_and_floats_are_tidy():
    values, _ = parse_values("0.1:0.3:3")
    assert values == [0.1, 0.2, 0.3]  # not 0.30000000000000004
    assert all(type(v) is int for v in parse_values("1:16:6")[0])


@pytest.mark.parametrize("spec, message", [
    ("", "empty value"),
    ("5:1:0", "empty range"),
    ("3:3:4", "empty range"),
    ("1:2:1", "ambiguous"),
    ("100:10:log10", "empty range"),
    ("0:10:log10", "empty range"),
    ("-1:10:3:log", "log range needs LO > 0"),
    ("1:10:log1", "ratio R > 1"),
    ("a:10:3", "expected a number for LO"),
    ("1:10:2.5", "whole number of points"),
    ("1:10:3:lin", "'log' as the fourth part"),
    ("1:2", "expected LO:HI:N"),
    ("1,,2", "bad value list"),
    ("1:5:99999999", "at most"),
])
def test_bad_ranges_fail_clearly(spec, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_values(spec)


def test_assignment_needs_path_and_values():
    assert parse_assignment("limits.power_kw=100:200:3") == ("limits.power_kw", [100, 150, 200], False)
    with pytest.raises(InputError, match="PATH=VALUES"):
        parse_assignment("limits.power_kw")
    with pytest.raises(InputError, match="empty path"):
        parse_assignment("=1:2:2")


# ---- paths ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bertha_doc():
    return instance_document(load_instance(BERTHA))


def test_class_and_domain_by_name(bertha_doc):
    d = copy.deepcopy(bertha_doc)
    set_path(d, "workload.classes.offline-reports.tpot_ms", 77)
    set_path(d, "hardware.domains.h100-hgx.count", 3)
    inst = parse_instance(d)
    assert inst.workload.classes[1].tpot_ms == 77 and inst.workload.classes[0].tpot_ms == 25
    assert inst.hardware.domains[0].count == 3


def test_chip_field_copies_the_catalogue_record(bertha_doc):
    from topology.chips import load_chip_catalog

    d = copy.deepcopy(bertha_doc)
    set_path(d, "hardware.chips.bertha.usd_per_hour", 0.05)
    inst = parse_instance(d)
    (chip,) = inst.hardware.chips
    cat = load_chip_catalog()["bertha"]
    assert chip.usd_per_hour == 0.05
    assert chip.model_copy(update={"usd_per_hour": cat.usd_per_hour}) == cat
    # a second field of the same chip changes the copy, not a second copy
    set_path(d, "hardware.chips.bertha.power_w", 100)
    assert len(parse_instance(d).hardware.chips) == 1


def test_plain_optional_and_indexed_fields(bertha_doc):
    d = copy.deepcopy(bertha_doc)
    set_path(d, "limits.power_kw", 50)
    set_path(d, "objective", "power")
    inst = parse_instance(d)
    assert inst.limits.power_kw == 50 and inst.objective == "power"
    spec = instance_document(load_instance("instances/spec-decode-draft.yaml"))
    set_path(spec, "draft.acceptance.0", 0.9)
    assert parse_instance(spec).draft.acceptance[0] == 0.9


def test_links_by_switch_pair_and_position():
    doc = {"hardware": {"switches": ["a", "b"], "links": [{"source": "a", "target": "b", "bandwidth_gb_per_s": 10}],
                        "domains": []}}
    set_path(doc, "hardware.links.b/a.bandwidth_gb_per_s", 20)
    assert doc["hardware"]["links"][0]["bandwidth_gb_per_s"] == 20
    set_path(doc, "hardware.links.0.latency_us", 3)
    assert doc["hardware"]["links"][0]["latency_us"] == 3


def test_catalogue_model_is_expanded(bertha_doc):
    d = copy.deepcopy(bertha_doc)
    set_path(d, "model.layers", 40)
    inst = parse_instance(d)
    assert inst.model.layers == 40 and inst.model.name == "llama-3.1-70b"


@pytest.mark.parametrize("path, message", [
    ("workload.classes.chat.tpot_ms", "no entry 'chat'; expected one of interactive, offline-reports"),
    ("workload.classes.interactive.tpot", "unknown field 'tpot'"),
    ("hardware.domains.h100.count", "expected one of h100-hgx, bertha-server"),
    ("hardware.chips.nochip.usd_per_hour", "unknown chip 'nochip'"),
    ("hardware.chips.bertha.price", "unknown field 'price' in hardware.chips.bertha"),
    ("limits.watts", "unknown field 'watts' in limits"),
    ("draft.acceptance.0", "draft is not set in this instance"),
    ("nonsense", "unknown field 'nonsense' in the instance"),
    ("workload..classes", "empty segment"),
    ("objective.x", "single value"),
])
def test_unknown_paths_fail_naming_what_exists(bertha_doc, path, message):
    with pytest.raises(InputError, match=re.escape(message)):
        set_path(copy.deepcopy(bertha_doc), path, 1)


# ---- validation before any solve -----------------------------------------------------------

@pytest.fixture
def no_solve(monkeypatch):
    calls = []

    def boom(*a, **k):
        calls.append(1)
        raise AssertionError("a solve started before every point was validated")

    monkeypatch.setattr(placement.studies.executor, "run_map", boom)
    return calls


@pytest.mark.parametrize("assignment, message", [
    ("workload.classes.interactive.rate_rps=fast", "valid number"),           # wrong type
    ("workload.classes.interactive.rate_rps=10:-10:3", "rate_rps=0"),        # a later point invalid
    ("hardware.domains.h100-hgx.count=1:16:5", "count=4.75"),                 # not a whole number
    ("hardware.domains.h100-hgx.chips_per_domain=8,16", "exceeds the largest"),  # cross-check
    ("hardware.domains.h100-hgx.chip=h100,nochip", "unknown chip 'nochip'"),
    ("workload.classes.nope.rate_rps=1:2:2", "no entry 'nope'"),              # unknown path
    ("workload.classes.interactive.rate_rps=5:1:0", "empty range"),          # empty range
])
def test_bad_specs_fail_before_any_solve(no_solve, assignment, message):
    with pytest.raises(InputError, match=re.escape(message)):
        run_sweep(load_instance(BERTHA), [assignment], workers=1)
    assert not no_solve


def test_a_later_bad_axis_also_fails_before_any_solve(no_solve):
    with pytest.raises(InputError, match="unknown field"):
        run_sweep(load_instance(BERTHA), ["workload.classes.interactive.rate_rps=1:10:5", "limits.kw=5"], workers=1)
    assert not no_solve


def test_grid_points_are_the_product_first_axis_slowest():
    from placement.studies.whatif import Axis

    base = instance_document(load_instance(BERTHA))
    pts = build_points(base, [Axis("a", ("workload.classes.interactive.rate_rps",), (1, 2)),
                              Axis("b", ("hardware.domains.h100-hgx.count",), (1, 2, 3))], "x")
    assert [tuple(v.values()) for v, _ in pts] == [(1, 1), (1, 2), (1, 3), (2, 1), (2, 2), (2, 3)]
    assert pts[4][1].hardware.domains[0].count == 2


# ---- solving -------------------------------------------------------------------------------

def test_rate_sweep_costs_rise_with_rate():
    from placement.core.pipeline.solve import solve

    res = run_sweep(toy_instance(), ["workload.classes.long-in-long-out.rate_rps=6:60:4"], workers=1)
    costs = [p.cost_usd_per_hour for p in res.points]
    assert [p.status for p in res.points] == ["optimal"] * 4
    assert costs[0] == pytest.approx(solve(toy_instance()).cost_usd_per_hour)  # rate 6 is the instance itself
    assert costs == sorted(costs) and costs[-1] > costs[0]
    assert all(sum(p.chips_by_type.values()) == p.chips for p in res.points)
    assert all(p.modes == {"aggregated": 1.0} for p in res.points)


def test_overridden_chip_price_warns():
    res = run_sweep(toy_instance(), ["hardware.chips.a10g.usd_per_hour=1,2"], validate_only=True)
    assert any("overrides the chip's price" in w for w in res.warnings)


def test_failed_points_are_reported_not_dropped(monkeypatch):
    from placement.studies import sweep

    real = sweep.solve_job

    def flaky(job):
        if job.instance.workload.classes[2].rate_rps == 30:
            raise RuntimeError("worker fell over")
        return real(job)

    monkeypatch.setattr(sweep, "solve_job", flaky)
    res = run_sweep(toy_instance(), ["workload.classes.long-in-short-out.rate_rps=15,30,45"], workers=1)
    assert [p.status for p in res.points] == ["optimal", "failed", "optimal"]
    assert res.points[1].message == "RuntimeError: worker fell over"
    assert "failed" in to_csv(res).splitlines()[2]


def test_unavailable_solver_gives_error_points():
    res = run_sweep(toy_instance(), ["workload.classes.long-in-short-out.rate_rps=15,30"], backend="nope",
                    workers=1)
    assert [p.status for p in res.points] == ["error", "error"]
    assert "unavailable" in res.points[0].message


# ---- the command ---------------------------------------------------------------------------

def test_cli_sweep_writes_table_csv_json_plot(tmp_path, toy_path):
    args = ["sweep", toy_path, "--set", "workload.classes.long-in-long-out.rate_rps=6:24:3",
            "--set", "hardware.domains.a100-pool.usd_per_hour_per_chip=3.67,8", "--workers", "2",
            "--csv", str(tmp_path / "s.csv"), "--json", str(tmp_path / "s.json"), "--plot", str(tmp_path / "s.png")]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    assert "sweep of toy" in r.output and "optimal" in r.output
    doc = json.loads((tmp_path / "s.json").read_text())
    assert len(doc["points"]) == 6 and doc["axes"][0]["values"] == [6, 15, 24]
    rows = (tmp_path / "s.csv").read_text().splitlines()
    assert len(rows) == 7 and rows[0].startswith("index,series,kind,workload.classes.long-in-long-out.rate_rps")
    assert (tmp_path / "s.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bad_spec_exit_2_with_the_spec_verbatim(toy_path):
    r = runner.invoke(app, ["sweep", toy_path, "--set", "workload.classes.long-in-long-out.rate_rps=5:100:0"])
    assert r.exit_code == 2
    assert "5:100:0" in r.output and "empty range" in r.output  # not turned into an emoji
    r = runner.invoke(app, ["sweep", toy_path, "--set", "workload.classes.x.rate_rps=1"])
    assert r.exit_code == 2 and "expected one of short-in-short-out" in r.output
    r = runner.invoke(app, ["sweep", toy_path, "--set", "limits.power_kw=1", "--executor", "spark"])
    assert r.exit_code == 2 and "--executor" in r.output


def test_cli_dry_run_solves_nothing(no_solve):
    r = runner.invoke(app, ["sweep", BERTHA, "--set", "hardware.chips.bertha.usd_per_hour=0.05:0.5:10",
                            "--dry-run"])
    assert r.exit_code == 0 and "10 points" in r.output
    assert not no_solve
