"""Performance of one pool configuration for one traffic class, from the cost models.

A *pool* is a set of identical replicas serving one stage of one class. This
module answers, for a configuration and a class: how many requests/s one
replica sustains while meeting the class's SLOs, with which TTFT/TPOT, and
whether it fits in memory. Candidate generation calls it over a grid of
batches (numpy-vectorised); the verifier calls it again for the configuration a
plan names — the same physics, independent of the MILP.

Each kind of replica (``prefill``, ``decode``, ``aggregated``, ``decode-spec``,
``decode-af``, ``measured``) is evaluated by the serving mode that defines it
(:mod:`placement.modes`), where its capacity rule is written down; this module
holds the records they share, the rules common to several kinds and the one
entry point, :func:`evaluate`.

Many configurations at once. The cost models are elementwise over numpy
arrays, layouts included (:class:`Layouts`), so the configurations of one kind,
chip and class can be evaluated as one broadcast over their concatenated
points, each point's floats those of its configuration evaluated alone (same
formulas, same operation order per element). :func:`evaluate_many` does this
for the kinds whose record carries a broadcast evaluator (``PoolKind.evaluate_many``);
with a memo kept across calls (:func:`shared_memo`), the prefill, decode and
aggregated kinds evaluate every grid of a class on a resource in one
broadcast when the first is asked for, and read the others from the table.

Queueing: :mod:`placement.core.replicas.queues` (the TTFT budget, each queue's capacity and waits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import AfterValidator, Field, model_validator

from placement.core.modes.registry import check_kind, pool_kind
from topology.records import Record

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from placement.core.instance.schema import TrafficClass

__all__ = [
    "Kind",
    "Layouts",
    "PartLayout",
    "Perf",
    "PoolConfig",
    "banded_step_s",
    "broadcast_perf",
    "class_table",
    "decode_context_tokens",
    "engine_admits",
    "evaluate",
    "evaluate_many",
    "framework_latency_s",
    "layout_args",
    "max_context_tokens",
    "max_sequences_per_rank",
    "memory_args",
    "on_grid",
    "precision_args",
    "prefix_reload_link_s",
    "prefix_reload_s",
    "rank_sequence_ceiling",
    "shared_memo",
    "split_perf",
    "step_factor",
]

#: A kind of replica registered by a serving mode (:func:`placement.core.modes.registry.pool_kind`).
Kind = Annotated[str, AfterValidator(check_kind)]




class PartLayout(Record):
    """Chips of one type forming one replica (or one half of a paired replica).

    ``chips = dp·tp·pp``. In a decode or aggregated replica ``dp`` is
    data-parallel attention: each pipeline stage has ``dp`` attention groups of
    ``tp`` chips sharing the replica's batch, the routed experts spread over
    ``ep`` ranks of the stage's dp·tp chips (:mod:`costmodels.roofline`). In
    the attention half of an attention–FFN replica, ``dp`` groups of ``tp``
    chips each run their own batch and feed one FFN group (MegaScale-Infer's
    M:N ratio).
    """

    chip: str
    site_resource: str = Field(description="chip@domain size, the solver's resource type")
    chips: int = Field(ge=1)
    tp: int = Field(ge=1)
    ep: int = Field(ge=1)
    pp: int = Field(ge=1)
    dp: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _chips_add_up(self) -> PartLayout:
        if self.chips != self.dp * self.tp * self.pp:
            raise ValueError(f"chips ({self.chips}) must equal dp·tp·pp ({self.dp}·{self.tp}·{self.pp})")
        return self


class PoolConfig(Record):
    """What one replica of a pool is; enough to re-evaluate it from the cost models."""

    kind: Kind
    traffic_class: str
    main: PartLayout = Field(description="prefill/decode/target/attention chips")
    partner: PartLayout | None = Field(default=None, description="FFN half (decode-af) or remote draft (decode-spec)")
    batch: int = Field(ge=1)
    chunk_tokens: int | None = None
    micro_batches: int = 1
    draft_tokens: int | None = Field(default=None, ge=1, description="γ, draft tokens per verify (decode-spec)")
    measured_rps: float | None = None


@dataclass(frozen=True)
class Perf:
    """Arrays over the batch grid (or scalars): per-replica capacity and latencies."""

    capacity_rps: np.ndarray
    ttft_s: np.ndarray
    tpot_s: np.ndarray
    fits: np.ndarray
    pair_bytes_per_s: np.ndarray
    memory_per_chip_bytes: np.ndarray

    def ok(self, cls: TrafficClass) -> np.ndarray:
        """Meets the class's SLOs, fits in memory, and serves something."""
        return (
            self.fits
            & (self.capacity_rps > 0)
            & (self.tpot_s <= cls.tpot_s * (1 + 1e-9))
            & (self.ttft_s <= cls.ttft_s * (1 + 1e-9))
        )


