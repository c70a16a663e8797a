"""Measured aggregated-serving points and their mapping to cost-model inputs.

One measured point (model, system, layout, ISL/OSL, concurrency → TTFT, TPOT)
is a :class:`MeasuredRow`; :func:`map_row` turns it into the chip, model,
precision, layout, batch and context the roofline prices (:class:`MappedRow`),
or the reason it is skipped. :mod:`costmodels.calibration` fits the chip factors
on the mapped rows.

Data: ``benchmarks/data/measured_aggregated_serving.csv``, derived from NVIDIA
aiconfigurator's measured database (db dump 2026-04). Nothing here reads
outside the repository.

Mapping of a measured row (documented once, here)
--------------------------------------------------
System → chip
    ``h100_sxm → h100``, ``h200_sxm → h200``, ``b200_sxm → b200``,
    ``gb200 → gb200`` (:data:`SYSTEM_CHIPS`); a catalogue chip's own name is
    that chip (the points a user imports, :mod:`placement.measure`). ``b300_sxm`` (HGX B300) is
    skipped: the catalogue's ``gb300`` is the B300 in a GB300 NVL72 (1400 W,
    Grace-attached), a different power/clock envelope, so calibrating it from
    HGX rows would fit the wrong record.
Model → catalogue model
    Organisation prefix and ``-Instruct``/``-FP8``/``-NVFP4`` suffixes dropped,
    lower-cased, then :data:`MODEL_ALIASES` (DeepSeek-R1 and V3.1 share the
    V3 architecture; Kimi-K2.5's text backbone is Kimi K2's). Other models
    (MiniMax-M2.5, Qwen3.5-397B-A17B, GLM-5) are not in the catalogue: skipped.
Precision
    ``fp8``/``fp4``/``bf16`` as recorded; an empty field is an unquantised HF
    checkpoint run in BF16 (Llama-3.1-8B TP1 at batch 8 runs at 7.4–7.9 ms
    TPOT on H100, a 16 GB BF16 weight read, not an 8 GB FP8 one). ``int4``
    (Kimi-K2.5's W4A16) is skipped: the roofline ties weight bytes and matmul
    precision to one value. gpt-oss-120b ``fp4`` (MXFP4 experts, BF16
    attention) is priced all-FP4. KV cache: FP8 for FP8/FP4 rows, BF16 for
    BF16 rows (:func:`kv_precision_for`) — the data does not record it.
Layout
    Dense models and MoE rows without attention data parallelism: one replica
    is ``tp·pp`` chips, ``gpus/(tp·pp)`` replicas share the load, so the decode
    batch is ``conc·tp·pp/gpus`` sequences per replica; ``ep = tp`` when
    ``moe_ep > 1`` (experts sharded over the TP ranks), else 1.
    MoE rows with attention data parallelism (``adp > 1``, or a recorded
    ``tp`` above :data:`MAX_ATTENTION_TP` = 8: SGLang and TRT-LLM record the
    world size as ``tp`` when DP attention is on, and no framework runs MoE
    attention tensor-parallel across nodes) are one replica of ``gpus`` chips:
    attention runs on ``adp`` groups of ``tp_attn`` ranks (``tp_attn = tp`` if
    ``adp > 1`` is recorded, else 1) with ``conc/adp`` sequences each, the
    experts on all ``gpus`` ranks with all ``conc`` tokens. Its TPOT is
    ``decode_attention_step + decode_ffn_step − τ`` (run back to back on the
    same chips, one step overhead) plus the EP all-to-all when ``moe_ep > 1``.
TPOT
    Aggregated serving: every decode step also carries a share of the other
    sequences' prompts (chunked prefill). A closed loop re-prefills each of
    the replica's ``b`` sequences once per ``osl`` steps, so one request's
    decode steps carry ``r = (b − 1)·isl/osl`` prompt tokens each on average
    (:attr:`MappedRow.prefill_tokens_per_step`). The schedulers do not spread
    them: a waiting prompt fills the step's token budget (vLLM
    ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``, TensorRT-LLM
    ``max_num_tokens``; :data:`ENGINE_CHUNK_TOKENS` = 8,192, their default on
    80 GB+ GPUs), so a share ``q = r/s`` of the steps carry
    ``s = max(min(8192, isl), r)`` prompt tokens and the rest none
    (:attr:`MappedRow.carrying_tokens`, :attr:`MappedRow.carrying_share`)::

        step(c) = aggregated_step(chip, model, batch=b, context=isl + osl/2,
                                  chunk_tokens=c, chunk_context=max(isl − c, 0)/2,
                                  tp, pp, ep, precision, kv_precision).time_s
        TPOT = (1 − q)·step(0) + q·step(s)

    (``r = 0`` at ``b = 1``: a pure decode step at the mean context).
TTFT
    Measured TTFT at concurrency includes waiting for other prompts: a
    closed-loop benchmark with fixed ISL/OSL sends the ``b`` requests of a
    replica together (and re-sends them together), and the servers prefill
    them one after another, so the mean request waits for half of the others::

        TTFT ≈ (b + 1)/2 · prefill_step(prompt=isl, batch=1).time_s

    This is only compared (and fitted) at light load, ``b ≤``
    :data:`TTFT_MAX_SEQUENCES` = 8 sequences per replica, and not on
    attention-DP rows; at higher load chunking, prefill batching and
    decode interleaving dominate and the single-step model does not apply.
Filters
    Exact duplicate measurements are counted once. Saturated rows (TTFT > 10 s)
    are dropped. Rows whose weights plus ``b`` sequences of KV at the mean
    context cannot fit in the replica's working memory (no workspace) are
    dropped: the server cannot have run that batch (prefix caching or an
    admission cap), so the real batch is unknown.

Examples
--------
>>> row = MeasuredRow(model="meta-llama/Llama-3.1-8B-Instruct", system="h100_sxm", backend="trtllm",
...                   precision="", isl=1024, osl=128, tp=1, pp=1, adp=None, moe_tp=1, moe_ep=1,
...                   gpus=1, conc=8, ttft_ms=191.0, tpot_ms=7.94)
>>> m = map_row(row)
>>> m.chip, m.model, m.precision, m.batch, m.context, m.ttft_eligible
('h100', 'llama-3.1-8b', 'bf16', 8.0, 1088.0, True)
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from costmodels.models import ModelSpec, default_attention_precision, load_model_catalog
from costmodels.roofline import kv_bytes_per_sequence, kv_duplication, stored_weight_bytes
from topology.chips import ChipSpec, load_chip_catalog

__all__ = [
    "DEFAULT_DATA_PATH",
    "ENGINE_CHUNK_TOKENS",
    "MAX_ATTENTION_TP",
    "MODEL_ALIASES",
    "PRECISIONS",
    "PUBLIC_DATA_PATH",
    "SATURATED_TTFT_MS",
    "SCALE_DATA_PATH",
    "SYSTEM_CHIPS",
    "TTFT_MAX_SEQUENCES",
    "UNMAPPED_SYSTEMS",
    "MappedRow",
    "MeasuredRow",
    "catalogue_model_name",
    "kv_precision_for",
    "map_row",
    "map_rows",
    "read_measured_csv",
    "read_public_csv",
    "read_scale_csv",
    "with_prefill_regime",
]

#: The copy of the measured data shipped with the repository.
DEFAULT_DATA_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "measured_aggregated_serving.csv"

#: Public measurements of chips the aiconfigurator database does not cover (SRAM chips, AMD).
PUBLIC_DATA_PATH = DEFAULT_DATA_PATH.with_name("public_measurements.csv")
#: Closed-loop serving campaigns at scale (InferenceX monthly runs and others; benchmarks/data/THROUGHPUT_AT_SCALE.md).
SCALE_DATA_PATH = DEFAULT_DATA_PATH.with_name("throughput_at_scale.csv")

#: Measured system name → catalogue chip. Systems not listed are skipped.
SYSTEM_CHIPS: dict[str, str] = {"h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "gb200": "gb200"}
#: Why a system is not mapped (reported with the skipped rows).
UNMAPPED_SYSTEMS: dict[str, str] = {
    "b300_sxm": "HGX B300 has no catalogue record (gb300 is the B300 in GB300 NVL72, a different power/clock envelope)",
}
#: Normalised measured model name → catalogue model (after :func:`_normalise_model`).
MODEL_ALIASES: dict[str, str] = {
    "llama-3.1-8b": "llama-3.1-8b",
    "llama-3.1-70b": "llama-3.1-70b",
    "qwen3-32b": "qwen3-32b",
    "qwen3-235b-a22b": "qwen3-235b-a22b",
    "deepseek-v3": "deepseek-v3",
    "deepseek-r1": "deepseek-v3",  # same architecture (DeepseekV3ForCausalLM)
    "deepseek-v3.1": "deepseek-v3",  # same architecture
    "gpt-oss-120b": "gpt-oss-120b",
    "kimi-k2.5": "kimi-k2",  # text backbone identical to K2 (catalogue note)
}
_MODEL_SUFFIXES = ("-instruct", "-fp8", "-nvfp4", "-fp4")
#: Measured precision → roofline precision; ``None`` = not representable (row skipped).
PRECISIONS: dict[str, str | None] = {"": "bf16", "bf16": "bf16", "fp8": "fp8", "fp4": "fp4", "int4": None}

#: Rows with a TTFT above this are saturated (queue-dominated) and dropped.
SATURATED_TTFT_MS = 10_000.0
#: TTFT is compared only at light load: at most this many sequences per replica.
TTFT_MAX_SEQUENCES = 8.0
#: Prompt tokens one step may carry in the measured engines (estimate: vLLM ``max_num_batched_tokens`` 8192
#: for the OpenAI server, SGLang ``chunked_prefill_size`` 8192 on 80-160 GB GPUs, TensorRT-LLM
#: ``max_num_tokens`` 8192 — each engine's default; a campaign may have set another).
ENGINE_CHUNK_TOKENS = 8192.0
#: Recorded MoE ``tp`` above this is the world size of a DP-attention deployment.
MAX_ATTENTION_TP = 8


# ---- rows ----------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredRow:
    """One measured serving point, as recorded (ms, tokens, chips)."""

    model: str
    system: str
    backend: str
    precision: str
    isl: int
    osl: int
    tp: int
    pp: int
    adp: int | None
    moe_tp: int | None
    moe_ep: int | None
    gpus: int
    conc: int
    ttft_ms: float
    tpot_ms: float


def _int_or_none(s: str) -> int | None:
    s = (s or "").strip()
    return int(float(s)) if s else None


def read_measured_csv(path: str | Path = DEFAULT_DATA_PATH) -> list[MeasuredRow]:
    """Read the measured CSV (lines starting with ``#`` are comments)."""
    with open(path, newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    rows = []
    for r in csv.DictReader(lines):
        rows.append(MeasuredRow(
            model=r["model"], system=r["system"], backend=r["backend"], precision=r["precision"].strip(),
            isl=int(r["isl"]), osl=int(r["osl"]), tp=int(r["tp"]), pp=int(r["pp"] or 1),
            adp=_int_or_none(r["adp"]), moe_tp=_int_or_none(r["moe_tp"]), moe_ep=_int_or_none(r["moe_ep"]),
            gpus=int(r["gpus"]), conc=int(r["conc"]), ttft_ms=float(r["ttft_ms"]), tpot_ms=float(r["tpot_ms"]),
        ))
    return rows


def _normalise_model(name: str) -> str:
    n = name.split("/")[-1].lower()
    changed = True
    while changed:
        changed = False
        for suf in _MODEL_SUFFIXES:
            if n.endswith(suf):
                n, changed = n[: -len(suf)], True
    return n


def catalogue_model_name(name: str, catalogue: dict[str, ModelSpec] | None = None) -> str | None:
    """Catalogue model for a measured (HF-style) model name, or ``None``.

    >>> catalogue_model_name("meta-llama/Llama-3.1-70B-Instruct")
    'llama-3.1-70b'
    >>> catalogue_model_name("nvidia/DeepSeek-R1-NVFP4"), catalogue_model_name("Qwen/Qwen3.5-397B-A17B")
    ('deepseek-v3', None)
    """
    models = load_model_catalog() if catalogue is None else catalogue
    n = _normalise_model(name)
    target = MODEL_ALIASES.get(n, n)
    return target if target in models else None


def kv_precision_for(precision: str) -> str:
    """KV-cache precision assumed for a row: FP8 with FP8/FP4 weights, else BF16."""
    return "fp8" if precision in ("fp8", "fp4") else "bf16"


@dataclass(frozen=True)
class MappedRow:
    """A kept measured row and the cost-model inputs it maps to.

    ``layout`` is ``"tp"`` (one replica = ``tp·pp`` chips, ``batch`` sequences)
    or ``"adp"`` (attention data parallel: ``attn_dp`` groups of ``attn_tp``
    ranks with ``batch / attn_dp`` sequences each; experts over ``tp`` ranks,
    ``ep`` = ``tp`` or 1, with all ``batch`` tokens).
    """

    row: MeasuredRow
    chip: str
    model: str
    precision: str
    kv_precision: str
    layout: str
    tp: int
    pp: int
    ep: int
    attn_tp: int
    attn_dp: int
    batch: float
    context: float
    ttft_eligible: bool
    prefill_regime: str = "interleaved"

    @property
    def prefill_tokens_per_step(self) -> float:
        """Prompt tokens of the other sequences interleaved into each decode step.

        In a closed loop every sequence of the replica is re-prefilled once per
        ``osl`` decode steps, so the steps one request decodes through carry the
        other ``b − 1`` prompts: ``(b − 1)·isl/osl`` tokens per step on average.
        A harness that prefills the replica's prompts in waves (``prefill_regime
        = "waves"``: all prompts together, inside TTFT) puts none in the decode steps.
        """
        if self.prefill_regime == "waves":
            return 0.0
        return max(self.batch - 1.0, 0.0) * self.row.isl / max(self.row.osl, 1)

    @property
    def carrying_tokens(self) -> float:
        """Prompt tokens a step that carries any carries in each attention group: a whole prompt up to the
        engine's budget, or the group's mean if that is more (then every step carries). The DP groups'
        carrying steps are taken to coincide (each group refills its own slots at the same rate)."""
        r = self.prefill_tokens_per_step / self.attn_dp
        return max(min(ENGINE_CHUNK_TOKENS, float(self.row.isl)), r) if r > 0 else 0.0

    @property
    def carrying_share(self) -> float:
        """Share of a request's decode steps that carry prompt tokens: a group's mean tokens per step ÷ a
        carrying step's."""
        s = self.carrying_tokens
        return self.prefill_tokens_per_step / self.attn_dp / s if s > 0 else 0.0


def with_prefill_regime(rows: list[MappedRow], waves: frozenset[str] | set[str]) -> list[MappedRow]:
    """The rows with ``prefill_regime = "waves"`` for the campaigns (``row.backend``) in ``waves``."""
    return [replace(m, prefill_regime="waves") if m.row.backend in waves else m for m in rows]


def _weights_and_kv_fit(chip: ChipSpec, model: ModelSpec, m: MappedRow) -> bool:
    kv_seq = float(kv_bytes_per_sequence(model, m.kv_precision, m.context))
    if m.layout == "tp":
        g = m.tp * m.pp
        per_chip = (stored_weight_bytes(model, "full", m.precision, default_attention_precision(model, m.precision)) / g
                    + m.batch * kv_seq * float(kv_duplication(model, m.tp)) / g)
    else:
        seqs_per_group = m.batch / m.attn_dp
        per_chip = (stored_weight_bytes(model, "attention", m.precision, default_attention_precision(model, m.precision)) / m.attn_tp
                    + stored_weight_bytes(model, "ffn", m.precision) / m.tp
                    + seqs_per_group * kv_seq * float(kv_duplication(model, m.attn_tp)) / m.attn_tp)
    return per_chip <= chip.memory_bytes


def map_row(row: MeasuredRow, chips: dict[str, ChipSpec] | None = None,
            models: dict[str, ModelSpec] | None = None) -> MappedRow | str:
    """Map a measured row to cost-model inputs, or return the reason it is skipped."""
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    chip_name = SYSTEM_CHIPS.get(row.system, row.system)  # a measured system's chip, or a catalogue chip named
    if chip_name not in chips:
        return f"system {row.system} not in catalogue"
    model_name = catalogue_model_name(row.model, models)
    if model_name is None:
        return f"model {row.model} not in catalogue"
    if row.precision not in PRECISIONS:
        return f"precision {row.precision!r} unknown"
    precision = PRECISIONS[row.precision]
    if precision is None:
        return f"precision {row.precision} not representable"
    if row.ttft_ms > SATURATED_TTFT_MS:
        return "saturated (TTFT > 10 s)"
    if row.tpot_ms <= 0 or row.ttft_ms <= 0 or row.conc < 1 or row.tp < 1 or row.pp < 1:
        return "layout inconsistent"
    chip, model = chips[chip_name], models[model_name]
    kv_prec = kv_precision_for(precision)
    context = row.isl + row.osl / 2.0
    moe_ep = row.moe_ep or 1
    adp = row.adp or 1
    if model.moe is not None and (adp > 1 or row.tp > MAX_ATTENTION_TP):
        if row.pp != 1:
            return "layout inconsistent"
        attn_tp, attn_dp = (row.tp, adp) if adp > 1 else (1, row.tp)
        if attn_tp * attn_dp != row.gpus:
            return "layout inconsistent"
        m = MappedRow(row, chip_name, model_name, precision, kv_prec, "adp", tp=row.gpus, pp=1,
                      ep=row.gpus if moe_ep > 1 else 1, attn_tp=attn_tp, attn_dp=attn_dp,
                      batch=float(row.conc), context=context, ttft_eligible=False)
    else:
        g = row.tp * row.pp
        if row.gpus % g:
            return "layout inconsistent"
        batch = row.conc / (row.gpus // g)
        ep = row.tp if (model.moe is not None and moe_ep > 1) else 1
        m = MappedRow(row, chip_name, model_name, precision, kv_prec, "tp", tp=row.tp, pp=row.pp, ep=ep,
                      attn_tp=row.tp, attn_dp=1, batch=float(batch), context=context,
                      ttft_eligible=batch <= TTFT_MAX_SEQUENCES)
    if not _weights_and_kv_fit(chip, model, m):
        return "does not fit in memory at the recorded concurrency"
    return m


def _dedup_key(r: MeasuredRow) -> tuple:
    return tuple(asdict(r).values())


def map_rows(rows: list[MeasuredRow], chips: dict[str, ChipSpec] | None = None,
             models: dict[str, ModelSpec] | None = None) -> tuple[list[MappedRow], Counter]:
    """Map every row; return the kept rows and a Counter of skip reasons.

    Exact duplicates (same measured values) are counted once
    (reason ``"duplicate"``).
    """
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    kept: list[MappedRow] = []
    skipped: Counter = Counter()
    seen: set[tuple] = set()
    for r in rows:
        k = _dedup_key(r)
        if k in seen:
            skipped["duplicate"] += 1
            continue
        seen.add(k)
        m = map_row(r, chips, models)
        if isinstance(m, str):
            skipped[m] += 1
        else:
            kept.append(m)
    return kept, skipped


def read_public_csv(path: str | Path = PUBLIC_DATA_PATH, models: dict[str, ModelSpec] | None = None
                    ) -> list[MappedRow]:
    """Read ``benchmarks/data/public_measurements.csv`` as mapped rows.

    Each row already names the catalogue chip and model and the layout (see
    the file's header); ``backend`` carries the source id, ``system`` the chip.
    Rows are single replicas (``gpus = tp·pp``, ``ep = 1``). Their TTFT is
    kept but never compared: a published API TTFT includes the network round
    trip and the provider's queue, which are not chip properties.

    Examples
    --------
    >>> rows = read_public_csv()
    >>> sorted({m.chip for m in rows})
    ['groq-lpu-v1', 'mi300x', 'wse3']
    """
    models = load_model_catalog() if models is None else models
    with open(path, newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    out = []
    for i, r in enumerate(csv.DictReader(lines), start=1):
        if r["model"] not in models:
            raise ValueError(f"{path}: row {i}: model {r['model']!r} is not in the model catalogue")
        tp, pp, batch = int(r["tp"]), int(r["pp"]), float(r["batch"])
        isl, osl = int(r["isl"]), int(r["osl"])
        ttft = float(r["ttft_ms"]) if r["ttft_ms"].strip() else float("nan")
        row = MeasuredRow(model=r["model"], system=r["chip"], backend=r["source"], precision=r["precision"],
                          isl=isl, osl=osl, tp=tp, pp=pp, adp=None, moe_tp=None, moe_ep=None, gpus=tp * pp,
                          conc=int(batch), ttft_ms=ttft, tpot_ms=float(r["tpot_ms"]))
        out.append(MappedRow(row, r["chip"], r["model"], r["precision"], r["kv_precision"], "tp", tp=tp, pp=pp,
                             ep=1, attn_tp=tp, attn_dp=1, batch=batch, context=isl + osl / 2.0,
                             ttft_eligible=False))
    return out


def _float_or_none(x: str | None) -> float | None:
    return float(x) if x not in ("", None) else None


def read_scale_csv(path: str | Path = SCALE_DATA_PATH, chips: dict[str, ChipSpec] | None = None,
                   models: dict[str, ModelSpec] | None = None) -> tuple[list[MappedRow], list[dict], Counter]:
    """The closed-loop points of ``throughput_at_scale.csv`` as mapped rows, each row's CSV facts, skip reasons.

    Kept: aggregated serving at a fixed client concurrency, no speculative decoding (its draft length is
    not published), chip and model in the catalogue, a TPOT (the mean, else the median: later InferenceX
    files keep medians only, and a TPOT's two differ by a few %). ``row.backend`` is the campaign (the
    held-out unit), ``row.system`` the chip. Layout: with DP attention (MoE models) the attention runs on
    ``tp`` ranks of one sequence group each and the experts on all of them (``ep = tp`` when expert
    parallel); without it one replica is ``tp·pp`` chips holding ``conc·tp·pp/gpus`` sequences, experts
    expert-parallel over its ranks when ``ep > 1``. Rows the weights and KV cannot fit are skipped.

    Examples
    --------
    >>> rows, facts, skipped = read_scale_csv()
    >>> {m.chip for m in rows} >= {"b200", "h200", "mi355x"}, {f["publisher"] for f in facts}
    (True, {'semianalysis-inferencex'})
    """
    chips = load_chip_catalog() if chips is None else chips
    models = load_model_catalog() if models is None else models
    kept, facts, skipped = [], [], Counter()
    with open(path, newline="") as f:
        table = list(csv.DictReader(f))
    for i, r in enumerate(table):
        if r["load_kind"] != "concurrency" or r["disaggregated"] != "no":
            continue
        if r["spec_decode"] not in ("", "none"):
            skipped["speculative decoding (draft length not published)"] += 1
            continue
        tpot = _float_or_none(r["tpot_ms_mean"]) or _float_or_none(r["tpot_ms_median"])
        conc = _float_or_none(r["concurrency"])
        if r["model_catalogued"] != "yes" or r["chip"] not in chips or tpot is None or conc is None:
            skipped["chip or model not catalogued, or no TPOT"] += 1
            continue
        tp, pp, ep = int(r["tp"]), int(r["pp"] or 1), int(r["ep"] or 1)
        gpus, model = int(r["gpus"]), models[r["model"]]
        prec = "bf16" if r["precision"] == "fp16" else r["precision"]
        ttft = _float_or_none(r["ttft_ms_mean"]) or _float_or_none(r["ttft_ms_median"]) or 0.0
        row = MeasuredRow(model=r["model"], system=r["chip"], backend=r["campaign"], precision=prec,
                          isl=int(r["isl"]), osl=int(r["osl"]), tp=tp, pp=pp, adp=None, moe_tp=None, moe_ep=ep,
                          gpus=gpus, conc=int(conc), ttft_ms=ttft, tpot_ms=tpot)
        context = row.isl + row.osl / 2.0
        if r["dp_attention"] == "yes" and model.moe is not None:
            m = MappedRow(row, r["chip"], r["model"], prec, kv_precision_for(prec), "adp", tp=gpus, pp=1,
                          ep=gpus if ep > 1 else 1, attn_tp=1, attn_dp=gpus, batch=conc, context=context,
                          ttft_eligible=False)
        else:
            replicas = max(gpus // (tp * pp), 1)
            m = MappedRow(row, r["chip"], r["model"], prec, kv_precision_for(prec), "tp", tp=tp, pp=pp,
                          ep=tp if (model.moe is not None and ep > 1) else 1, attn_tp=tp, attn_dp=1,
                          batch=conc / replicas, context=context, ttft_eligible=False)
        if not _weights_and_kv_fit(chips[m.chip], model, m):
            skipped["the cost model says it does not fit in memory"] += 1
            continue
        kept.append(m)
        facts.append({"key": i, "campaign": r["campaign"], "publisher": r["publisher"], "framework": r["framework"],
                      "dp_attention": r["dp_attention"] == "yes",
                      "overlaps_fit": r["overlaps_measured_aggregated"] == "yes",
                      "measured_tok_s_per_gpu": _float_or_none(r["output_tok_s_per_gpu"])})
    return kept, facts, skipped
