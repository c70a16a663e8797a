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

import pytest
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.pipeline.solve import solve
from placement.core.plans.confidence import band_rows
from placement.core.plans.plan import ClassPlan, LinkPlan, Plan, Pool, PoolSite
from placement.core.replicas.evaluate import PartLayout, PoolConfig
from placement.report import render_html
from placement.report.bands import bands_svg
from placement.report.fleet import fleet_svg
from placement.report.page import sweep_svg
from placement.report.svg import load_colour, text_width
from placement.studies.sweep import AxisInfo, Point, SweepResult, run_sweep
from tests.toy_fixture import TOY, banded_instance, toy_instance

runner = CliRunner()
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def toy_plan():
    return solve(toy_instance(), backend="highs")


@pytest.fixture(scope="module")
def toy_sweep():
    return run_sweep(toy_instance(), ["hardware.chips.a10g.usd_per_hour=1,2,4"], backend="highs", workers=1)


@pytest.fixture(scope="module")
def banded_plan():
    plan = solve(banded_instance(), backend="highs")
    assert plan.verified and any(p.bands for p in plan.pools)
    return plan


@pytest.fixture(scope="module")
def headroom_plan():
    plan = solve(banded_instance(slo_headroom=0.8), backend="highs")
    assert plan.verified
    return plan