@dataclass(frozen=True)
class Layouts:
    """The layout numbers of parts (:class:`PartLayout`'s tp, ep, pp, dp and chips) as the cost models take
    them: one part's integers (:meth:`of`), or float arrays with one entry per evaluated point
    (:meth:`repeated`), which every cost model broadcasts over elementwise.

    Examples
    --------
    >>> a = PartLayout(chip="h100", site_resource="h100@8", chips=8, tp=8, ep=1, pp=1)
    >>> b = PartLayout(chip="h100", site_resource="h100@8", chips=16, tp=8, ep=8, pp=2)
    >>> Layouts.repeated([a, b], [2, 1]).pp.tolist(), Layouts.of(b).args()
    ([1.0, 1.0, 2.0], {'tp': 8, 'ep': 8, 'pp': 2})
    """

    tp: int | np.ndarray
    ep: int | np.ndarray
    pp: int | np.ndarray
    dp: int | np.ndarray
    chips: int | np.ndarray

    @classmethod
    def of(cls, part: PartLayout) -> Layouts:
        """One part's numbers, as :func:`layout_args` gives them."""
        return cls(part.tp, part.ep, part.pp, part.dp, part.chips)

    @classmethod
    def repeated(cls, parts: list[PartLayout], counts: list[int]) -> Layouts:
        """Each part's numbers ``counts`` times over (whole numbers, exact as floats)."""
        numbers = np.array([[p.tp, p.ep, p.pp, p.dp, p.chips] for p in parts], dtype=float).reshape(-1, 5)
        return cls(*np.ascontiguousarray(np.repeat(numbers, counts, axis=0).T))

    def args(self) -> dict:
        """The cost models' layout keywords (``dp`` is passed by the kinds that share a batch over it)."""
        return {"tp": self.tp, "ep": self.ep, "pp": self.pp}


def layout_args(part: PartLayout) -> dict:
    """The cost models' layout keywords of a part (``dp`` is passed by the kinds that share a batch over it)."""
    return {"tp": part.tp, "ep": part.ep, "pp": part.pp}


def precision_args(ctx: Context) -> dict:
    """The cost models' precision keywords of the instance (the attention projections' resolved for its model)."""
    p = ctx.instance.precision
    return {"precision": p.weights, "kv_precision": p.kv,
            "attention_precision": p.attention_for(ctx.model)}


def memory_args(ctx: Context) -> dict:
    """The memory model's keywords: the precisions and the serving engine's workspace
    (``costmodels/catalog/frameworks.yaml``)."""
    from costmodels.frameworks import framework_entry

    engine = framework_entry(ctx.instance.serving.framework)
    return {**precision_args(ctx), "workspace_fraction": engine.workspace_fraction,
            "workspace_of_free": engine.workspace_of_free}


def step_precision_args(ctx: Context) -> dict:
    """The step models' precision keywords: also the precision activations travel in."""
    return {**precision_args(ctx), "activation_precision": ctx.instance.precision.activations}


def step_factor(ctx: Context, part: PartLayout, stage: str) -> float:
    """What a roofline ``stage`` step time on ``part`` is multiplied by: the pessimistic error-band factor
    at the instance's ``confidence`` (:func:`costmodels.bands.step_factor`; a chip of the calibration overlay
    at the overlay's band), 1 without one. A prefill step
    on a calibrated chip of an instance naming its serving framework takes that framework's TTFT band
    (the residuals of the model that knows the framework); an uncalibrated chip keeps its wider band."""
    from costmodels.bands import stage_metric
    from placement.core.instance.calibration_overlay import overlay_band

    if ctx.instance.confidence is None:
        return 1.0
    if (own := overlay_band(ctx.instance.calibration, part.chip)) is not None:  # the user's measurements first
        return own.factor(stage_metric(stage), ctx.instance.confidence)
    if (stage == "prefill" and (f := _framework_ttft_factor(ctx)) is not None
            and ctx.band(part.chip).family != "uncalibrated"):
        return f
    return ctx.band(part.chip).factor(stage_metric(stage), ctx.instance.confidence)


