"""Chip records: what one accelerator can do, in base units, with sources.

A chip is data, never a subclass: :class:`ChipSpec` is a pydantic record loaded
from ``topology/catalog/chips.yaml`` (shipped) or from a user's own catalogue or
instance file. Every number carries a source in ``sources`` (field name ->
reference); fields whose value is an estimate are listed in ``estimates``.

Examples
--------
>>> from topology.chips import load_chip_catalog
>>> h100 = load_chip_catalog()["h100"]
>>> round(h100.ridge_flop_per_byte("bf16"))
295
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, Field, model_validator

from topology.records import Record, read_catalog_yaml

__all__ = [
    "ALL_REDUCE_ALGORITHMS",
    "BYTES_PER_VALUE",
    "OPERATING_POINT_FIELDS",
    "OPTIONAL_SOURCED_FIELDS",
    "PRECISIONS",
    "SOURCED_FIELDS",
    "WEIGHT_PRECISIONS",
    "ChipSpec",
    "MemoryTier",
    "Precision",
    "load_chip_catalog",
    "read_chip_file",
    "read_records",
]

Precision = Literal["fp4", "fp8", "bf16"]
#: The tensor rates a chip lists (``flops_per_s`` keys), narrowest first.
PRECISIONS: tuple[str, ...] = ("fp4", "fp8", "bf16")
#: Formats weights may be stored in: the rates' names, and MXFP4 (which has no rate of its own).
WEIGHT_PRECISIONS: tuple[str, ...] = ("fp4", "mxfp4", "fp8", "bf16")
#: Bytes per stored value for weights / KV / activations at each precision, block scales included. ``fp4`` is
#: NVFP4: two E2M1 values a byte plus one FP8 (E4M3) scale per 16 values, 4.5 bits (TensorRT-LLM tech blog
#: 18 counts 4,032 B for a 7,168-wide token: 3,584 + 448). ``mxfp4`` (OCP Microscaling: one E8M0 scale per
#: 32 values, 4.25 bits) is gpt-oss's expert format. FP8 weights carry one FP32 scale per 128 × 128 block
#: (4 B per 16,384 values, 0.024 %: left out).
BYTES_PER_VALUE: dict[str, float] = {"fp4": 0.5625, "mxfp4": 0.53125, "fp8": 1.0, "bf16": 2.0}

#: All-reduce algorithms a chip's fabrics may offer beyond the ring (costmodels.collectives):
#: ``one-shot``/``two-shot`` need load/store access to every peer of the scale-up domain,
#: ``nvls`` is in-switch reduction in the scale-up switches (NVLink SHARP), ``sharp`` in the
#: InfiniBand scale-out switches.
AllReduceAlgorithm = Literal["one-shot", "two-shot", "nvls", "sharp"]
ALL_REDUCE_ALGORITHMS: tuple[str, ...] = ("one-shot", "two-shot", "nvls", "sharp")

# Physical ranges of a chip's numbers, far beyond any chip built or announced (WSE-3: 44 GB of SRAM at
# 21 PB/s, 125 PFLOP/s): a value outside is a typo or a unit slip, and a value near the float limits
# (1e-300 bytes) would overflow the cost models' arithmetic.
Bytes = Annotated[float, Field(ge=1e3, le=1e18, description="bytes (1 kB … 1 EB)")]
BytesPerS = Annotated[float, Field(ge=1e3, le=1e18, description="bytes/s (1 kB/s … 1 EB/s)")]
FlopsPerS = Annotated[float, Field(ge=1e6, le=1e21, description="FLOP/s (1 MFLOP/s … 1 ZFLOP/s)")]

CATALOG_PATH = Path(__file__).with_name("catalog") / "chips.yaml"
R = TypeVar("R", bound=BaseModel)




class MemoryTier(Record):
    """One level of a chip's memory: capacity and achievable peak bandwidth.

    The first tier of a chip is its working memory: weights and KV cache of the
    stages placed on it must fit there (SRAM for SRAM-only chips).
    """

    name: str = Field(description="e.g. HBM3e, SRAM, LPDDR5X, host DDR")
    capacity_bytes: Bytes
    bandwidth_bytes_per_s: BytesPerS


class ChipSpec(Record):
    """One accelerator type: compute, memory tiers, fabric, power and price.

    Attributes
    ----------
    flops_per_s
        Dense peak FLOP/s per precision (``bf16``, ``fp8``, ``fp4``); a
        precision the chip lacks is absent.
    memory
        Memory tiers, working tier first.
    scale_up_domain_chips
        Largest scale-up domain (NVLink, NeuronLink, C2C) this chip is sold in.
    scale_up_bandwidth_bytes_per_s
        Per chip, per direction, over the scale-up fabric.
    scale_out_bandwidth_bytes_per_s
        Per chip, per direction, over the scale-out NICs.
    compute_efficiency, memory_efficiency
        Achievable fractions of peak FLOP/s and of working-tier bandwidth.
    kv_memory_efficiency
        Achievable fraction of working-tier bandwidth for the attention kernels' KV-cache reads (paged,
        per-sequence blocks); unset: ``memory_efficiency``.
    step_overhead_s
        Fixed framework time added to every forward step (scheduling, sampling, sync).
    sequence_overhead_s
        Host time per sequence per step (:mod:`costmodels.efficiency`); unset: the prior there.
    memory_half_bytes, compute_half_tokens, layer_overhead_s
        Operating-point terms (:mod:`costmodels.efficiency`): bytes per chip per
        step at which achieved bandwidth is half of ``BW·η_m``; GEMM rows
        (tokens per micro-batch) at which compute is half of ``F·η_c``; kernel
        launch time per layer. 0 = the flat model. A non-zero value needs a source.
    alltoall_floor_s, alltoall_efficiency
        The expert all-to-all kernels' floor per phase and bandwidth fraction on the scale-up fabric
        (:func:`costmodels.comm.ep_alltoall_s`); unset: the published HGX-NVLink defaults there.
    allreduce_efficiency
        Achieved fraction of the modelled tensor-parallel all-reduce speed in
        serving (:func:`costmodels.comm.tp_allreduce_s` divides by it); 1 = the
        microbenchmark model. A value below 1 needs a source.
    calibration, heldout_tpot_error, calibrated_batch_per_rank, calibrated_pipeline_stages
        ``calibrated`` when the efficiency fields were fitted to public
        measurements (``benchmarks/CALIBRATION.md``), else ``uncalibrated``;
        the median absolute held-out TPOT error of that fit (fraction); the
        least and most sequences per rank the fit's measurements ran (plans beyond
        them are noted as extrapolating).
    all_reduce_algorithms
        All-reduce algorithms the fabrics offer beyond the ring
        (:data:`ALL_REDUCE_ALGORITHMS`); a non-empty list needs a source.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_.\-]*$")
    display_name: str
    vendor: str
    kind: Literal["gpu", "lpu", "wafer", "asic", "lpddr", "cpu"]
    flops_per_s: dict[Precision, FlopsPerS] = Field(min_length=1)
    memory: list[MemoryTier] = Field(min_length=1)
    sram_only: bool = False
    scale_up_domain_chips: int = Field(ge=1)
    scale_up_bandwidth_bytes_per_s: BytesPerS
    scale_up_latency_s: float = Field(ge=0, le=1.0)
    scale_out_bandwidth_bytes_per_s: BytesPerS
    power_w: float = Field(gt=0, le=1e9)
    usd_per_hour: float = Field(gt=0, le=1e9)
    price_basis: str = Field(description="what the hourly price means: rental median, TCO, amortised list price")
    compute_efficiency: float = Field(gt=0, le=1)
    memory_efficiency: float = Field(gt=0, le=1)
    kv_memory_efficiency: float | None = Field(default=None, gt=0, le=1, description="fraction of the working "
                                               "tier's bandwidth KV-cache reads reach (default: memory_efficiency)")
    step_overhead_s: float = Field(ge=0, le=10.0)
    memory_half_bytes: float = Field(default=0.0, ge=0, le=1e18)
    compute_half_tokens: float = Field(default=0.0, ge=0, le=1e9)
    layer_overhead_s: float = Field(default=0.0, ge=0, le=1.0)
    sequence_overhead_s: float | None = Field(default=None, ge=0, le=1e-2, description="host time per sequence per "
                                              "step, run beside the device step: a step takes max(device, B·h) "
                                              "(default: costmodels.efficiency.DEFAULT_SEQUENCE_OVERHEAD_S)")
    allreduce_efficiency: float = Field(default=1.0, gt=0, le=1)
    alltoall_floor_s: float | None = Field(default=None, ge=0, le=1e-2, description="scale-up expert all-to-all "
                                           "kernel time per phase no message goes below (default: costmodels.comm)")
    alltoall_efficiency: float | None = Field(default=None, gt=0, le=1, description="fraction of the scale-up "
                                              "bandwidth an expert all-to-all's logical bytes move at")
    calibration: Literal["calibrated", "uncalibrated"] = "uncalibrated"
    heldout_tpot_error: float | None = Field(default=None, ge=0)
    calibrated_batch_per_rank: tuple[float, float] | None = Field(
        default=None, description="the least and most sequences per rank (attention data-parallel group) among the "
        "measurements the factors were fitted on: a plan beyond them extrapolates")
    calibrated_pipeline_stages: int | None = Field(
        default=None, ge=1, description="the most pipeline stages among the measurements the factors were fitted on "
        "(1: none used any): a plan with more rests on the step model's stage hand-offs and bubbles alone")
    all_reduce_algorithms: list[AllReduceAlgorithm] = Field(
        default_factory=list, description="all-reduce algorithms the fabrics offer beyond the ring")
    sources: dict[str, str] = Field(description="field name -> public source of its value")
    estimates: list[str] = Field(default_factory=list, description="fields whose value is an estimate")

    @model_validator(mode="after")
    def _every_number_has_a_source(self) -> ChipSpec:
        missing = [f for f in SOURCED_FIELDS if f not in self.sources]
        if self.all_reduce_algorithms and "all_reduce_algorithms" not in self.sources:
            missing.append("all_reduce_algorithms")
        missing += [f for f in OPERATING_POINT_FIELDS if getattr(self, f) and f not in self.sources]
        if self.allreduce_efficiency != 1.0 and "allreduce_efficiency" not in self.sources:
            missing.append("allreduce_efficiency")
        missing += [f for f in OPTIONAL_SOURCED_FIELDS if getattr(self, f) is not None and f not in self.sources]
        if self.calibration == "calibrated" and "calibration" not in self.sources:
            missing.append("calibration")
        if missing:
            raise ValueError(f"chip {self.name!r}: no source given for {', '.join(missing)}")
        unknown = [f for f in self.estimates if f not in type(self).model_fields]
        if unknown:
            raise ValueError(f"chip {self.name!r}: estimates names unknown fields {unknown}")
        return self

    # ---- derived quantities -------------------------------------------------
    @property
    def memory_bytes(self) -> float:
        """Capacity of the working tier."""
        return self.memory[0].capacity_bytes

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        """Peak bandwidth of the working tier."""
        return self.memory[0].bandwidth_bytes_per_s

    def _rates_for(self, precision: str) -> tuple[str, ...]:
        """The rates a matmul on ``precision`` weights may run at, first choice first.

        Narrow values widen exactly: FP4 (NVFP4) weights run on FP8 or BF16 units of a chip without FP4 ones.
        MXFP4 weights run at the FP8 rate on a chip with FP4-generation (block-scaled) tensor cores — MXFP4
        weights times MXFP8 activations — and at the BF16 rate elsewhere, dequantised in the kernel
        (NVIDIA/TensorRT-LLM examples/models/core/gpt_oss/README.md, PR #6908, 2025-08-15: "Blackwell | mxfp8
        | mxfp4 | UTCQMMA", "Hopper | bf16 | mxfp4 | simulated mxfp4, HGMMA").
        """
        if precision == "mxfp4":
            return ("fp8", "bf16") if "fp4" in self.flops_per_s else ("bf16",)
        return PRECISIONS[PRECISIONS.index(precision):]

    def runs(self, precision: str) -> bool:
        """Whether the chip has matmul units for ``precision`` or a wider one (:meth:`flops`).

        Narrow values widen exactly (FP4 weights run on FP8 or BF16 units); a
        wider precision cannot run on narrower units: an FP8-only chip has no
        BF16 rate.

        Examples
        --------
        >>> lp30 = load_chip_catalog()["lp30"]
        >>> lp30.runs("fp8"), lp30.runs("fp4"), lp30.runs("bf16")
        (True, True, False)
        """
        return any(p in self.flops_per_s for p in self._rates_for(precision))

    def rate_for(self, precision: str) -> str | None:
        """The rate (a ``flops_per_s`` key) a matmul on ``precision`` weights runs at (:meth:`_rates_for`);
        ``None`` when the chip has no units for it.

        Examples
        --------
        >>> cat = load_chip_catalog()
        >>> cat["h200"].rate_for("mxfp4"), cat["h200"].rate_for("fp4"), cat["b200"].rate_for("mxfp4")
        ('bf16', 'fp8', 'fp8')
        """
        return next((p for p in self._rates_for(precision) if p in self.flops_per_s), None)

    def flops(self, precision: str) -> float:
        """Dense peak FLOP/s at ``precision``, falling back to the next wider one.

        A chip without FP4 units runs FP4 weights at its FP8 (or BF16) rate; MXFP4 weights run at the FP8
        rate on a chip with FP4 units, else at BF16 (:meth:`_rates_for`). A chip with only narrower units
        than ``precision`` has no rate for it (BF16 on an FP8-only chip is not the FP8 rate): ``ValueError``.

        Examples
        --------
        >>> cat = load_chip_catalog()
        >>> [cat["b200"].flops(p) / 1e12 for p in ("fp4", "mxfp4")], [cat["h200"].flops(p) / 1e12 for p in ("fp4", "mxfp4")]
        ([9000.0, 4500.0], [1978.9, 989.4])
        """
        rate = self.rate_for(precision)
        if rate is not None:
            return self.flops_per_s[rate]
        raise ValueError(f"chip {self.name!r} has no {precision} rate (flops_per_s lists only "
                         f"{', '.join(sorted(self.flops_per_s))}); use a precision it lists or add its "
                         f"{precision} rate to flops_per_s")

    def ridge_flop_per_byte(self, precision: str = "bf16") -> float:
        """Roofline ridge point, peak FLOP/s ÷ peak working-memory bytes/s."""
        return self.flops(precision) / self.memory_bandwidth_bytes_per_s


