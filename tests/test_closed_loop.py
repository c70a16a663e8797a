"""The closed loop end to end (docs/closed-loop.md): plan → measurements → calibrate → re-plan, on the shipped
sample results (the InferenceX gpt-oss 1k/1k sweep, tests/data/measure/inferencex/SOURCES.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance, parse_instance, read_document
from placement.core.pipeline.solve import solve
from placement.measure.importer import import_files
from placement.measure.refit import band_quantiles, refit, t_quantile

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
INSTANCE = ROOT / "instances" / "closed-loop.yaml"
SWEEP = ROOT / "instances" / "measured" / "agg_gptoss_1k1k.json"


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    d = tmp_path_factory.mktemp("loop")
    steps = [["measure", "import", str(SWEEP), "--out", str(d / "measured.yaml")],
             ["calibrate", str(d / "measured.yaml"), "--chip", "h100", "--out", str(d / "h100.yaml")],
             ["solve", str(INSTANCE), "--json", str(d / "before.json"), "-q"],
             ["solve", str(INSTANCE), "--calibration", str(d / "h100.yaml"), "--json", str(d / "after.json"), "-q"]]
    for argv in steps:
        r = runner.invoke(app, argv)
        assert r.exit_code == 0, (argv, r.output)
    return d


def _pools(plan: dict, chip: str) -> list[tuple]:
    return sorted((p["chip"], p["replicas"], p["chips"], p["tp"], p["ep"], p["batch"]) for p in plan["pools"]
                  if p["chip"] == chip)


def test_the_h100_band_shrinks_and_its_error_falls(loop):
    overlay = yaml.safe_load((loop / "h100.yaml").read_text())
    assert list(overlay["chips"]) == ["h100"]
    h100 = overlay["chips"]["h100"]
    from costmodels.bands import LEVELS, chip_band

    def span(q):
        return float(np.interp(0.9, LEVELS, q)) / float(np.interp(0.1, LEVELS, q))

    assert span(h100["bands"]["tpot"]["quantiles"]) < span(chip_band("h100").quantiles["tpot"])
    assert h100["bands"]["tpot"]["n"] == 15 and h100["batch_per_replica"] == [4.0, 64.0]
    # the held-out TPOT error after the refit beats the catalogue's on the same points
    catalogue = load_instance(INSTANCE)
    from costmodels.calibration import predict_rows
    from costmodels.measured_rows import map_row
    from placement.core.instance.context import Context

    pts = [p for p in import_files([SWEEP], {}).points if p.chip == "h100"]
    rows = [map_row(p.measured_row()) for p in pts]
    tpot, _ = predict_rows(Context.of(catalogue).chips["h100"], rows)
    meas = np.array([m.row.tpot_ms for m in rows]) / 1e3
    assert h100["bands"]["tpot"]["median_abs_error"] < float(np.median(np.abs(tpot / meas - 1)))
    # vLLM's request latency refitted on the light-load TTFTs, held out better than the catalogue's 60 ms
    from costmodels.framework_fit import one_prefill_s
    from costmodels.models import load_model_catalog

    vllm = h100["request_latency"]["vllm"]
    light = [m for m in rows if m.ttft_eligible]
    prefill = one_prefill_s(Context.of(catalogue).chips["h100"], light, load_model_catalog())
    ttft = np.array([m.row.ttft_ms for m in light]) / 1e3
    assert vllm["points"] == len(light) >= 3
    assert vllm["heldout_median_abs_error"] < float(np.median(np.abs((prefill + 0.060) / ttft - 1)))


def test_the_plan_changes_where_the_measurements_say_and_b200_stays(loop):
    before, after = (json.loads((loop / f).read_text()) for f in ("before.json", "after.json"))
    assert before["verified"] and after["verified"]
    assert _pools(before, "b200") == _pools(after, "b200")  # the H100 overlay leaves B200 pools as they were
    assert after["chips_by_type"]["h100"] < before["chips_by_type"]["h100"]
    assert after["cost_usd_per_hour"] < before["cost_usd_per_hour"]
    assert after["provenance"]["calibration"].startswith("h100.yaml sha256:")
    assert before["provenance"]["calibration"] is None
    fam = {p["bands"]["family"] for p in after["pools"] if p["chip"] == "h100"}
    assert fam == {"your measurements (h100.yaml)"}
    # a pool beyond the measured batches is said to extrapolate
    assert any("outside the 4–64 sequences per replica" in n for n in after["notes"])
    assert any("on h100" in n and "the calibration overlay h100.yaml" in n for n in after["notes"])


def test_an_h100_overlay_leaves_a_b200_plan_unchanged(loop):
    doc = read_document(INSTANCE)
    doc["hardware"]["domains"] = [d for d in doc["hardware"]["domains"] if d["chip"] == "b200"]
    doc["workload"]["classes"][0]["rate_rps"] = 60
    plain = solve(parse_instance(doc, str(INSTANCE)))
    calibrated = solve(load_instance_with(doc, loop / "h100.yaml"))
    assert plain.verified and calibrated.verified
    drop = {"provenance", "solver"}
    assert ({k: v for k, v in plain.model_dump(mode="json").items() if k not in drop}
            == {k: v for k, v in calibrated.model_dump(mode="json").items() if k not in drop})


def load_instance_with(doc: dict, overlay: Path):
    return parse_instance({**doc, "calibration": str(overlay)}, "<instance>")


def test_check_needs_the_overlay_the_plan_was_priced_with(loop):
    r = runner.invoke(app, ["check", str(INSTANCE), str(loop / "after.json"), "--calibration", str(loop / "h100.yaml")])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["check", str(INSTANCE), str(loop / "after.json")])
    assert r.exit_code == 5 and "provenance.calibration" in r.output and "--calibration" in r.output


def test_the_instance_may_name_its_overlay_by_a_relative_path(loop, tmp_path):
    doc = read_document(INSTANCE)
    (tmp_path / "h100.yaml").write_bytes((loop / "h100.yaml").read_bytes())
    (tmp_path / "inst.yaml").write_text(yaml.safe_dump({**doc, "calibration": "h100.yaml"}))
    by_path = load_instance(tmp_path / "inst.yaml")
    by_flag = load_instance(INSTANCE, loop / "h100.yaml")
    assert by_path.calibration == by_flag.calibration and by_path.calibration.chips["h100"].points == 15


def test_replan_with_the_overlay_shows_the_migration(loop):
    r = runner.invoke(app, ["replan", str(INSTANCE), str(loop / "before.json"), "--calibration",
                            str(loop / "h100.yaml"), "--json", str(loop / "replanned.json")])
    assert r.exit_code == 0, r.output
    assert "migration:" in r.output and "removed" in r.output
    new = json.loads((loop / "replanned.json").read_text())
    assert new["migration"]["replicas_removed"] > 0 and new["verified"]


def test_measure_compare_reports_the_share_inside_the_bands(loop):
    r = runner.invoke(app, ["measure", "compare", str(loop / "measured.yaml"), "--instance", str(INSTANCE),
                            "--json", str(loop / "cmp.json")])
    assert r.exit_code == 0, r.output
    rows = json.loads((loop / "cmp.json").read_text())
    h100 = [x for x in rows if x["chip"] == "h100"]
    assert len(h100) == 15 and "inside the p10–p90 band" in r.output
    r2 = runner.invoke(app, ["measure", "compare", str(loop / "measured.yaml"), "--instance", str(INSTANCE),
                             "--calibration", str(loop / "h100.yaml"), "--json", str(loop / "cmp2.json")])
    assert r2.exit_code == 0, r2.output
    after = [x for x in json.loads((loop / "cmp2.json").read_text()) if x["chip"] == "h100"]
    err = [abs(x["tpot_ms_predicted"] / x["tpot_ms_measured"] - 1) for x in h100]
    err2 = [abs(x["tpot_ms_predicted"] / x["tpot_ms_measured"] - 1) for x in after]
    assert np.median(err2) < np.median(err)  # in sample: the overlay fits these points better


def test_more_points_narrow_a_band_and_noisier_ones_widen_it():
    rng = np.random.default_rng(0)
    r = np.exp(rng.normal(0.05, 0.1, 8))
    width = lambda q: q[-1] / q[0]
    base = width(band_quantiles(r))
    assert width(band_quantiles(np.tile(r, 3))) < base  # the same spread seen three times as often
    assert width(band_quantiles(r ** 2)) > base  # twice the spread in log space
    assert t_quantile(0.9, 2) > t_quantile(0.9, 20) > 1.28
    assert math.isclose(t_quantile(0.95, 5), 2.015, rel_tol=0.01)


def test_few_points_of_one_file_keep_the_catalogue_where_the_refit_does_worse():
    pts = [p for p in import_files([SWEEP], {}).points if p.chip == "h100" and p.tp == 8][:2]
    from placement.measure.points import Measurements

    overlay, reports = refit([Measurements(points=pts)])
    assert reports[0].points == 2
    # two points: below three held out, every band is the catalogue's and says so
    assert all(b.n == 0 for b in overlay.chips["h100"].bands.values())
    assert any("catalogue's" in n for n in reports[0].notes)


def test_a_bad_overlay_is_a_clean_error(tmp_path):
    bad = tmp_path / "o.yaml"
    bad.write_text(yaml.safe_dump({"placement_calibration": 1, "chips": {"h100": {
        "points": 3, "bands": {m: {"n": 3, "quantiles": [2.0, 1.0]} for m in ("tpot", "ttft", "throughput")}}}}))
    with pytest.raises(InputError) as e:
        load_instance(INSTANCE, bad)
    assert "o.yaml" in str(e.value) and "quantiles" in str(e.value)
    r = runner.invoke(app, ["solve", str(INSTANCE), "--calibration", str(bad), "-q"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    other = tmp_path / "x.yaml"
    other.write_text(yaml.safe_dump({"placement_calibration": 1, "chips": {"no-such-chip": {
        "points": 3, "bands": {m: {"n": 0, "quantiles": [1.0] * 19} for m in ("tpot", "ttft", "throughput")}}}}))
    with pytest.raises(InputError, match="calibration.chips.no-such-chip"):
        load_instance(INSTANCE, other)


def test_bench_sh_says_how_to_take_a_single_pool_class_back(tmp_path):
    import shlex
    import shutil

    from placement.deploy.bench import import_hint

    doc = read_document(INSTANCE)
    doc["hardware"]["domains"] = [d for d in doc["hardware"]["domains"] if d["chip"] == "b200"]
    doc["workload"]["classes"][0]["rate_rps"] = 40
    doc["limits"] = {"max_pools_per_stage": 1}
    plan = solve(parse_instance(doc, str(INSTANCE)))
    assert len(plan.pools) == 1
    line = import_hint(plan, "chat", '"$OUT"/chat', "vllm")
    assert line.startswith("# calibrate from it: placement measure import")
    argv = shlex.split(line.removeprefix("# calibrate from it: ").replace("$OUT", str(tmp_path)))
    (tmp_path / "chat").mkdir()
    shutil.copy(ROOT / "tests/data/measure/aiperf/aiperf-repo-example-run1_gpt-oss-20b_c100_profile_export_aiperf.json",
                tmp_path / "chat" / "profile_export_aiperf.json")
    r = runner.invoke(app, [*argv[1:], "--model", "gpt-oss-120b"])
    assert r.exit_code == 0, r.output
    p = yaml.safe_load((tmp_path / "chat.measured.yaml").read_text())["points"][0]
    pool = plan.pools[0]
    assert (p["chip"], p["tp"], p["ep"], p["chips"]) == ("b200", pool.tp, pool.ep, pool.chips)


@pytest.mark.parametrize("command", ["solve", "check", "capacity", "compare", "replan", "report", "deploy", "validate"])
def test_every_planning_command_takes_an_overlay(command):
    r = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert r.exit_code == 0 and "--calibration" in r.output


def test_dash_outputs_own_standard_output(loop):
    r = runner.invoke(app, ["calibrate", str(loop / "measured.yaml"), "--chip", "h100", "--out", "-"])
    assert r.exit_code == 0, r.output
    assert list(yaml.safe_load(r.stdout)["chips"]) == ["h100"]  # the table went to standard error
    r = runner.invoke(app, ["measure", "compare", str(loop / "measured.yaml"), "--instance", str(INSTANCE),
                            "--json", "-"])
    assert r.exit_code == 0 and len(json.loads(r.stdout)) == 104
    r = runner.invoke(app, ["measure", "import", str(SWEEP), "--out", "-"])
    assert r.exit_code == 0 and len(yaml.safe_load(r.stdout)["points"]) == 124