def banded_step_s(ctx: Context, part: PartLayout, stage: str, step) -> np.ndarray:
    """A roofline step's time at the instance's confidence: ``max(time_s · factor, floor_s)``.

    The band's low quantiles are below 1 (measurements faster than predicted); a step scaled by one never
    goes below its physical floor (``StepCost.floor_s``: the step's FLOPs and bytes at the chips' peaks).
    """
    t = np.asarray(step.time_s, dtype=float) * step_factor(ctx, part, stage)
    return np.maximum(t, np.asarray(step.floor_s, dtype=float))


def _framework_ttft_factor(ctx: Context) -> float | None:
    """The named framework's TTFT band factor at the instance's confidence (None: no confidence, or no band)."""
    from costmodels.bands import framework_band, interpolate_quantile

    if ctx.instance.confidence is None or (band := framework_band(ctx.instance.serving.framework)) is None:
        return None
    return interpolate_quantile(*band, ctx.instance.confidence)


def decode_context_tokens(cls: TrafficClass) -> float:
    """Mean context of a decode slot: prefix + prompt + half the output of the request holding it.

    A slot is held for o steps, so the request in a slot at a random step is drawn in proportion
    to its output (length-biased): its output is E[o²]/E[o] = ō(1 + cv_o²), and the mean context
    over slot-steps is c + p̄ + ō(1 + cv_o²)/2 (prompt and output independent) — c + p + o/2 when
    every request is the same.

    Examples
    --------
    >>> from placement.core.instance.schema import TrafficClass
    >>> base = dict(name="c", rate_rps=1, prompt_tokens=1000, output_tokens=200, ttft_ms=1000, tpot_ms=50)
    >>> decode_context_tokens(TrafficClass(**base)), decode_context_tokens(TrafficClass(**base, output_lengths={"cv": 1}))
    (1100.0, 1200.0)
    """
    return cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens * (1.0 + cls.output_squared_cv) / 2


def max_context_tokens(cls: TrafficClass) -> float:
    """Context at the last output token of the request holding a slot (what its KV cache reserves):
    c + p̄ + ō(1 + cv_o²), length-biased as in :func:`decode_context_tokens`."""
    return float(cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens * (1.0 + cls.output_squared_cv))


def max_sequences_per_rank(ctx: Context) -> int:
    """The serving engine's ceiling on the sequences one (data-parallel) rank runs at once: the instance's
    ``serving.max_sequences_per_rank`` (the deployment's ``max_num_seqs`` / ``max_batch_size`` /
    ``max_running_requests``, lower or higher than the default), else the engine's default
    (``costmodels/catalog/frameworks.yaml``, with sources; ``pooled``: vLLM's).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> max_sequences_per_rank(NS(instance=NS(serving=NS(framework="trtllm", max_sequences_per_rank=None))))
    2048
    >>> [max_sequences_per_rank(NS(instance=NS(serving=NS(framework="trtllm", max_sequences_per_rank=n))))
    ...  for n in (64, 4096)]
    [64, 4096]
    """
    from costmodels.frameworks import framework_entry

    serving = ctx.instance.serving
    cap = framework_entry(serving.framework).max_sequences_per_rank
    return cap if serving.max_sequences_per_rank is None else serving.max_sequences_per_rank


def rank_sequence_ceiling(ctx: Context, chips_per_rank) -> np.ndarray:
    """The sequences one rank of ``chips_per_rank`` chips may run at once::

        ceiling = min(max_sequences_per_rank(ctx), max(1, floor(c · serving.max_sequences_per_chip)))

    (the second term only when the instance sets ``max_sequences_per_chip``).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> ctx = NS(instance=NS(serving=NS(framework="vllm", max_sequences_per_rank=None, max_sequences_per_chip=4)))
    >>> rank_sequence_ceiling(ctx, np.array([1, 2, 8])).tolist()
    [4.0, 8.0, 32.0]
    >>> ctx.instance.serving.max_sequences_per_chip = None
    >>> float(rank_sequence_ceiling(ctx, 8))
    1024.0
    """
    cap = float(max_sequences_per_rank(ctx))
    per_chip = ctx.instance.serving.max_sequences_per_chip
    chips = np.asarray(chips_per_rank, dtype=float)
    if per_chip is None:
        return np.full(chips.shape, cap)
    # 1e-9: a product such as 8 x 0.125 must floor to 1, not to 0.999999...
    return np.minimum(cap, np.maximum(1.0, np.floor(chips * per_chip + 1e-9)))


