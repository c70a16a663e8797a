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

Queueing rule shared by prefill and aggregated serving (M/D/1 per replica):
with service time S and a fixed latency L before the first token,
TTFT = W_q + L ≤ SLO ⇒ ρ ≤ 2R/(2R + S), R = SLO − (L − S);
capacity = min(ρ, ρ_max)·batch/S.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import AfterValidator, Field, model_validator

from costmodels import md1_max_utilisation
from topology.records import Record

if TYPE_CHECKING:
    from placement.core.context import Context
    from placement.core.schema import TrafficClass

__all__ = [
    "MAX_UTILISATION",
    "Kind",
    "PartLayout",
    "Perf",
    "PoolConfig",
    "decode_context_tokens",
    "evaluate",
    "layout_args",
    "max_context_tokens",
    "md1_capacity",
    "precision_args",
]

#: Ceiling on a prefill server's utilisation whatever the M/D/1 bound allows:
#: arrivals are burstier than Poisson in practice and the bound → 1 as SLO → ∞.
MAX_UTILISATION = 0.9


def _registered_kind(kind: str) -> str:
    # The modes import this module, so the registry is looked up when used.
    from placement.modes import check_kind

    return check_kind(kind)


#: A kind of replica registered by a serving mode (:func:`placement.modes.pool_kind`).
Kind = Annotated[str, AfterValidator(_registered_kind)]




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


def layout_args(part: PartLayout) -> dict:
    """The cost models' layout keywords of a part (``dp`` is passed by the kinds that share a batch over it)."""
    return {"tp": part.tp, "ep": part.ep, "pp": part.pp}


def precision_args(ctx: Context) -> dict:
    """The cost models' precision keywords of the instance."""
    p = ctx.instance.precision
    return {"precision": p.weights, "kv_precision": p.kv}


def step_precision_args(ctx: Context) -> dict:
    """The step models' precision keywords: also the precision activations travel in."""
    return {**precision_args(ctx), "activation_precision": ctx.instance.precision.activations}


def decode_context_tokens(cls: TrafficClass) -> float:
    """Mean context while decoding: prefix + prompt + half the output."""
    return cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens / 2


def max_context_tokens(cls: TrafficClass) -> float:
    """Context at the last output token (what the KV cache must hold)."""
    return float(cls.cached_prefix_tokens + cls.prompt_tokens + cls.output_tokens)


def md1_capacity(service_s, latency_s, slo_s, batch) -> np.ndarray:
    """ρ·batch/S with ρ from M/D/1 on the time left after the fixed latency.

    Examples
    --------
    >>> float(md1_capacity(1.0, 1.0, 100.0, 1.0))  # a long SLO: capped at MAX_UTILISATION
    0.9
    >>> float(md1_capacity(1.0, 2.0, 1.5, 1.0))    # the fixed latency alone misses the SLO
    0.0
    """
    service_s = np.asarray(service_s, dtype=float)
    slack = np.asarray(slo_s - (latency_s - service_s), dtype=float)  # time the queue + service may use
    rho = np.minimum(md1_max_utilisation(service_s, slack), MAX_UTILISATION)
    return np.where(slack > service_s, rho * batch / service_s, 0.0)


def evaluate(ctx: Context, cfg: PoolConfig, cls: TrafficClass, batch=None, pair_latency_s: float = 0.0,
             memo: dict | None = None) -> Perf:
    """Per-replica capacity and latencies of ``cfg`` for ``cls``, by the function of its kind.

    ``batch`` (array) overrides ``cfg.batch`` to evaluate a grid at once;
    ``pair_latency_s`` is the one-way latency between the two parts of a paired
    configuration (attention–FFN or remote draft). ``memo``, a dict kept by
    the caller for one context, caches results that several configurations
    share (the halves of attention–FFN replicas).
    """
    from placement.modes import pool_kind  # imported here: the modes import this module

    b = np.asarray(cfg.batch if batch is None else batch, dtype=float)
    return pool_kind(cfg.kind).evaluate(ctx, cfg, cls, b, pair_latency_s, {} if memo is None else memo)
