"""The HTML plan report: its content (fleet, breakdown, SLOs, sweep chart), the ``report`` command,
and the page in a real headless Chromium (no console errors, drawing and tables in the DOM, a
screenshot). The browser tests skip, saying why, where Debian's chromium is not installed."""

import json
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.context import Context
from placement.core.plan import ClassPlan, LinkPlan, Plan
from placement.core.solve import solve
from placement.report import render_html
from placement.report.fleet import fleet_svg
from placement.report.page import slo_svg, sweep_svg
from placement.report.svg import load_colour
from placement.studies.sweep import AxisInfo, Point, SweepResult, run_sweep
from tests.toy_fixture import TOY, toy_instance

runner = CliRunner()
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def toy_plan():
    return solve(toy_instance(), backend="highs")


@pytest.fixture(scope="module")
def toy_sweep():
    return run_sweep(toy_instance(), ["hardware.chips.a10g.usd_per_hour=1,2,4"], backend="highs", workers=1)


@pytest.fixture(scope="module")
def page(toy_plan, toy_sweep):
    return render_html(toy_plan, Context.of(toy_instance()).graph, toy_sweep)


# ---- content -----------------------------------------------------------------------------------

def test_page_is_self_contained(page):
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "<link" not in page and "src=" not in page and "url(" not in page
    addresses = set(re.findall(r"https?://[^\"' <]+", page))
    assert addresses == {"http://www.w3.org/2000/svg"}  # the SVG namespace, never fetched


def test_every_pool_is_drawn_on_each_group_hosting_it(toy_plan):
    root = ET.fromstring(fleet_svg(toy_plan, Context.of(toy_instance()).graph))
    drawn = {}
    for g in root.iter(f"{SVG}g"):
        if g.get("class", "").startswith("group"):
            name = g.find(f"{SVG}text").text
            drawn[name] = [t.text.split()[0] for t in g.iter(f"{SVG}text") if t.text.startswith("pool-")]
    assert set(drawn) == {"a10g-pool", "a100-pool"}  # the instance's groups, used or not
    expected = {name: sorted(p.id for p in toy_plan.pools if name in p.domains) for name in drawn}
    assert {k: sorted(v) for k, v in drawn.items()} == expected
    assert sum(map(len, drawn.values())) >= 2


def test_links_are_coloured_by_their_busier_direction():
    plan = Plan(instance="t", status="optimal", objective="cost", links=[
        LinkPlan(source="g1", target="tor", load_bytes_per_s=9e9, capacity_bytes_per_s=1e10, utilisation=0.9),
        LinkPlan(source="tor", target="g1", load_bytes_per_s=1e9, capacity_bytes_per_s=1e10, utilisation=0.1),
        LinkPlan(source="g2", target="tor", load_bytes_per_s=0, capacity_bytes_per_s=1e10, utilisation=0)])
    lines = {tuple(sorted(ln.find(f"{SVG}title").text.split(":")[0].split(" ↔ "))): ln.get("stroke")
             for ln in ET.fromstring(fleet_svg(plan)).iter(f"{SVG}line")}
    assert lines == {("g1", "tor"): load_colour(0.9), ("g2", "tor"): load_colour(0.0)}
    assert load_colour(0.9) != load_colour(0.0) != load_colour(0.01)


def test_breakdown_adds_up_to_the_plan(page, toy_plan):
    table = re.search(r'<table id="breakdown">.*?</table>', page, re.DOTALL).group(0)
    total = re.search(r"<td>total</td><td></td><td>(\d+)</td><td>([\d,.]+)</td>", table)
    assert int(total.group(1)) == toy_plan.chips
    assert float(total.group(2).replace(",", "")) == pytest.approx(toy_plan.cost_usd_per_hour, abs=0.005)


def test_slo_bars_are_red_beyond_the_slo_and_show_error_bands():
    ok = ClassPlan(name="ok", rate_rps=1, modes={"pd": 1}, ttft_ms=50, tpot_ms=20, ttft_slo_ms=100, tpot_slo_ms=25)
    late = SimpleNamespace(name="late", ttft_ms=150.0, tpot_ms=20.0, ttft_slo_ms=100.0, tpot_slo_ms=25.0,
                           ttft_ms_low=120.0, ttft_ms_high=180.0)
    root = ET.fromstring(slo_svg([ok, late]))
    fills = [r.get("fill") for r in root.iter(f"{SVG}rect") if r.get("class") == "slo-bar"]
    assert fills == ["#1a7f37", "#1a7f37", "#cf222e", "#1a7f37"]
    assert len([p for p in root.iter(f"{SVG}path") if p.get("class") == "band"]) == 1


def test_sweep_chart_has_labelled_axes_and_chip_steps(toy_sweep):
    svg = sweep_svg(toy_sweep)
    assert "a10g price ($/h per chip)" in svg and "hardware.chips" not in svg
    assert svg.count("<svg") == 2 and "cost ($/h)" in svg and "chips" in svg