def engine_admits(ctx: Context, sequences_per_rank, chips_per_rank=1) -> np.ndarray:
    """Whether each batch of ``sequences_per_rank`` sequences on one rank of ``chips_per_rank`` chips is within
    the engine's ceiling (:func:`rank_sequence_ceiling`).

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> ctx = NS(instance=NS(serving=NS(framework="vllm", max_sequences_per_rank=None, max_sequences_per_chip=None)))
    >>> engine_admits(ctx, np.array([512.0, 1024.0, 1025.0])).tolist()
    [True, True, False]
    """
    return np.asarray(sequences_per_rank, dtype=float) <= rank_sequence_ceiling(ctx, chips_per_rank)


def framework_latency_s(ctx: Context, chip: str | None = None) -> float:
    """The serving framework's request latency (s) every prompt pays before its first token.

    The instance's ``serving.framework`` entry of ``costmodels/catalog/frameworks.yaml``
    (:mod:`costmodels.frameworks`), or on ``chip`` the calibration overlay's refit of it; 0 for ``pooled``
    (no framework named). Added to the prefill latency
    of prefill and aggregated pools, so it both raises their TTFT and shrinks the SLO budget left for
    queueing. With a ``confidence``, taken at that quantile of the framework's TTFT band, as prefill steps are.
    """
    from costmodels.frameworks import framework_entry
    from placement.core.instance.calibration_overlay import overlay_framework_latency_s

    name = ctx.instance.serving.framework
    own = overlay_framework_latency_s(ctx.instance.calibration, name, chip)
    latency_s = framework_entry(name).ttft_request_latency_s if own is None else own
    factor = _framework_ttft_factor(ctx)
    return latency_s if factor is None else latency_s * factor


def prefix_reload_s(ctx: Context, cls: TrafficClass, chips: int, batch=1.0) -> np.ndarray:
    """Seconds to read ``batch`` requests' cached prefixes from a KV tier (0 when the class reloads none).

    Each chip of the replica reads its shard of the prefix over its own link to the tier, so one prefix of
    K bytes takes latency + K / (chips × bandwidth); a step of b prompts reads b of them.
    """
    b = np.asarray(batch, dtype=float)
    if cls.prefix_reload_gb_per_s is None or cls.cached_prefix_tokens == 0:
        return np.zeros(b.shape)
    return cls.prefix_reload_latency_us * 1e-6 + prefix_reload_link_s(ctx, cls, chips, b)


def prefix_reload_link_s(ctx: Context, cls: TrafficClass, chips, batch=1.0) -> np.ndarray:
    """Seconds the replica's links to the KV tier are busy reading ``batch`` prefixes: b·K / (chips × bandwidth)
    (0 when the class reloads none).

    The links are a server of their own: a replica admits prompts no faster than its links read their
    prefixes, so a prefill step's interval is at least this (``pd``, ``aggregated``) and a replica's rate
    at most chips × bandwidth / K. 4 H100 at 7 GB/s each and 1.3 GB prefixes: ≤ 21.5 prompts/s.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> ctx = NS(model=None, instance=NS(precision=NS(kv="fp8")))
    >>> float(prefix_reload_link_s(ctx, NS(prefix_reload_gb_per_s=None, cached_prefix_tokens=0), 4))
    0.0
    """
    b = np.asarray(batch, dtype=float)
    if cls.prefix_reload_gb_per_s is None or cls.cached_prefix_tokens == 0:
        return np.zeros(b.shape)
    from costmodels import kv_transfer_bytes

    prefix = float(kv_transfer_bytes(ctx.model, 0, cls.cached_prefix_tokens, ctx.instance.precision.kv))
    return b * prefix / (np.asarray(chips, dtype=float) * cls.prefix_reload_gb_per_s * 1e9)


class _Scratch(dict):
    """The memo of one :func:`evaluate` call made without one: nothing in it serves a later call."""


def shared_memo(memo: dict) -> bool:
    """Whether ``memo`` is kept by the caller across evaluations (not :func:`evaluate`'s own for one call),
    so that a table for the calls to come is worth building in it.

    Examples
    --------
    >>> shared_memo({}), shared_memo(_Scratch())
    (True, False)
    """
    return not isinstance(memo, _Scratch)


def class_table(memo: dict, key: tuple, cls: TrafficClass, build: Callable[[], dict]) -> dict:
    """The table ``memo`` keeps under ``key`` for ``cls`` (classes are records holding dicts, not
    hashable: the table is kept with its class, and built by ``build()`` when absent or of another class).

    Examples
    --------
    >>> memo = {}
    >>> class_table(memo, ("t",), "a", lambda: {1: 2}), class_table(memo, ("t",), "b", lambda: {3: 4})
    ({1: 2}, {3: 4})
    """
    found = memo.get(key)
    if found is None or (found[0] is not cls and found[0] != cls):
        found = memo[key] = (cls, build())
    return found[1]


