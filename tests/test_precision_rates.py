"""A chip's real FLOP/s rate per precision: BF16 on an FP8-only chip is refused, not run at the FP8 rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodels import (
    decode_step,
)
from costmodels.models import load_model_catalog
from placement.cli import roofline_report
from placement.core.errors import InputError
from placement.core.loading import parse_instance
from topology.chips import load_chip_catalog

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chips():
    return load_chip_catalog()


# ---- the rate of a precision ---------------------------------------------------------------------


def test_bf16_on_an_fp8_only_chip_has_no_rate(chips):
    lp30, h100 = chips["lp30"], chips["h100"]
    assert lp30.flops("fp8") == lp30.flops_per_s["fp8"]
    assert lp30.flops("fp4") == lp30.flops_per_s["fp8"]  # narrower values run on wider units
    assert h100.flops("fp4") == h100.flops_per_s["fp8"]
    with pytest.raises(ValueError, match="no bf16 rate"):
        lp30.flops("bf16")
    with pytest.raises(ValueError, match="no bf16 rate"):
        decode_step(lp30, load_model_catalog()["llama-3.1-8b"], batch=1, context=100, tp=64, precision="bf16")


def test_an_instance_asking_bf16_of_an_fp8_only_chip_is_an_input_error():
    doc = {"name": "bf16-on-lpx", "model": "llama-3.1-8b", "precision": {"weights": "bf16"},
           "workload": {"classes": [{"name": "chat", "rate_rps": 1, "prompt_tokens": 100, "output_tokens": 10,
                                     "ttft_ms": 1000, "tpot_ms": 50}]},
           "hardware": {"domains": [{"name": "h100", "chip": "h100", "count": 1},
                                    {"name": "lpx", "chip": "lp30", "count": 1}]}}
    with pytest.raises(InputError, match=r"hardware\.domains\[1\]\.chip: chip 'lp30' has no bf16 rate"):
        parse_instance(doc)
    doc["precision"] = {"weights": "fp8"}
    assert parse_instance(doc).precision.weights == "fp8"


def test_roofline_command_refuses_a_precision_the_chip_lacks():
    with pytest.raises(InputError, match="--precision"):
        roofline_report.roofline_summary("lp30", "llama-3.1-8b", precision="bf16", tp=64)
    rows = {r["name"]: r for r in roofline_report.catalog_rows("chips")}
    assert rows["lp30"]["ridge_flop_per_byte_bf16"] is None and rows["h100"]["ridge_flop_per_byte_bf16"] > 0