#: Fields a catalogue chip must cite a source for.
SOURCED_FIELDS = (
    "flops_per_s",
    "memory",
    "scale_up_domain_chips",
    "scale_up_bandwidth_bytes_per_s",
    "scale_out_bandwidth_bytes_per_s",
    "power_w",
    "usd_per_hour",
    "compute_efficiency",
    "memory_efficiency",
    "step_overhead_s",
)


#: Operating-point fields (costmodels.efficiency): a non-zero value needs a source.
OPERATING_POINT_FIELDS = ("memory_half_bytes", "compute_half_tokens", "layer_overhead_s")
#: Fields that may be unset (the code's prior then) and need a source when set.
OPTIONAL_SOURCED_FIELDS = ("alltoall_floor_s", "alltoall_efficiency", "sequence_overhead_s", "kv_memory_efficiency")


def read_records(path: str | Path, section: str, record_type: type[R]) -> dict[str, R]:
    """Read the list under ``section`` of a YAML catalogue as records keyed by ``name``.

    Raises
    ------
    ValueError
        On a duplicate name; pydantic's ``ValidationError`` on a bad record.
    """
    raw = read_catalog_yaml(path)
    records: dict[str, R] = {}
    for entry in raw[section]:
        rec = record_type.model_validate(entry)
        if rec.name in records:
            raise ValueError(f"{path}: {section[:-1]} {rec.name!r} defined twice")
        records[rec.name] = rec
    return records


def read_chip_file(path: str | Path) -> dict[str, ChipSpec]:
    """Read a chip catalogue YAML file (``chips: [ {...}, ... ]``) keyed by name."""
    return read_records(path, "chips", ChipSpec)


@lru_cache(maxsize=1)
def _shipped() -> dict[str, ChipSpec]:
    return read_chip_file(CATALOG_PATH)


def load_chip_catalog() -> dict[str, ChipSpec]:
    """The shipped chip catalogue, keyed by chip name (a fresh dict each call)."""
    return dict(_shipped())
