"""The error-band catalogue (costmodels/catalog/error_bands.yaml) and its reading."""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

from costmodels.bands import BANDS_PATH, LEVELS, METRICS, chip_band, ratio_quantiles, step_factor
from topology.chips import load_chip_catalog


@pytest.fixture(scope="module")
def doc():
    return yaml.safe_load(BANDS_PATH.read_text())


def test_quantiles_are_sorted_positive_and_complete(doc):
    assert doc["levels"] == list(LEVELS)
    for fam, rec in doc["families"].items():
        assert rec["provenance"], fam
        for m in METRICS:
            q = rec[m]["quantiles"]
            assert len(q) == len(LEVELS) and all(x > 0 for x in q), (fam, m)
            assert q == sorted(q), (fam, m)


def test_banded_chips_are_the_calibrated_ones(doc):
    chips = load_chip_catalog()
    for chip, fam in doc["chips"].items():
        assert chips[chip].calibration == "calibrated", chip
        assert fam in doc["families"]
    assert chip_band("gb300").family == "uncalibrated"   # no measurements: the wide default
    assert chip_band("h100").family == "NVIDIA Hopper"


def test_uncalibrated_band_is_wider_than_calibrated_tpot_bands(doc):
    def width(rec):
        q = rec["tpot"]["quantiles"]
        return q[LEVELS.index(0.9)] / q[LEVELS.index(0.1)]

    wide = width(doc["families"]["uncalibrated"])
    for fam, rec in doc["families"].items():
        if fam != "uncalibrated" and rec["tpot"]["n"]:
            assert width(rec) < wide, fam


def test_step_factor_is_one_without_confidence_and_grows_with_it():
    assert step_factor("h100", "decode", None) == 1.0
    fs = [step_factor("b200", "prefill", c) for c in (0.1, 0.5, 0.9, 0.95)]
    assert fs == sorted(fs) and fs[0] < fs[-1]
    assert step_factor("b200", "prefill", 0.9) == chip_band("b200").factor("ttft", 0.9)


def test_ratio_quantiles_ignores_missing_points():
    meas = np.array([1.0, 2.0, np.nan, 4.0])
    pred = np.array([1.0, 1.0, 1.0, 2.0])
    assert ratio_quantiles(meas, pred, (0.0, 0.5, 1.0)) == [1.0, 2.0, 2.0]
    assert math.isclose(chip_band("h100").factor("tpot", 0.5),
                        np.interp(0.5, LEVELS, chip_band("h100").quantiles["tpot"]))


def test_catalog_chips_show_calibration_heldout_error_and_band():
    from typer.testing import CliRunner

    from placement.cli.app import app
    from placement.cli.roofline_report import catalog_rows

    rows = {r["name"]: r for r in catalog_rows("chips")}
    h100, rubin = rows["h100"]["error_band"], rows["rubin"]["error_band"]
    assert h100["family"] == "NVIDIA Hopper" and rubin["family"] == "uncalibrated"
    assert 0 < h100["ttft"]["heldout_median_abs_error"] < 1 and rubin["tpot"]["heldout_median_abs_error"] is None
    lo, mid, hi = h100["tpot"]["measured_over_predicted"]
    assert lo < mid < hi and hi == pytest.approx(chip_band("h100").factor("tpot", 0.9), abs=1e-4)
    out = CliRunner().invoke(app, ["catalog", "chips"], env={"COLUMNS": "240"}).output
    assert "held-out TPOT / TTFT" in out and f"{lo:.2f}–{hi:.2f}×" in out
