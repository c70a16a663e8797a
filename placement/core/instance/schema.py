"""Instance files: the model, the traffic, the fleet and what is allowed.

An instance is YAML or JSON validated by pydantic with ``extra="forbid"``;
friendly units at the edge (``_ms``, ``_gb_per_s``, ``_us``) are converted to
base units (s, bytes/s) by the accessors, never stored twice.

Magnitude bounds. Besides positivity, a few fields are bounded to catch
numbers given in the wrong unit (``tpot_ms: 0.00005`` meant as seconds,
bytes/s under ``_gb_per_s``) and absurd sizes that would only make the solver
hang or lose precision:

==========================================  ==============================
field                                       accepted
==========================================  ==============================
``rate_rps``                                ≤ 1e7 requests/s per class
``ttft_ms``                                 0.01 ms … 1e8 ms (~28 h)
``tpot_ms``                                 0.01 ms … 1e6 ms
``bandwidth_gb_per_s``, ``uplink_gb_per_s``  ≤ 1e7 GB/s (10 PB/s)
``latency_us``, ``uplink_latency_us``         ≤ 1e6 µs (1 s)
``usd_per_hour_per_chip``                   ≤ 1e5 $/h
``limits.power_kw``                         ≤ 1e7 kW (10 GW)
``limits.budget_usd_per_hour``              ≤ 1e9 $/h
classes, domain groups                      ≤ 1,000 each
switches, links                             ≤ 10,000 each
==========================================  ==============================

An SLO inside these bounds but below what any chip can reach (e.g. TPOT
0.05 ms) is not an input error: the instance is infeasible and the diagnosis
names the best TPOT/TTFT the fleet reaches.

Examples
--------
>>> from placement.core.instance.schema import Instance
>>> inst = Instance.model_validate({
...     "name": "tiny", "model": "llama-3.1-8b",
...     "workload": {"classes": [{"name": "chat", "rate_rps": 2, "prompt_tokens": 500,
...                               "output_tokens": 100, "ttft_ms": 1000, "tpot_ms": 50}]},
...     "hardware": {"domains": [{"name": "h100", "chip": "h100", "count": 2}]}})
>>> inst.workload.classes[0].tpot_s
0.05
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from costmodels.measured import MeasuredCapacity
from costmodels.models import ModelSpec, default_attention_precision
from placement.core.instance.calibration_overlay import CalibrationOverlay
from placement.core.instance.field_types import (
    NAME_PATTERN,
    NAME_RULE,
    ActivationPrecision,
    DerivedName,
    Framework,
    Mode,
    Name,
    NonNegFinite,
    PositiveFinite,
    PriceSetName,
    StoragePrecision,
    WeightPrecision,
    Whole,
)
from placement.core.instance.objectives import ObjectiveName
from placement.core.instance.sessions import KvTierSpec, Sessions
from placement.core.instance.user_chips import UserChip, user_chip
from placement.core.modes.registry import options
from topology.chips import ChipSpec
from topology.prices import DEFAULT_PRICES
from topology.records import Record

__all__ = ["MAX_DOMAINS_PER_GROUP", "NAME_PATTERN", "NAME_RULE", "ActivationPrecision", "DerivedName",
           "DomainGroup", "Draft", "Framework", "Hardware", "Instance", "LengthDistribution", "Limits", "Link",
           "MeasuredCapacity", "MeasuredStepTime", "Name", "Precision", "Serving", "StoragePrecision",
           "TrafficClass", "WeightPrecision", "Workload"]


def __getattr__(name: str) -> Any:
    """``MODES``: the serving modes an instance may allow, read when asked (as
    :mod:`~placement.core.instance.field_types` does)."""
    if name == "MODES":
        return options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

class LengthDistribution(Record):
    """How a class's prompt or output lengths vary around the class's mean length.

    Give one of ``cv`` — a lognormal shape with that coefficient of variation σ/μ around the
    class's ``prompt_tokens`` or ``output_tokens`` — or ``histogram``, ``[tokens, weight]`` pairs
    (weights need not sum to 1) whose weighted mean must be the class's length. Prompt and output
    lengths are taken independent of each other.

    What the shape changes (``placement.core.replicas.evaluate``, ``costmodels.queueing``): the decode context
    and KV a slot holds (length-biased: a slot is held in proportion to its request's output, so
    E[o²]/E[o] = ō(1 + cv²)), the queueing waits (service and hold variance), a percentile TTFT (the
    prompt at its tail) and a percentile TPOT (E[1/o]).

    Examples
    --------
    >>> d = LengthDistribution(histogram=[(100, 1), (300, 1)])
    >>> d.squared_cv(200.0), d.inverse_mean(200.0), d.quantile(200.0, 0.9)
    (0.25, 0.006666666666666667, 300.0)
    >>> round(LengthDistribution(cv=1.0).quantile(200.0, 0.5), 1)   # lognormal median μ/√(1 + cv²)
    141.4
    """

    cv: NonNegFinite | None = Field(default=None, le=10.0, description="coefficient of variation σ/μ "
                                    "(lognormal shape around the class's mean length)")
    histogram: list[tuple[Annotated[Whole, Field(ge=1, le=10_000_000)], PositiveFinite]] | None = Field(
        default=None, min_length=1, max_length=1000,
        description="[tokens, weight] pairs; their weighted mean is the class's length")

    @model_validator(mode="after")
    def _one_form(self) -> LengthDistribution:
        if (self.cv is None) == (self.histogram is None):
            raise ValueError("give exactly one of cv (a lognormal shape) or histogram ([tokens, weight] pairs)")
        return self

    def _points(self) -> tuple[np.ndarray, np.ndarray]:
        tokens = np.array([t for t, _ in self.histogram], dtype=float)
        weights = np.array([w for _, w in self.histogram], dtype=float)
        return tokens, weights / weights.sum()

    def mean(self) -> float | None:
        """A histogram's weighted mean (tokens); None for a shape, whose mean is the class's."""
        if self.histogram is None:
            return None
        t, w = self._points()
        return float(w @ t)

    def squared_cv(self, mean: float) -> float:
        """cv² = E[x²]/E[x]² − 1 (a histogram's own mean; ``mean`` scales a lognormal)."""
        if self.histogram is None:
            return float(self.cv) ** 2
        t, w = self._points()
        return max(float(w @ t**2) / self.mean() ** 2 - 1.0, 0.0)

    def inverse_mean(self, mean: float) -> float:
        """E[1/x] in 1/tokens: a lognormal's is (1 + cv²)/μ."""
        if self.histogram is None:
            return (1.0 + float(self.cv) ** 2) / mean
        t, w = self._points()
        return float(w @ (1.0 / t))

    def quantile(self, mean: float, q: float) -> float:
        """The length not exceeded with probability ``q`` (tokens): the smallest histogram point whose
        cumulative weight reaches q, or the lognormal's μ·exp(σz_q − σ²/2), σ² = ln(1 + cv²)."""
        if self.histogram is None:
            s2 = math.log1p(float(self.cv) ** 2)
            return mean * math.exp(math.sqrt(s2) * NormalDist().inv_cdf(q) - s2 / 2.0)
        t, w = self._points()
        order = np.argsort(t, kind="stable")
        cum = np.cumsum(w[order])
        return float(t[order][min(int(np.searchsorted(cum, q - 1e-12)), t.size - 1)])


class TrafficClass(Record):
    """A stream of similar requests with its latency promises.

    ``prompt_tokens`` and ``output_tokens`` are mean lengths; ``prompt_lengths`` and
    ``output_lengths`` say how they vary (:class:`LengthDistribution`; absent: every request the same).
    """

    name: Name
    rate_rps: PositiveFinite = Field(le=1e7, description="requests/s")
    prompt_tokens: Whole = Field(ge=1, le=10_000_000, description="new prompt tokens to prefill (the mean, "
                                 "when prompt_lengths says how they vary)")
    cached_prefix_tokens: Whole = Field(default=0, ge=0, le=10_000_000, description="prefix already in KV cache")
    output_tokens: Whole = Field(ge=1, le=1_000_000, description="tokens generated per request (the mean, "
                                 "when output_lengths says how they vary)")
    ttft_ms: PositiveFinite = Field(ge=0.01, le=1e8, description="time to first token, milliseconds")
    tpot_ms: PositiveFinite = Field(ge=0.01, le=1e6, description="time per output token, milliseconds")
    slo_percentile: Literal["mean", "p50", "p90", "p99"] = Field(
        default="mean", description="what ttft_ms bounds: the mean TTFT or a percentile (waits included)"
    )
    tpot_percentile: Literal["mean", "p50", "p90", "p99"] = Field(
        default="mean", description="what tpot_ms bounds: the mean TPOT, or a percentile over requests of each "
        "request's TPOT ((end-to-end − TTFT) / (output tokens − 1), as vLLM's and SGLang's benchmark clients "
        "report it): in aggregated serving the share of a request's steps that carry a prompt chunk varies"
    )
    prefix_cached_on_decode: bool = Field(
        default=False, description="the decode side already holds the cached prefix (PD ships only new KV)"
    )
    single_chip_type: bool = Field(
        default=False,
        description="serve the whole class on one chip type (Mélange assigns each request bucket to one GPU type)",
    )
    prefix_reload_gb_per_s: PositiveFinite | None = Field(
        default=None, le=1e7, description="the cached prefix is first read from a KV tier over each chip's link at "
        "this bandwidth: prefix bytes / (chips × bandwidth) + latency is added to the prefill's TTFT")
    prefix_reload_latency_us: NonNegFinite = Field(default=0.0, le=1e8)
    sessions: Sessions | None = Field(
        default=None, description="the calls form agentic sessions: the optimizer chooses where and how long "
        "their KV is retained between calls (:mod:`placement.core.instance.sessions`)")
    prompt_lengths: LengthDistribution | None = Field(
        default=None, description="how prompt lengths vary around prompt_tokens (absent: all the same)")
    output_lengths: LengthDistribution | None = Field(
        default=None, description="how output lengths vary around output_tokens (absent: all the same)")

    @model_validator(mode="after")
    def _means_agree(self) -> TrafficClass:
        """A length's histogram has the class's length as its mean (to a token or 1 %)."""
        for length, shape in (("prompt_tokens", "prompt_lengths"), ("output_tokens", "output_lengths")):
            dist, given = getattr(self, shape), getattr(self, length)
            if dist is not None and dist.histogram is not None:
                mean = float(dist.mean())
                if abs(given - mean) > max(1.0, 0.01 * mean):
                    raise ValueError(f"{length} {given} is not the mean of {shape}.histogram ({mean:.6g} tokens): "
                                     f"set {length} to {round(mean)}")
        return self

    @property
    def ttft_s(self) -> float:
        return self.ttft_ms / 1e3

    @property
    def tpot_s(self) -> float:
        return self.tpot_ms / 1e3

    @property
    def prompt_squared_cv(self) -> float:
        """cv² of the prompt lengths (0: all the same)."""
        return 0.0 if self.prompt_lengths is None else self.prompt_lengths.squared_cv(self.prompt_tokens)

    @property
    def output_squared_cv(self) -> float:
        """cv² of the output lengths (0: all the same)."""
        return 0.0 if self.output_lengths is None else self.output_lengths.squared_cv(self.output_tokens)

    @property
    def output_harmonic_tokens(self) -> float:
        """1/E[1/o]: the harmonic mean of the output lengths (what averages of per-token shares over
        requests weigh; ``output_tokens`` when all are the same)."""
        o = self.output_tokens
        return float(o) if self.output_lengths is None else 1.0 / self.output_lengths.inverse_mean(o)

    def prompt_quantile_ratio(self, q: float) -> float:
        """The prompt length at probability ``q`` over the mean prompt (1 when all prompts are the same)."""
        p = self.prompt_tokens
        return 1.0 if self.prompt_lengths is None else self.prompt_lengths.quantile(p, q) / p


class Workload(Record):
    classes: list[TrafficClass] = Field(min_length=1, max_length=1000)

    @field_validator("classes")
    @classmethod
    def _unique(cls, v: list[TrafficClass]) -> list[TrafficClass]:
        _no_duplicates([c.name for c in v], "class")
        return v


class ModelConfig(Record):
    """A model read from a Hugging Face ``config.json`` (path relative to the instance file) when the instance is
    loaded (:mod:`costmodels.hf_config`); ``name`` defaults to the config's ``_name_or_path`` tail."""

    config: str = Field(min_length=1)
    name: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9_.\-]*$", max_length=64)


