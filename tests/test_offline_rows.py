"""Offline maximum-throughput measurements as calibration rows: the engine's batch, the implied step, what is kept."""

import pytest

from costmodels.models import load_model_catalog
from costmodels.offline_rows import (
    DATASET_REQUESTS,
    ENGINE_MAX_REQUESTS,
    engine_batch,
    read_offline_csv,
)
from topology.chips import load_chip_catalog


@pytest.fixture(scope="module")
def offline():
    return read_offline_csv()


def test_engine_batch_is_the_kv_cache_at_full_length_by_hand():
    # Llama-3.1-8B FP8 on one H100 at 1,000/1,000: 80 GB - 8.03 GB of weights, 0.9 of the rest for KV;
    # 32 layers x 2 x 8 KV heads x 128 x 1 B = 65,536 B a token, 2,000 tokens a request -> 131 MB: 494 requests.
    h100, m = load_chip_catalog()["h100"], load_model_catalog()["llama-3.1-8b"]
    b = engine_batch(h100, m, isl=1000, osl=1000, tp=1, ep=1, pp=1, dp=1, precision="fp8", kv_precision="fp8")
    free = 0.9 * (80e9 - m.total_params * 1.0)
    assert b == int(free // (2000 * 65_536)) == 494


def test_engine_batch_caps(offline):
    rows, facts, _ = offline
    for m, f in zip(rows, facts, strict=True):
        per_replica = m.row.gpus // (m.row.gpus if m.layout == "adp" else m.tp * m.pp)
        assert m.batch <= ENGINE_MAX_REQUESTS * m.attn_dp // m.pp
        assert m.batch <= DATASET_REQUESTS.get((m.row.isl, m.row.osl), 10**9) // per_replica
        # the implied mean step: the batch over one replica's measured output tokens/s
        replica = m.row.gpus // per_replica
        assert m.row.tpot_ms == pytest.approx(1e3 * m.batch / (f["measured_tok_s_per_gpu"] * replica))


def test_kept_rows_and_what_is_left_out(offline):
    rows, _, skipped = offline
    assert {m.row.backend for m in rows} == {"trtllm-perf-overview-v0.17", "trtllm-perf-overview-v1.0",
                                             "trtllm-perf-overview-devguide"}
    assert all(m.row.ttft_ms != m.row.ttft_ms for m in rows) and not any(m.ttft_eligible for m in rows)
    # gpt-oss serves its MXFP4 checkpoint whatever the column's label, with the cache Hopper runs ("auto": BF16)
    gpt = [m for m in rows if m.model.startswith("gpt-oss")]
    assert gpt and {m.precision for m in gpt} == {"mxfp4"}
    assert {m.kv_precision for m in gpt if m.chip in ("h100", "h200")} == {"bf16"}
    assert skipped["chip or model not catalogued"] > 0


def _instance(batch_range):
    return {"name": "range", "model": "llama-3.1-8b", "modes": ["aggregated"],
            "workload": {"classes": [{"name": "c", "rate_rps": 40, "prompt_tokens": 1000, "output_tokens": 500,
                                      "ttft_ms": 3000, "tpot_ms": 60}]},
            "hardware": {"chips": [{"name": "b200x", "base": "b200", "calibrated_batch_per_rank": batch_range}],
                         "domains": [{"name": "g", "chip": "b200x", "chips_per_domain": 8, "count": 1}]}}


def test_a_plan_beyond_the_batches_the_fit_measured_says_it_extrapolates():
    from placement.core.instance.loading import parse_instance
    from placement.core.pipeline.solve import solve

    plan = solve(parse_instance(_instance([1, 8])), backend="highs")
    assert plan.verified and all(p.batch > 8 for p in plan.pools)
    notes = [n for n in plan.notes if "beyond the 8 its calibration measured" in n]
    assert len(notes) == len(plan.pools) and "serving.max_sequences_per_rank" in notes[0]
    wide = solve(parse_instance(_instance([1, 100_000])), backend="highs")
    assert not any("its calibration measured" in n for n in wide.notes)


def test_the_calibrated_chips_carry_the_batches_their_fit_measured():
    chips = load_chip_catalog()
    for name in ("h100", "h200", "b200"):
        lo, hi = chips[name].calibrated_batch_per_rank
        assert 0 < lo < hi <= ENGINE_MAX_REQUESTS
