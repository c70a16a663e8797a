"""Bands where people look: pools whose p90 lies beyond their class's SLO are named in the printed plan and
the HTML report (issue 35, item 2)."""

from __future__ import annotations

from placement.core.instance.loading import load_instance
from placement.core.pipeline.solve import solve
from placement.core.plans.confidence import slos_inside_bands
from placement.report import render_html


def test_every_pool_with_a_p90_beyond_its_slo_is_named_and_no_other():
    plan = solve(load_instance("instances/mixed-fleet.yaml"))
    lines = slos_inside_bands(plan)
    slo = {c.name: c for c in plan.classes}
    expected = set()
    for p in plan.pools:
        if p.bands is None:
            continue
        if p.bands.tpot_ms and p.bands.tpot_ms[-1] > slo[p.traffic_class].tpot_slo_ms:
            expected.add((p.id, "TPOT"))
        if p.stage in ("prefill", "aggregated") and p.bands.ttft_ms and p.bands.ttft_ms[-1] > slo[p.traffic_class].ttft_slo_ms:
            expected.add((p.id, "TTFT"))
    assert expected and {(ln.split(" ")[0], ln.split(": ")[1][:4]) for ln in lines} == expected
    html = render_html(plan)
    assert all(f"SLO inside the band: {ln}".replace(">", "&gt;") in html for ln in lines)