def _pool(pp: int, chips: int) -> Pool:
    layout = PartLayout(chip="wse3", site_resource="wse3@1", chips=chips, tp=chips // pp, ep=1, pp=pp)
    return Pool(id="pool-01", column="c", stage="aggregated", traffic_class="chat", chip="wse3", replicas=3,
                chips=3 * chips, chips_per_replica=chips, tp=chips // pp, ep=1, pp=pp, batch=8, usd_per_hour=1.0,
                power_w=1.0, domains=["cs3"], sites=[PoolSite(site="cs3", replicas=3)],
                config=PoolConfig(kind="aggregated", traffic_class="chat", main=layout, batch=8))


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


def test_band_chart_draws_every_band_red_where_the_slo_lies_inside(banded_plan):
    rows = band_rows(banded_plan)
    root = ET.fromstring(bands_svg(rows))
    bands = [r for r in root.iter(f"{SVG}rect") if r.get("class", "").startswith("band")]
    assert len(bands) == sum(r.high is not None for r in rows) > 0
    red = [r for r in bands if "inside" in r.get("class")]
    assert len(red) == sum(r.inside for r in rows)
    assert {b.get("fill") for b in red} <= {"#f2a7a7"} and {b.get("fill") for b in bands if b not in red} <= {"#9fd8b4"}
    assert len([c for c in root.iter(f"{SVG}circle") if c.get("class") == "stated"]) == len(rows)
    assert len([ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "limit"]) == 1
    assert not [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "headroom"]  # no headroom, no line


def test_the_headroom_is_a_line_on_every_latency_row(headroom_plan):
    rows = band_rows(headroom_plan)
    assert headroom_plan.provenance.slo_headroom == 0.8
    latency = [r for r in rows if r.figure != "load"]
    assert latency and all(r.planned == pytest.approx(0.8 * r.limit) for r in latency)
    root = ET.fromstring(bands_svg(rows))
    lines = [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "headroom"]
    assert len(lines) == len(latency)
    limit = next(ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "limit")
    assert all(float(ln.get("x1")) < float(limit.get("x1")) for ln in lines)  # 80 % lies left of 100 %
    page = render_html(headroom_plan)
    assert "the SLO the plan was made to (slo_headroom)" in page


def test_no_label_of_the_band_chart_or_the_fleet_runs_out_of_its_room(banded_plan):
    """Every text, at the generous width estimate, ends inside the drawing (the fleet: inside its group)."""
    root = ET.fromstring(bands_svg(band_rows(banded_plan)))
    width = float(root.get("viewBox").split()[2])
    for t in root.iter(f"{SVG}text"):
        text, x = "".join(t.itertext()).split("\n")[0], float(t.get("x"))
        w = text_width(text, 12 if "class-name" in (t.get("class") or "") else 11,
                       bold="inside" in (t.get("class") or ""))
        start = {"end": x - w, "middle": x - w / 2}.get(t.get("text-anchor"), x)
        assert 0 <= start and start + w <= width, text
    pool = _pool(pp=4, chips=4)
    plan = Plan(instance="t", status="optimal", objective="cost", pools=[pool])
    fleet = ET.fromstring(fleet_svg(plan))
    for g in fleet.iter(f"{SVG}g"):
        if g.get("class") == "pool":
            rect, text = g.find(f"{SVG}rect"), g.find(f"{SVG}text")
            assert float(text.get("x")) + text_width(text.text, 10.5) <= float(rect.get("x")) + float(rect.get("width"))
            assert "tp1·pp4 × 3" in text.text  # the real layout, not "tp1 ×1"


def test_numbers_have_separators_and_no_exponents(banded_plan):
    page = render_html(banded_plan)
    assert not re.search(r"\d\.?\d*e[+-]\d", page), re.search(r".{40}\d\.?\d*e[+-]\d.{10}", page).group(0)
    big = Plan(instance="t", status="optimal", objective="cost", classes=[ClassPlan(
        name="c", rate_rps=1, modes={"pd": 1.0}, ttft_ms=7990.2, tpot_ms=20, ttft_slo_ms=8000, tpot_slo_ms=25)])
    assert "<td>7,990</td><td>8,000</td>" in render_html(big)


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
    html = sweep_svg(res)
    root = ET.fromstring(html[:html.index("</svg>") + 6])
    line = next(p for p in root.iter(f"{SVG}polyline"))
    assert len(line.get("points").split()) == 2  # the unverified time-limit point is not joined
    legend = [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"]
    assert legend == ["heterogeneous frontier", "heterogeneous dominated"]
    assert "only h100" not in html  # no series without points in the legend, and no note when none


def test_a_series_with_no_verified_plan_is_named_under_the_chart_not_in_its_legend():
    def pt(i, series, status="optimal"):
        return Point(index=i, series=series, kind="full" if series == "heterogeneous" else "homogeneous",
                     values={"tpot_ms": i}, status=status, verified=status == "optimal", tokens_per_s_per_user=10.0 * i,
                     usd_per_million_output_tokens=1.0 * i, frontier=True)
    res = SweepResult(command="pareto", instance="t", source="t", backend="highs", focus_classes=["c"],
                      series=["heterogeneous", "only h100"], axes=[AxisInfo(label="tpot_ms", paths=[],
                                                                            values=[1, 2], log=False)],
                      points=[pt(1, "heterogeneous"), pt(2, "heterogeneous"), pt(1, "only h100", "infeasible"),
                              pt(2, "only h100", "infeasible")])
    html = sweep_svg(res)
    root = ET.fromstring(html[:html.index("</svg>") + 6])
    assert [t.text for t in root.iter(f"{SVG}text") if t.get("class") == "legend"] == ["heterogeneous frontier"]
    assert "Not drawn, no verified plan with a predicted TPOT at any point: only h100" in html


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
    assert 'id="sweep"' in dom and 'id="slo"' in dom
    shot = tmp_path / "plan.png"
    browse(tmp_path, path, f"--screenshot={shot}", "--window-size=1280,1600")
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    assert struct.unpack(">II", data[16:24]) == (1280, 1600)


@needs_chromium
def test_the_bands_and_the_headroom_are_drawn_in_a_screenshot(tmp_path, headroom_plan):
    """Chromium's screenshot of the report has the band chart's colours over (most of) the area its band rects
    take, the SLO-inside-the-band red among them, and the headroom's blue: the test fails if the bands are not
    drawn, drawn without their fill, or the page is blank."""
    from collections import Counter

    import numpy as np
    from PIL import Image

    rows = band_rows(headroom_plan)
    page = render_html(headroom_plan)
    svg = page[page.index('<svg class="bands"'):]
    root = ET.fromstring(svg[:svg.index("</svg>") + 6])
    rects = [r for r in root.iter(f"{SVG}rect") if r.get("class", "").startswith("band")]
    assert len(rects) == sum(r.high is not None for r in rows) > 0
    area = Counter()
    for r in rects:
        area[r.get("fill")] += float(r.get("width")) * float(r.get("height"))
    assert area["#f2a7a7"] > 0 and area["#9fd8b4"] > 0, "the plan has both kinds of band"
    path = tmp_path / "plan.html"
    path.write_text(page)
    shot = tmp_path / "bands.png"
    _, console = browse(tmp_path, path, f"--screenshot={shot}", "--window-size=1280,3200",
                        "--force-device-scale-factor=1", "--hide-scrollbars")
    assert console == []
    image = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    assert image.shape[0] == 1280 * 3200
    colours, counts = np.unique(image, axis=0, return_counts=True)
    pixels = Counter({tuple(int(v) for v in c): int(n) for c, n in zip(colours, counts)})
    assert len(pixels) > 50, "the screenshot is blank"
    legend_swatch = 12 * 12  # the key's swatch of each band colour
    for colour, fill in (((0x9f, 0xd8, 0xb4), "#9fd8b4"), ((0xf2, 0xa7, 0xa7), "#f2a7a7")):
        # the SVG is drawn 1:1 (viewBox 820 wide, at most 820 px): its band rects' area, less anti-aliased edges
        assert pixels[colour] - legend_swatch >= 0.6 * area[fill], (fill, pixels[colour], area[fill])
    headroom = [ln for ln in root.iter(f"{SVG}line") if ln.get("class") == "headroom"]
    drawn = sum(float(ln.get("y2")) - float(ln.get("y1")) for ln in headroom) * 2 / 2  # 2 px wide, dashed 2 on 2
    assert pixels[(0x09, 0x69, 0xda)] >= 0.5 * drawn > 0
