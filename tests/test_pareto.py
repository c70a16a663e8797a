"""`placement pareto`: monotone frontier, interactivity from the plan, series beside the instance, outputs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance
from placement.studies.pareto import (
    envelope,
    mark_frontier,
    monotone_violations,
    pareto_series,
    run_pareto,
)
from placement.studies.sweep import Point, SweepResult

BERTHA = "instances/bertha-lpddr.yaml"
runner = CliRunner()


@pytest.fixture(scope="module")
def bertha_sweep():
    """TPOT of both classes from 10 to 150 ms, the instance and every series beside it (25 solves)."""
    return run_pareto(load_instance(BERTHA), ["tpot_ms=10:150:5"], workers=2)


def test_series_beside_the_instance(bertha_sweep):
    assert bertha_sweep.series == ["heterogeneous", "bertha", "h100", "aggregated", "PD"]
    kinds = {p.series: p.kind for p in bertha_sweep.points}
    assert kinds == {"heterogeneous": "full", "bertha": "homogeneous", "h100": "homogeneous", "aggregated": "mode",
                     "PD": "mode"}
    assert len(bertha_sweep.points) == 5 * 5
    assert [p.values["tpot_ms"] for p in bertha_sweep.series_points("PD")] == [10, 45, 80, 115, 150]


def test_relaxing_an_slo_never_raises_the_optimal_cost(bertha_sweep):
    assert monotone_violations(bertha_sweep) == []
    full = [p for p in bertha_sweep.series_points("heterogeneous") if p.ok]
    assert len(full) >= 4
    costs = [p.cost_usd_per_hour for p in full]
    assert costs == sorted(costs, reverse=True) and costs[0] > costs[-1]


def test_the_instance_is_never_worse_than_a_restriction_of_it(bertha_sweep):
    by = {(p.series, p.index): p for p in bertha_sweep.points}
    for p in bertha_sweep.points:
        full = by["heterogeneous", p.index]
        if p.ok:
            assert full.ok and full.cost_usd_per_hour <= p.cost_usd_per_hour * (1 + 1e-9)


def test_interactivity_is_from_the_predicted_tpot(bertha_sweep):
    for p in bertha_sweep.points:
        if not p.ok:
            continue
        slo = p.values["tpot_ms"]
        assert p.tpot_ms == max(v for v in p.class_tpot_ms.values())
        assert p.tpot_ms <= slo * (1 + 1e-9)
        assert p.tokens_per_s_per_user == pytest.approx(1000 / p.tpot_ms, rel=1e-8)
        assert p.tokens_per_s_per_chip == pytest.approx(p.output_tokens_per_s / p.chips, rel=1e-8)
        assert sum(p.chips_by_type.values()) == p.chips
        assert sum(p.modes.values()) == pytest.approx(1.0)


def test_frontier_points_are_not_dominated(bertha_sweep):
    for s in bertha_sweep.series:
        ok = [p for p in bertha_sweep.series_points(s) if p.ok]
        for p in ok:
            dominated = any(q.tokens_per_s_per_user >= p.tokens_per_s_per_user
                            and q.usd_per_million_output_tokens <= p.usd_per_million_output_tokens
                            and (q.tokens_per_s_per_user > p.tokens_per_s_per_user
                                 or q.usd_per_million_output_tokens < p.usd_per_million_output_tokens) for q in ok)
            assert p.frontier == (not dominated)
        if ok:
            assert any(p.frontier for p in ok) and any(p.frontier_throughput for p in ok)


def test_envelope_covers_every_series(bertha_sweep):
    env = envelope(bertha_sweep)
    assert env and [p.tokens_per_s_per_user for p in env] == sorted(p.tokens_per_s_per_user for p in env)
    # every feasible plan of any series is matched or beaten by the envelope at its interactivity
    for p in bertha_sweep.points:
        if p.ok:
            assert any(e.tokens_per_s_per_user >= p.tokens_per_s_per_user
                       and e.usd_per_million_output_tokens <= p.usd_per_million_output_tokens for e in env)


def _pt(i, x, usd, thr=1.0, series="heterogeneous", kind="full", ok=True):
    return Point(index=i, series=series, kind=kind, values={"tpot_ms": i}, status="optimal" if ok else "infeasible",
                 verified=ok, tokens_per_s_per_user=x if ok else None, usd_per_million_output_tokens=usd,
                 tokens_per_s_per_chip=thr, cost_usd_per_hour=usd)


def test_frontier_marking_on_hand_made_points():
    res = SweepResult(command="pareto", instance="x", source="x", backend="cbc", axes=[], focus_classes=[],
                      series=["heterogeneous", "PD"], points=[
                          _pt(0, 100, 5.0), _pt(1, 50, 1.0), _pt(2, 50, 2.0), _pt(3, 40, 1.0), _pt(4, 0, 0, ok=False),
                          _pt(0, 200, 9.0, series="PD", kind="mode")])
    mark_frontier(res)
    assert [p.frontier for p in res.points] == [True, True, False, False, False, True]
    assert [p.envelope for p in res.points] == [True, True, False, False, False, True]
    assert [p.tokens_per_s_per_user for p in envelope(res)] == [50, 100, 200]


def test_monotone_check_catches_a_rise():
    res = SweepResult(command="pareto", instance="x", source="x", backend="cbc", axes=[], focus_classes=[],
                      series=["heterogeneous"], points=[_pt(10, 50, 2.0), _pt(20, 40, 3.0), _pt(30, 0, 0, ok=False)])
    res.points[1].values = {"tpot_ms": 20}
    res.points[2].values = {"tpot_ms": 30}
    res.points[0].values = {"tpot_ms": 10}
    out = monotone_violations(res, "tpot_ms")
    assert len(out) == 2 and "cost rose" in out[0] and "but infeasible" in out[1]


def test_pareto_series_of_a_draft_instance():
    inst = load_instance("instances/spec-decode-draft.yaml")
    ser = pareto_series(inst)
    assert [s[0] for s in ser] == ["heterogeneous", "corsair", "h200", "aggregated", "PD", "PD+draft"]
    by = {s[0]: s[2] for s in ser}
    assert by["PD"].draft is None and by["PD"].modes == ["pd"]
    assert by["PD+draft"].draft is not None and by["PD+draft"].modes == ["pd"]
    assert by["h200"].draft is not None and [d.chip for d in by["h200"].hardware.domains] == ["h200"]


@pytest.mark.parametrize("sweep, cls, message", [
    ("rate_rps=1:2:2", None, "expected one of tpot_ms, ttft_ms"),
    ("tpot_ms=5:1:0", None, "empty range"),
    ("tpot_ms=0:10:3", None, "tpot_ms=0"),
    ("tpot_ms=5:10:2", "chat", "unknown class 'chat'"),
])
def test_bad_pareto_specs_fail_before_solving(sweep, cls, message):
    with pytest.raises(InputError, match=message):
        run_pareto(load_instance(BERTHA), [sweep], classes=[cls] if cls else None, validate_only=True)


def test_fixed_overrides_apply_to_every_point():
    res = run_pareto(load_instance(BERTHA), ["tpot_ms=20,40"], classes=["interactive"],
                     overrides=["workload.classes.interactive.rate_rps=5"], validate_only=True)
    assert res.overrides == {"workload.classes.interactive.rate_rps": 5}
    assert res.axes[0].paths == ["workload.classes.interactive.tpot_ms"]
    with pytest.raises(InputError, match="one value"):
        run_pareto(load_instance(BERTHA), ["tpot_ms=20,40"], overrides=["limits.power_kw=1,2"], validate_only=True)


def test_cli_pareto_outputs(tmp_path):
    r = runner.invoke(app, ["pareto", BERTHA, "--sweep", "tpot_ms=20:150:3", "--class", "offline-reports",
                            "--no-variants", "--workers", "1", "--plot", str(tmp_path / "p.png"),
                            "--json", str(tmp_path / "p.json"), "--csv", str(tmp_path / "p.csv")])
    assert r.exit_code == 0, r.output
    assert "pareto of bertha-lpddr" in r.output and "★" in r.output
    doc = json.loads((tmp_path / "p.json").read_text())
    assert doc["focus_classes"] == ["offline-reports"] and len(doc["points"]) == 3
    assert all(p["values"]["tpot_ms"] >= p["class_tpot_ms"]["offline-reports"] for p in doc["points"])
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert len(lines) == 4
    head = lines[0].split(",")
    assert len(head) == len(set(head)), head  # the swept tpot_ms and the predicted one are distinct columns
    assert "tpot_ms" in head and "predicted_tpot_ms" in head