class Draft(Record):
    """A draft model for speculative decoding with per-position acceptance.

    ``acceptance_from`` names a published entry of ``costmodels/catalog/speculative.yaml``
    whose acceptance is used when ``acceptance`` is not given (a given list overrides it).
    """

    model: str | ModelSpec
    acceptance: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        min_length=1, max_length=16, description="α_i: probability draft token i is accepted given i-1 were"
    )
    acceptance_from: str | None = Field(default=None, description="a costmodels/catalog/speculative.yaml entry")
    placement: Literal["any", "colocated", "remote"] = "any"

    @model_validator(mode="before")
    @classmethod
    def _acceptance_from_catalogue(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("acceptance_from") is not None and data.get("acceptance") is None:
            from costmodels.speculative import speculative_entry

            try:
                entry = speculative_entry(str(data["acceptance_from"]))
            except KeyError as e:
                raise ValueError(e.args[0]) from None
            data = {**data, "acceptance": list(entry.acceptance)}
        return data

    @property
    def gamma(self) -> int:
        return len(self.acceptance)


class Precision(Record):
    """Weights (and matmuls), KV cache, and the activations the collectives and pools exchange.

    ``weights`` is the FFN's (dense layers and experts); ``attention`` that of the attention projections,
    embeddings and LM head — unset, the weights' precision, except FP4 weights of a model whose published
    FP4 checkpoints keep attention wider (``ModelSpec.fp4_attention_precision``: FP8 for DeepSeek-R1's
    NVFP4, BF16 for gpt-oss's MXFP4). ``fp4`` is NVFP4 (4.5 bits a value); ``mxfp4`` is OCP MXFP4 (4.25
    bits), run at the FP8 rate on chips with FP4 units and at BF16 elsewhere
    (:meth:`topology.chips.ChipSpec.flops`). The attention core (Q·Kᵀ, P·V) runs at ``activations``.
    """

    weights: WeightPrecision = "bf16"
    attention: WeightPrecision | None = Field(
        default=None, description="attention projections' precision (unset: the weights', or the model's FP4 "
                                  "checkpoint attention precision when weights are fp4 or mxfp4)")
    kv: StoragePrecision = "bf16"
    activations: ActivationPrecision = Field(
        default="bf16", description="what engines send between ranks and pools (BF16 even with FP8 weights); "
                                    "the attention core's precision")

    def attention_for(self, model: ModelSpec) -> str:
        """The attention projections' precision for ``model``: as set, else
        :func:`costmodels.models.default_attention_precision`."""
        return self.attention or default_attention_precision(model, self.weights)


#: Most domains one group may have (and so the largest domain index a ``--fail`` range may name, plus one).
MAX_DOMAINS_PER_GROUP = 1_000_000


class DomainGroup(Record):
    """``count`` identical scale-up domains of one chip type hanging off one switch.

    Each domain has an uplink of ``uplink_gb_per_s`` per direction (default:
    chips × the chip's scale-out bandwidth) to ``switch``.
    """

    name: Name
    chip: str
    chips_per_domain: Whole | None = Field(default=None, ge=1, le=100_000)
    count: Whole = Field(ge=1, le=MAX_DOMAINS_PER_GROUP)
    switch: Name | None = None
    uplink_gb_per_s: PositiveFinite | None = Field(default=None, le=1e7)
    uplink_latency_us: NonNegFinite = Field(default=2.0, le=1e6)
    usd_per_hour_per_chip: PositiveFinite | None = Field(default=None, le=1e5, description="overrides the chip's price")
    kv_tiers: list[KvTierSpec] = Field(default_factory=list, max_length=3,
                                       description="KV-cache tiers beside HBM (host memory, flash, remote store)")

    @property
    def uplink_bytes_per_s(self) -> float | None:
        """The stated uplink per direction in bytes/s (None: chips × the chip's scale-out bandwidth)."""
        return None if self.uplink_gb_per_s is None else self.uplink_gb_per_s * 1e9

    @property
    def uplink_latency_s(self) -> float:
        return self.uplink_latency_us * 1e-6


class Link(Record):
    """A full-duplex scale-out link between two switches; bandwidth per direction."""

    source: Name
    target: Name
    bandwidth_gb_per_s: PositiveFinite = Field(le=1e7)
    latency_us: NonNegFinite = Field(default=1.0, le=1e6)

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gb_per_s * 1e9

    @property
    def latency_s(self) -> float:
        return self.latency_us * 1e-6


#: An entry of ``hardware.chips``: a full chip record, or ``base: <chip>`` plus overrides (:mod:`.user_chips`).
UserChipSpec = Annotated[ChipSpec, BeforeValidator(user_chip, json_schema_input_type=UserChip)]


class Hardware(Record):
    chips: list[UserChipSpec] = Field(default_factory=list, description="chip records beyond the catalogue: a full "
                                      "record, or base: <catalogue chip> plus overrides; without sources a chip is "
                                      "uncalibrated")
    domains: list[DomainGroup] = Field(min_length=1, max_length=1000)
    switches: list[Name] = Field(default_factory=list, max_length=10_000)
    links: list[Link] = Field(default_factory=list, max_length=10_000)

    @field_validator("domains")
    @classmethod
    def _unique(cls, v: list[DomainGroup]) -> list[DomainGroup]:
        _no_duplicates([d.name for d in v], "domain group")
        return v

    @field_validator("chips")
    @classmethod
    def _unique_chips(cls, v: list[ChipSpec]) -> list[ChipSpec]:
        _no_duplicates([c.name for c in v], "chip")
        return v


class Limits(Record):
    power_kw: PositiveFinite | None = Field(default=None, le=1e7)
    budget_usd_per_hour: PositiveFinite | None = Field(default=None, le=1e9)
    max_pools_per_stage: int | None = Field(
        default=None, ge=1, le=1000, description="at most this many pools (distinct configurations with load) "
        "per class and stage, so a class is not served by several decode pools of one chip at TP 1, 2 and 4; "
        "None: no limit (see solvers.pool_limit)")

    @property
    def power_w(self) -> float | None:
        """The power cap in watts (None: no cap)."""
        return None if self.power_kw is None else self.power_kw * 1e3


class MeasuredStepTime(Record):
    """A measured step-time table for one chip and layout; it replaces the roofline step of the pools it
    matches (see :mod:`placement.core.replicas.measured_steps`).

    ``stage: decode`` times one decode step of ``batch`` sequences at
    ``context_tokens`` tokens of KV cache each (pd's ``decode`` pools);
    ``stage: prefill`` times one prefill step of ``batch`` prompts of
    ``context_tokens`` new tokens (``prefill`` pools). Without
    ``context_tokens`` the table is one row, taken as measured at every
    context; with it, ``step_time_ms`` has one row per context. ``model``
    (default: the instance's) must be the instance's model.
    """

    chip: str
    model: str | None = None
    stage: Literal["decode", "prefill"] = "decode"
    tp: Whole = Field(default=1, ge=1)
    ep: Whole = Field(default=1, ge=1)
    pp: Whole = Field(default=1, ge=1)
    batch: list[Annotated[Whole, Field(ge=1)]] = Field(min_length=2)
    context_tokens: list[Annotated[Whole, Field(ge=0)]] | None = Field(default=None, min_length=2)
    step_time_ms: list[PositiveFinite] | list[list[PositiveFinite]] = Field(min_length=1)

    @model_validator(mode="after")
    def _same_length(self) -> MeasuredStepTime:
        if sorted(set(self.batch)) != list(self.batch):
            raise ValueError("batch must be strictly increasing")
        rows = self.step_time_ms
        if self.context_tokens is None:
            if any(isinstance(r, list) for r in rows) or len(rows) != len(self.batch):
                raise ValueError("without context_tokens, step_time_ms is one list as long as batch")
            return self
        if sorted(set(self.context_tokens)) != list(self.context_tokens):
            raise ValueError("context_tokens must be strictly increasing")
        if len(rows) != len(self.context_tokens) or any(not isinstance(r, list) or len(r) != len(self.batch)
                                                         for r in rows):
            raise ValueError("with context_tokens, step_time_ms has one row per context, each as long as batch")
        return self

    def step_times_s(self) -> list[list[float]]:
        """The table in seconds, one row per context (a single row without ``context_tokens``)."""
        rows = self.step_time_ms if self.context_tokens is not None else [self.step_time_ms]
        return [[t / 1e3 for t in row] for row in rows]


class Serving(Record):
    """The serving framework the plan is for: its request latency is added to every pool's TTFT.

    ``framework`` names an entry of ``costmodels/catalog/frameworks.yaml`` (:mod:`costmodels.frameworks`);
    ``pooled`` (the default) adds nothing and takes the widest TTFT band. ``max_sequences_per_rank`` replaces
    the framework's default ceiling on a rank's batch (the engine setting the deployment runs); ``max_sequences_per_chip`` bounds the sequences in flight per
    chip whatever the layout (a rank of ``c`` chips holds at most ``floor(c · max_sequences_per_chip)``);
    ``max_pipeline_stages`` bounds every pool's pipeline stages (an attention–FFN pool's FFN half aside); unset,
    each chip's calibrated stages do (:meth:`~placement.core.instance.context.Context.most_pipeline_stages`).
    """

    framework: Framework = Field(default="pooled", description="a costmodels/catalog/frameworks.yaml entry: "
                                 "vllm, trtllm, sglang or pooled (unknown framework)")
    max_sequences_per_rank: int | None = Field(
        default=None, ge=1, le=1_000_000,
        description="sequences one (data-parallel) rank may run at once, in place of the framework's default "
        "ceiling: the engine setting the deployment will use (vLLM --max-num-seqs, SGLang "
        "--max-running-requests, TensorRT-LLM max_batch_size; trtllm-bench sizes offline engines up to 4096), "
        "or the largest batch a capacity plan should rest on (a pool beyond the batches its chip's calibration "
        "measured gets a note)")
    max_sequences_per_chip: float | None = Field(
        default=None, gt=0, le=1_000_000, allow_inf_nan=False,
        description="sequences in flight per chip, whatever the layout: a (data-parallel) rank of c chips "
        "runs at most floor(c x this) at once (at least one). The load a deployment was tested or measured at "
        "(a benchmark's concurrency / its GPUs), so that a plan does not rest on batches nobody ran")
    max_pipeline_stages: int | None = Field(
        default=None, ge=1, le=1024,
        description="the most pipeline stages (pp) a pool may run, e.g. 1 for none: what the deployment's engine "
        "runs. Unset: the stages its chip's calibration measured (calibrated_pipeline_stages: 1 for every GPU, no "
        "measured GPU run used any; 20 for WSE-3, 72 for Groq), raised where a replica spans more scale-up "
        "domains than one; a chip with none calibrated is not limited. Set it higher to let plans use stages that "
        "rest on the step model alone (benchmarks/CAPACITY.md: held out, the planner's pipeline-parallel GPU plans "
        "were 1.23x optimistic, the same points held to one stage 1.01x). "
        "The FFN half of an attention-FFN pool is its own pipeline and is not limited")


class Instance(Record):
    """A placement question: model, traffic, fleet, allowed modes, objective, limits."""

    name: Name
    description: str = ""
    model: str | ModelSpec = Field(description="a catalogue name or Hugging Face id, a model record, or, in a "
                                   "file, {config: path of a Hugging Face config.json} (ModelConfig)")
    draft: Draft | None = None
    precision: Precision = Precision()
    workload: Workload
    hardware: Hardware
    modes: list[Mode] = Field(default_factory=lambda: list(options()), min_length=1)
    objective: ObjectiveName = "cost"
    limits: Limits = Limits()
    measured_capacity: list[MeasuredCapacity] = Field(default_factory=list)
    measured_step_time: list[MeasuredStepTime] = Field(default_factory=list)
    only_measured: bool = Field(
        default=False, description="use measured capacities only (no roofline candidates)"
    )
    serving: Serving = Serving()
    confidence: float | None = Field(
        default=None, gt=0, lt=1, description="plan robustly: every roofline step time is taken at this "
        "quantile of its chip family's held-out error band (costmodels/bands.py); None: the nominal prediction")
    calibration: CalibrationOverlay | str | None = Field(
        default=None, description="a calibration overlay file (placement calibrate), a path relative to the "
        "instance file: the chips it lists take the factors and error bands fitted on your measurements")
    slo_headroom: float = Field(
        default=1.0, gt=0, le=1, allow_inf_nan=False, description="plan to this share of every class's TTFT and "
        "TPOT SLO (0.8: each class planned and checked at 80 % of its SLOs, the plan's SLO fields the tightened "
        "ones); 1: the SLOs as written")
    prices: PriceSetName = Field(
        default=DEFAULT_PRICES, description="the chip price set (topology/catalog/prices.yaml): tco, the owner's "
        "total cost of ownership (the chip catalogue's prices), or on-demand, public cloud rental; prices the "
        "instance writes itself (usd_per_hour_per_chip, its own chips) win over the set")

    def planned(self) -> Instance:
        """The instance as planned: every class's SLOs × ``slo_headroom`` (itself then 1), or this one.

        Examples
        --------
        >>> inst = Instance.model_validate({"name": "t", "model": "llama-3.1-8b", "slo_headroom": 0.8,
        ...     "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": 10, "output_tokens": 10,
        ...                               "ttft_ms": 1000, "tpot_ms": 50}]},
        ...     "hardware": {"domains": [{"name": "h", "chip": "h100", "count": 1}]}})
        >>> c = inst.planned().workload.classes[0]
        >>> c.ttft_ms, c.tpot_ms, inst.planned().slo_headroom
        (800.0, 40.0, 1.0)
        """
        h = self.slo_headroom
        if h == 1.0:
            return self
        classes = [c.model_copy(update={"ttft_ms": c.ttft_ms * h, "tpot_ms": c.tpot_ms * h})
                   for c in self.workload.classes]
        return self.model_copy(update={"slo_headroom": 1.0,
                                       "workload": self.workload.model_copy(update={"classes": classes})})

    @field_validator("calibration")
    @classmethod
    def _overlay_read(cls, v: CalibrationOverlay | str | None) -> CalibrationOverlay | None:
        if isinstance(v, str):  # the loader reads the file a path names; a record built in code has none
            raise ValueError(f"the overlay path {v!r} is read when the instance is loaded from its file "  # noqa: TRY004 - pydantic reports ValueError
                             "(placement.load_instance); here give the overlay's contents")
        return v

    @field_validator("modes")
    @classmethod
    def _unique_modes(cls, v: list[str]) -> list[str]:
        _no_duplicates(v, "mode")
        return v


def _no_duplicates(names: list[str], what: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise ValueError(f"duplicate {what} name {n!r}; names must be unique")
        seen.add(n)

