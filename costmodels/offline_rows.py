"""Offline maximum-throughput measurements as rows the calibration fits: large batches, measured.

An offline throughput run (TensorRT-LLM's ``trtllm-bench throughput``) queues every request at once and
lets the engine run its largest batch; it publishes output tokens/s and no latency. Such a run is the
only public measurement of what a step costs at the batches a capacity plan buys for (hundreds to
thousands of sequences per rank), so the calibration takes it as a decode row: at the batch ``b`` the
engine ran, the mean decode step was ``TPOT = b / (output tokens/s of one replica)``.

The batch the engine ran
------------------------
``trtllm-bench`` sizes its engine from the KV cache (``tensorrt_llm/bench/build/tuning.py``,
``calc_engine_setting`` and ``finetune_setting``, TensorRT-LLM at commit 04cba88): as many requests as the
cache holds at their full length ``ISL + OSL``, at most 4,096 (÷ pp); the runtime's capacity scheduler
(``GUARANTEED_NO_EVICT``) admits a request only with blocks for its whole length; and a run never holds
more requests than its data set has (the perf overview's ``$num_requests`` per ISL/OSL,
:data:`DATASET_REQUESTS`). So::

    b = min(⌊free KV bytes / KV(ISL + OSL)⌋ per attention rank × dp, 4096 / pp per rank, N requests)

with the free KV bytes the framework's share of what the weights leave
(:func:`costmodels.memory.memory_per_chip_bytes`, TensorRT-LLM ``free_gpu_memory_fraction`` 0.9). A
request holds its slot for ISL + OSL tokens of cache but reads, on average, ``ISL + OSL/2`` of them.

Examples
--------
>>> rows, facts, skipped = read_offline_csv()
>>> {m.chip for m in rows} >= {"b200", "h100", "h200"}
True
>>> m = next(m for m in rows if m.chip == "h100" and m.model == "llama-3.1-8b" and m.row.isl == 1000)
>>> m.batch >= 256, round(m.row.tpot_ms / 1e3 * facts[rows.index(m)]["measured_tok_s_per_gpu"] / m.batch, 3)
(True, 1.0)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from costmodels.measured_rows import (
    MXFP4_MODELS,
    SCALE_DATA_PATH,
    MappedRow,
    MeasuredRow,
    kv_precision_for,
    scale_rows,
)
from costmodels.memory import memory_per_chip_bytes
from costmodels.models import ModelSpec, default_attention_precision, load_model_catalog
from topology.chips import ChipSpec, load_chip_catalog

__all__ = ["DATASET_REQUESTS", "ENGINE_MAX_REQUESTS", "KV_FREE_FRACTION", "engine_batch", "read_offline_csv"]

#: trtllm-bench's cap on the requests one engine holds (``finetune_setting``: ``min(kv_requests, 4096) / pp``).
ENGINE_MAX_REQUESTS = 4096
#: Share of the memory the weights leave that TensorRT-LLM gives its KV cache (``KvCacheConfig``
#: ``free_gpu_memory_fraction`` default 0.9, ``tensorrt_llm/llmapi/llm_args.py``).
KV_FREE_FRACTION = 0.9
#: Requests in each (ISL, OSL) data set of the TensorRT-LLM perf overview ("Preparing a Dataset",
#: ``$num_requests``: docs/source/performance/perf-overview.md at commits 258c754 and 00f3768,
#: docs/source/developer-guide/perf-overview.md at 03e27c7; 1000/1000 as 1024/1024 on the last).
DATASET_REQUESTS: dict[tuple[int, int], int] = {
    (128, 128): 30000, (128, 2048): 3000, (128, 4096): 1500, (1000, 2000): 1500, (2048, 128): 3000,
    (2048, 2048): 1500, (5000, 500): 1500, (1000, 1000): 3000, (500, 2000): 3000, (20000, 2000): 1000,
    (1024, 1024): 3000, (8192, 1024): 1500, (1024, 8192): 1500, (32768, 1024): 1000, (1024, 32768): 1000,
}


def _float(x: str | None) -> float | None:
    return float(x) if x not in ("", None) else None


def engine_batch(chip: ChipSpec, model: ModelSpec, *, isl: int, osl: int, tp: int, ep: int, pp: int, dp: int,
                 precision: str, kv_precision: str) -> int:
    """Sequences the engine runs (all ``dp`` attention ranks): the KV cache at ``ISL + OSL`` tokens a request,
    capped at :data:`ENGINE_MAX_REQUESTS` / pp per rank (module notes); 0 if the weights leave no room.

    Examples
    --------
    Llama-3.1-70B FP8 on two H100 at 1,000/1,000 tokens: each chip holds 35.3 GB of weights, 0.9 × 44.7 GB of
    cache; a request reserves 2,000 × 163,840 B / 2 chips = 164 MB on each: 245 requests.

    >>> from topology.chips import load_chip_catalog
    >>> from costmodels.models import load_model_catalog
    >>> h100, m = load_chip_catalog()["h100"], load_model_catalog()["llama-3.1-70b"]
    >>> engine_batch(h100, m, isl=1000, osl=1000, tp=2, ep=1, pp=1, dp=1, precision="fp8", kv_precision="fp8")
    245
    """
    kw = {"stage": "decode", "context": isl + osl, "tp": tp, "ep": ep, "pp": pp, "dp": dp, "precision": precision,
          "kv_precision": kv_precision, "workspace_fraction": 1.0 - KV_FREE_FRACTION, "workspace_of_free": True,
          "attention_precision": default_attention_precision(model, precision)}
    fixed = float(memory_per_chip_bytes(chip, model, batch=0, **kw))
    per_seq = float(memory_per_chip_bytes(chip, model, batch=1, **kw)) - fixed
    room = chip.memory_bytes - fixed
    if room <= 0 or per_seq <= 0:
        return 0
    return int(min(np.floor(room / per_seq), dp * ENGINE_MAX_REQUESTS // pp))


def read_offline_csv(path: str | Path = SCALE_DATA_PATH, chips: dict[str, ChipSpec] | None = None,
                     models: dict[str, ModelSpec] | None = None) -> tuple[list[MappedRow], list[dict], Counter]:
    """The offline maximum-throughput points of ``throughput_at_scale.csv`` as decode rows at the engine's batch.

    Kept: aggregated serving, no speculative decoding, chip and model in the catalogue, a published output
    throughput. Layout as :func:`costmodels.measured_rows.read_scale_csv` maps it (DP attention: one replica of
    ``gpus`` chips, ``tp`` attention ranks of one chip; else replicas of ``tp·pp`` chips). ``row.backend`` is
    the campaign (the held-out unit), ``row.conc`` the engine batch, ``row.tpot_ms`` the mean step that batch
    and the measured throughput imply; TTFT is not measured (``nan``).
    """
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    kept, facts, skipped = [], [], Counter()
    for i, r in scale_rows(path, "offline-max-throughput", skipped):
        if r["model_catalogued"] != "yes" or r["chip"] not in chips or r["model"] not in models:
            skipped["chip or model not catalogued"] += 1
            continue
        gpus, tp, pp, ep = int(r["gpus"]), int(r["tp"]), int(r["pp"] or 1), int(r["ep"] or 1)
        out = _float(r["output_tok_s_per_gpu"])
        total = _float(r["output_tok_s_total"])
        per_gpu = out if out is not None else (None if total is None else total / gpus)
        prec = "bf16" if r["precision"] == "fp16" else r["precision"]
        if per_gpu is None or per_gpu <= 0 or prec not in ("bf16", "fp8", "fp4"):
            skipped["no output throughput, or precision not representable"] += 1
            continue
        model, chip = models[r["model"]], chips[r["chip"]]
        if r["model"] in MXFP4_MODELS:
            prec = "mxfp4"
        if prec == "fp4" and "fp4" not in chip.flops_per_s:
            skipped["NVFP4 weights on a chip without FP4 units"] += 1
            continue
        # gpt-oss's perf-overview options: an FP8 cache, "Hopper: use auto" (the BF16 of its activations)
        kv_prec = "bf16" if prec == "mxfp4" and "fp4" not in chip.flops_per_s else kv_precision_for(prec)
        adp = r["dp_attention"] == "yes" and model.moe is not None
        replica = gpus if adp else tp * pp
        if gpus % replica:
            skipped["GPUs are not whole replicas"] += 1
            continue
        ep_lay = (gpus if ep > 1 else 1) if adp else (tp if (model.moe is not None and ep > 1) else 1)
        dp, rank_tp = (gpus, 1) if adp else (1, tp)
        b = engine_batch(chip, model, isl=int(r["isl"]), osl=int(r["osl"]), tp=rank_tp, ep=ep_lay, pp=pp, dp=dp,
                         precision=prec, kv_precision=kv_prec)
        b = min(b, DATASET_REQUESTS.get((int(r["isl"]), int(r["osl"])), b) // (gpus // replica))
        if b < 1:
            skipped["the cost model says the weights leave no KV room"] += 1
            continue
        tpot_ms = 1e3 * b / (per_gpu * replica)
        row = MeasuredRow(model=r["model"], system=r["chip"], backend=r["campaign"], precision=prec,
                          isl=int(r["isl"]), osl=int(r["osl"]), tp=tp, pp=pp, adp=gpus if adp else None,
                          moe_tp=None, moe_ep=ep, gpus=gpus, conc=b * (gpus // replica), ttft_ms=float("nan"),
                          tpot_ms=tpot_ms)
        context = row.isl + row.osl / 2.0
        if adp:
            m = MappedRow(row, r["chip"], r["model"], prec, kv_prec, "adp", tp=gpus, pp=1, ep=ep_lay, attn_tp=1,
                          attn_dp=gpus, batch=float(b), context=context, ttft_eligible=False)
        else:
            m = MappedRow(row, r["chip"], r["model"], prec, kv_prec, "tp", tp=tp, pp=pp, ep=ep_lay, attn_tp=tp,
                          attn_dp=1, batch=float(b), context=context, ttft_eligible=False)
        kept.append(m)
        facts.append({"key": i, "campaign": r["campaign"], "publisher": r["publisher"], "framework": r["framework"],
                      "dp_attention": adp, "overlaps_fit": False, "measured_tok_s_per_gpu": per_gpu})
    return kept, facts, skipped