def test_pareto_chart_draws_frontiers_through_solved_points_only():
    def pt(i, x, y, frontier, status="optimal"):
        return Point(index=i, series="heterogeneous", kind="full", values={"tpot_ms": i}, status=status,
                     verified=status == "optimal", tokens_per_s_per_user=x, usd_per_million_output_tokens=y,
                     frontier=frontier)
    res = SweepResult(command="pareto", instance="t", source="t", backend="highs", focus_classes=["c"],
                      series=["heterogeneous"], axes=[AxisInfo(label="tpot_ms", paths=[], values=[1, 2, 3, 4],
                                                               log=False)],
                      points=[pt(1, 10, 1.0, True), pt(2, 20, 2.0, True), pt(3, 15, 3.0, False),
                              pt(4, 30, 1.5, True, status="time_limit")])
    root = ET.fromstring(sweep_svg(res))
    line = next(p for p in root.iter(f"{SVG}polyline"))
    assert len(line.get("points").split()) == 2  # the unverified time-limit point is not joined
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == ["heterogeneous frontier", "heterogeneous dominated"]


def test_a_plan_without_pools_still_reports_its_diagnosis():
    plan = Plan(instance="t", status="infeasible", objective="cost", diagnosis=["h100-hgx: 16 domains, 40 needed"])
    page = render_html(plan)
    assert "h100-hgx: 16 domains, 40 needed" in page and 'class="fleet"' in page and "infeasible" in page


# ---- the command -------------------------------------------------------------------------------

@pytest.fixture
def files(tmp_path, toy_plan, toy_sweep):
    (tmp_path / "toy.json").write_text(json.dumps(TOY))
    (tmp_path / "plan.json").write_text(toy_plan.model_dump_json())
    (tmp_path / "sweep.json").write_text(toy_sweep.model_dump_json())
    return tmp_path


def test_report_command_writes_the_page(files):
    out = files / "plan.html"
    r = runner.invoke(app, ["report", str(files / "plan.json"), "--instance", str(files / "toy.json"),
                            "--sweep", str(files / "sweep.json"), "--html", str(out)])
    assert r.exit_code == 0, r.output
    text = out.read_text()
    assert 'id="sweep"' in text and "a10g-pool" in text and 'class="fleet"' in text


def test_report_command_to_standard_output(files):
    r = runner.invoke(app, ["report", str(files / "plan.json"), "--html", "-"])
    assert r.exit_code == 0 and r.stdout.startswith("<!DOCTYPE html>")


def test_report_command_refuses_a_plan_of_another_instance(files):
    other = dict(TOY, name="other")
    (files / "other.json").write_text(json.dumps(other))
    r = runner.invoke(app, ["report", str(files / "plan.json"), "--instance", str(files / "other.json"),
                            "--html", str(files / "x.html")])
    assert r.exit_code == 2 and "not 'other'" in r.output and not (files / "x.html").exists()


def test_report_command_names_a_bad_sweep_file(files):
    (files / "bad.json").write_text('{"command": "sweep"}')
    r = runner.invoke(app, ["report", str(files / "plan.json"), "--sweep", str(files / "bad.json"),
                            "--html", str(files / "x.html")])
    assert r.exit_code == 2 and "bad.json" in r.output and "pareto --json" in r.output


# ---- in a real browser -------------------------------------------------------------------------

CHROMIUM = os.environ.get("PLACEMENT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
#: Flags for a headless, offline run (as root: no sandbox); background networking off, or Chromium
#: keeps trying hosts this machine cannot reach.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]

needs_chromium = pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                                    reason=f"headless Chromium not found at {CHROMIUM} (Debian: apt-get install "
                                           "chromium); the browser tests need it")


def browse(tmp_path: Path, page: Path, *args: str) -> tuple[str, list[str]]:
    """Run Chromium on ``page``: its standard output and the console messages it logged."""
    r = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args, page.as_uri()],
                       capture_output=True, text=True, timeout=120, check=False)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    return r.stdout, console


@needs_chromium
def test_the_harness_sees_console_errors(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><p>x</p><script>console.error("marker-1"); notDefined();</script>')
    _, console = browse(tmp_path, bad, "--dump-dom")
    assert any("marker-1" in c for c in console) and any("notDefined" in c for c in console)


@needs_chromium
def test_page_renders_in_chromium_without_console_errors(tmp_path, page):
    path = tmp_path / "plan.html"
    path.write_text(page)
    dom, console = browse(tmp_path, path, "--dump-dom")
    assert console == []
    assert re.search(r'<svg class="fleet"', dom) and dom.count('class="pool"') >= 2
    for table in ("breakdown", "classes", "pool-table"):
        assert f'<table id="{table}">' in dom
    assert 'id="sweep"' in dom and '<svg class="slo"' in dom
    shot = tmp_path / "plan.png"
    browse(tmp_path, path, f"--screenshot={shot}", "--window-size=1280,1600")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert struct.unpack(">II", data[16:24]) == (1280, 1600)
