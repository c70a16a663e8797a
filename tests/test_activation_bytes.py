"""One rule for activation bytes: they travel at the instance's activation precision (default BF16), not the
weight precision, in the TP collectives and the attention–FFN traffic."""

from __future__ import annotations

from pathlib import Path

import pytest

from costmodels import (
    af_activation_bytes_per_token,
    decode_step,
)
from costmodels.models import load_model_catalog
from placement import load_instance
from placement.core.instance.context import Context
from placement.core.replicas.evaluate import PartLayout, PoolConfig, evaluate
from topology.chips import load_chip_catalog

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def chips():
    return load_chip_catalog()


# ---- one rule for activation bytes ---------------------------------------------------------------


def _af_ctx(activations: str | None):
    inst = load_instance(ROOT / "instances" / "rubin-lpx-deepseek.yaml")
    prec = inst.precision if activations is None else inst.precision.model_copy(update={"activations": activations})
    return Context.of(inst.model_copy(update={"precision": prec}))


def test_attention_ffn_traffic_uses_the_activation_precision_not_the_weights():
    default = _af_ctx(None)
    assert default.instance.precision.weights == "fp8" and default.instance.precision.activations == "bf16"
    main = PartLayout(chip="rubin", site_resource="rubin@72", chips=8, tp=8, ep=1, pp=1)
    ffn = PartLayout(chip="lp30", site_resource="lp30@256", chips=64, tp=64, ep=64, pp=1)
    cfg = PoolConfig(kind="decode-af", traffic_class=default.instance.workload.classes[0].name, main=main,
                     partner=ffn, batch=32, micro_batches=2)
    cls = default.instance.workload.classes[0]
    bf16 = evaluate(default, cfg, cls, pair_latency_s=2e-6)
    fp8 = evaluate(_af_ctx("fp8"), cfg, cls, pair_latency_s=2e-6)
    per_token = af_activation_bytes_per_token(default.model, "bf16", ffn_expert_parallel=True)
    assert float(bf16.pair_bytes_per_s) == pytest.approx(32 * per_token / float(bf16.tpot_s))
    assert float(fp8.pair_bytes_per_s) * float(fp8.tpot_s) == pytest.approx(
        0.5 * float(bf16.pair_bytes_per_s) * float(bf16.tpot_s))


def test_tensor_parallel_collectives_use_the_activation_precision(chips):
    m = load_model_catalog()["llama-3.1-70b"]
    kw = {"batch": 512, "context": 1000, "tp": 8, "precision": "fp8"}
    bf16 = decode_step(chips["h100"], m, **kw)
    fp8 = decode_step(chips["h100"], m, activation_precision="fp8", **kw)
    assert bf16.comm_s > fp8.comm_s > 0
    assert decode_step(chips["h100"], m, activation_precision="bf16", **kw).comm_s == bf16.comm_s