def on_grid(memo: dict, b: np.ndarray, grid: np.ndarray) -> bool:
    """Whether an evaluation over batches ``b`` may come from a table of ``grid`` kept in ``memo``
    (:func:`shared_memo`, and ``b`` is that grid).

    Examples
    --------
    >>> on_grid({}, np.arange(3.0), np.arange(3.0)), on_grid({}, np.arange(2.0), np.arange(3.0))
    (True, False)
    """
    return shared_memo(memo) and b.shape == grid.shape and bool(np.array_equal(b, grid))


def broadcast_perf(rule: Callable[..., Perf], ctx: Context, cfgs: list[PoolConfig], cls: TrafficClass,
                   batches: list[np.ndarray], *per_config: list[float]) -> list[Perf]:
    """``rule(ctx, main part, cls, layouts, *per-point values, batches)`` of configurations on one chip, each
    over its batches, in one broadcast: every configuration's layouts and ``per_config`` values repeated
    over its points (elementwise rules give each point its configuration's floats alone)."""
    counts = [len(x) for x in batches]
    values = [np.repeat(np.array(v, dtype=float), counts) for v in per_config]
    perf = rule(ctx, cfgs[0].main, cls, Layouts.repeated([c.main for c in cfgs], counts), *values,
                np.concatenate(batches))
    return split_perf(perf, counts)


def split_perf(perf: Perf, counts: list[int]) -> list[Perf]:
    """The consecutive pieces of ``counts`` points of a flat ``perf`` (views, not copies).

    Examples
    --------
    >>> z = np.arange(3.0)
    >>> [p.capacity_rps.tolist() for p in split_perf(Perf(z, z, z, z > 0, z, z), [1, 2])]
    [[0.0], [1.0, 2.0]]
    """
    ends = np.cumsum(counts).tolist()
    arrays = [np.asarray(getattr(perf, f.name)) for f in fields(Perf)]
    return [Perf(*(a[e - n:e] for a in arrays)) for n, e in zip(counts, ends, strict=True)]


def evaluate_many(ctx: Context, cfgs: list[PoolConfig], cls: TrafficClass, batches: list[np.ndarray],
                  pair_latency_s: float = 0.0, memo: dict | None = None) -> list[Perf]:
    """:func:`evaluate` of every configuration of ``cfgs`` over its 1-D ``batches``, bit for bit.

    The single-part configurations of a kind with an ``evaluate_many`` (its
    :class:`~placement.core.modes.base.PoolKind`) are evaluated one broadcast per (kind, main chip); the others
    one by one.
    """
    out: list[Perf | None] = [None] * len(cfgs)
    groups: dict[tuple[str, str], list[int]] = {}
    for i, cfg in enumerate(cfgs):
        if cfg.partner is None and pool_kind(cfg.kind).evaluate_many is not None:
            groups.setdefault((cfg.kind, cfg.main.chip), []).append(i)
        else:
            out[i] = evaluate(ctx, cfg, cls, batch=batches[i], pair_latency_s=pair_latency_s, memo=memo)
    for (kind, _), idx in groups.items():
        perfs = pool_kind(kind).evaluate_many(ctx, [cfgs[i] for i in idx], cls,
                                      [np.asarray(batches[i], dtype=float) for i in idx])
        for i, perf in zip(idx, perfs, strict=True):
            out[i] = perf
    return out


def evaluate(ctx: Context, cfg: PoolConfig, cls: TrafficClass, batch=None, pair_latency_s: float = 0.0,
             memo: dict | None = None) -> Perf:
    """Per-replica capacity and latencies of ``cfg`` for ``cls``, by the function of its kind.

    ``batch`` (array) overrides ``cfg.batch`` to evaluate a grid at once;
    ``pair_latency_s`` is the one-way latency between the two parts of a paired
    configuration (attention–FFN or remote draft). ``memo``, a dict kept by
    the caller for one context, caches results that several configurations
    share (the halves of attention–FFN replicas).
    """
    b = np.asarray(cfg.batch if batch is None else batch, dtype=float)
    return pool_kind(cfg.kind).evaluate(ctx, cfg, cls, b, pair_latency_s, _Scratch() if memo is None else memo)
