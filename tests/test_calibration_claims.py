"""The calibration numbers quoted outside CALIBRATION.md equal the ones it was generated from.

``benchmarks/calibrate.py`` writes ``benchmarks/calibration_results.json`` beside CALIBRATION.md; the
chip catalogue (``heldout_tpot_error``) and the README's "Accuracy" table copy figures from it by hand.
These tests read the JSON (no refit: cheap) and fail when a copy goes stale.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from topology.chips import load_chip_catalog

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "calibration_results.json"
HELD_OUT = ("leave-one-source-out", "leave-one-model-out")
#: README "Accuracy" row label -> the chip family CALIBRATION.md pools it under.
README_FAMILIES = {"NVIDIA H100, H200": "NVIDIA Hopper", "NVIDIA B200": "NVIDIA Blackwell",
                   "Cerebras WSE-3, Groq LPU v1": "SRAM / wafer"}
README_METRICS = ("TPOT", "TTFT", "throughput per chip")
#: Non-GPU chips issue 12 names that have no usable published measurement (CALIBRATION.md notes).
SEARCHED_UNCALIBRATED = ("lp30", "trainium2", "trainium3", "bertha", "corsair")


@pytest.fixture(scope="module")
def results():
    return json.loads(RESULTS.read_text())


def _worst_heldout_median(entries: list[dict], group: str, metric: str) -> float | None:
    """The larger of the two held-out medians (%), or None when neither split has points."""
    meds = [e["median"] for e in entries
            if e["group"] == group and e["metric"] == metric and e["split"] in HELD_OUT and e["n"]]
    return max(meds) if meds else None


def test_catalogue_heldout_tpot_error_is_calibration_md_per_chip(results):
    for name, chip in load_chip_catalog().items():
        if chip.calibration != "calibrated":
            continue
        worst = _worst_heldout_median(results["chips"], name, "TPOT")
        if worst is None:
            assert chip.heldout_tpot_error is None, name
        else:
            assert chip.heldout_tpot_error == pytest.approx(round(worst / 100, 2), abs=1e-9), name


def test_readme_accuracy_table_is_calibration_md_per_family(results):
    text = (ROOT / "README.md").read_text()
    section = text.split("## Accuracy", 1)[1].split("\n## ", 1)[0]
    seen = set()
    for label, family in README_FAMILIES.items():
        row = re.search(r"^\| " + re.escape(label) + r" \|(.*)\|$", section, re.MULTILINE)
        assert row, label
        cells = [c.strip() for c in row.group(1).split("|")]
        for metric, cell in zip(README_METRICS, cells, strict=True):
            worst = _worst_heldout_median(results["families"], family, metric)
            if worst is None:
                assert cell == "not measured", (label, metric, cell)
            else:
                assert cell == f"{worst:.0f} %", (label, metric, cell, worst)
            seen.add(label)
    assert seen == set(README_FAMILIES)


def test_uncalibrated_issue_chips_say_what_was_searched():
    chips = load_chip_catalog()
    for name in SEARCHED_UNCALIBRATED:
        assert chips[name].calibration == "uncalibrated", name
        assert "searched" in chips[name].sources.get("calibration", ""), name
