"""Per-stage cost models of LLM inference (DESIGN §3).

Roofline step models (:mod:`costmodels.roofline`), communication
(:mod:`costmodels.comm`), speculative decoding (:mod:`costmodels.specdec`),
memory fit (:mod:`costmodels.memory`), serving and economics
(:mod:`costmodels.serving`) and measured tables (:mod:`costmodels.measured`).
Everything takes a :class:`~topology.chips.ChipSpec` and a
:class:`~costmodels.models.ModelSpec` and vectorises over numpy arrays of batch,
context and layout. This package imports nothing from ``placement`` or ``solvers``.
"""

from costmodels.comm import (
    ACTIVATION_BYTES_PER_VALUE,
    SCALE_OUT_LATENCY_S,
    af_activation_bytes_per_token,
    af_comm_hidden,
    af_tpot_s,
    af_transfer_s,
    ep_alltoall_s,
    kv_transfer_bytes,
    kv_transfer_s,
    link_for_span,
    pp_hop_s,
    step_comm_s,
    tp_allreduce_s,
)
from costmodels.measured import MeasuredCapacity, MeasuredStepTable, capacities_from_melange
from costmodels.memory import (
    DEFAULT_WORKSPACE_FRACTION,
    fits,
    max_batch_that_fits,
    memory_per_chip_bytes,
    min_chips_for_weights,
)
from costmodels.models import ModelSpec, load_model_catalog
from costmodels.roofline import (
    FLOPS_PER_MAC,
    STAGES,
    StepCost,
    aggregated_step,
    attention_core_flops,
    attention_flops_per_pair,
    decode_attention_pairs,
    decode_attention_step,
    decode_ffn_step,
    decode_step,
    experts_touched_per_layer,
    forward_cost,
    kv_bytes_per_sequence,
    kv_duplication,
    matmul_params_per_token,
    prefill_attention_pairs,
    prefill_step,
    stage_part,
    stored_weight_bytes,
    weight_bytes_touched,
)
from costmodels.serving import (
    SECONDS_PER_HOUR,
    AggregatedServing,
    aggregated_serving,
    md1_max_utilisation,
    md1_wait_s,
    optimal_batch_closed_form,
    optimal_decode_batch,
    power_w,
    tokens_per_s_per_mw,
    usd_per_hour,
    usd_per_million_tokens,
)
from costmodels.specdec import expected_tokens_per_verify, spec_tpot_s, verify_step

__all__ = [
    # roofline
    "StepCost",
    "STAGES",
    "FLOPS_PER_MAC",
    "stage_part",
    "decode_step",
    "decode_attention_step",
    "decode_ffn_step",
    "prefill_step",
    "aggregated_step",
    "forward_cost",
    "experts_touched_per_layer",
    "weight_bytes_touched",
    "stored_weight_bytes",
    "matmul_params_per_token",
    "attention_flops_per_pair",
    "attention_core_flops",
    "decode_attention_pairs",
    "prefill_attention_pairs",
    "kv_bytes_per_sequence",
    "kv_duplication",
    # comm
    "ACTIVATION_BYTES_PER_VALUE",
    "SCALE_OUT_LATENCY_S",
    "link_for_span",
    "tp_allreduce_s",
    "ep_alltoall_s",
    "pp_hop_s",
    "step_comm_s",
    "kv_transfer_bytes",
    "kv_transfer_s",
    "af_activation_bytes_per_token",
    "af_transfer_s",
    "af_tpot_s",
    "af_comm_hidden",
    # specdec
    "expected_tokens_per_verify",
    "spec_tpot_s",
    "verify_step",
    # memory
    "DEFAULT_WORKSPACE_FRACTION",
    "memory_per_chip_bytes",
    "fits",
    "min_chips_for_weights",
    "max_batch_that_fits",
    # serving
    "SECONDS_PER_HOUR",
    "md1_wait_s",
    "md1_max_utilisation",
    "usd_per_hour",
    "power_w",
    "usd_per_million_tokens",
    "tokens_per_s_per_mw",
    "optimal_decode_batch",
    "optimal_batch_closed_form",
    "AggregatedServing",
    "aggregated_serving",
    # measured
    "MeasuredStepTable",
    "MeasuredCapacity",
    "capacities_from_melange",
    # records
    "ModelSpec",
    "load_model_catalog",
]
