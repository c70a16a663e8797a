"""A user's calibration overlay: chip factors and error bands refitted on the user's own measurements.

``placement calibrate`` (:mod:`placement.measure.refit`) writes an overlay; an
instance names one (``calibration: overlay.yaml``, or ``--calibration`` on the
commands that price a plan) and the overlay then sits on top of the catalogue:

* each chip it lists takes the overlay's fitted factors (η_c, η_m, η_kv, τ, x½, t½,
  τ_layer, η_ar, per-sequence host time) in place of the catalogue's, each
  sourced as "calibration overlay <file>";
* its error band (measured ÷ predicted quantiles of TPOT, TTFT and
  throughput, :mod:`costmodels.bands`) replaces the chip family's band, in the
  plan's p10–p90 figures and, at ``confidence``, in the step prices;
* on those chips, a serving framework it lists takes the overlay's request
  latency (the part of TTFT outside the forward steps) when the instance
  names that framework.

Chips the overlay does not list are untouched: an overlay fitted on H100
measurements leaves a B200 plan exactly as it was. The overlay travels inside
the validated instance (with its file name and SHA-256), so the plan's
provenance names it and ``placement check`` re-derives with it.

Examples
--------
>>> from costmodels.bands import LEVELS
>>> band = {"n": 12, "median_abs_error": 0.05, "quantiles": [1.0] * len(LEVELS)}
>>> ov = CalibrationOverlay.model_validate({"levels": list(LEVELS), "chips": {"h100": {
...     "factors": {"step_overhead_s": 0.004}, "points": 12,
...     "bands": {"tpot": band, "ttft": band, "throughput": band}}}})
>>> from topology.chips import load_chip_catalog
>>> chips = overlay_chips(load_chip_catalog(), ov)
>>> chips["h100"].step_overhead_s, chips["b200"] == load_chip_catalog()["b200"]
(0.004, True)
>>> overlay_band(ov, "h100").factor("tpot", 0.9), overlay_band(ov, "b200") is None
(1.0, True)
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from costmodels.bands import LEVELS, METRICS, ChipBand
from topology.chips import ChipSpec
from topology.records import Record

__all__ = ["FACTOR_FIELDS", "BandRecord", "CalibrationOverlay", "ChipCalibration", "Factors", "FrameworkCalibration",
           "MeasurementFile", "overlay_band", "overlay_chips", "overlay_framework_latency_s"]


class Factors(Record):
    """Fitted chip factors (the catalogue's fields of the same names; unset: the catalogue's value)."""

    compute_efficiency: float | None = Field(default=None, gt=0, le=1)
    memory_efficiency: float | None = Field(default=None, gt=0, le=1)
    step_overhead_s: float | None = Field(default=None, ge=0, le=0.1)
    memory_half_bytes: float | None = Field(default=None, ge=0, le=1e12)
    compute_half_tokens: float | None = Field(default=None, ge=0, le=1e6)
    layer_overhead_s: float | None = Field(default=None, ge=0, le=1e-2)
    allreduce_efficiency: float | None = Field(default=None, gt=0, le=1)
    sequence_overhead_s: float | None = Field(default=None, ge=0, le=1e-2)
    kv_memory_efficiency: float | None = Field(default=None, gt=0, le=1)


#: The chip fields an overlay may set.
FACTOR_FIELDS: tuple[str, ...] = tuple(Factors.model_fields)


class BandRecord(Record):
    """One metric's band: ``measured ÷ predicted`` quantiles at the overlay's levels, over ``n`` held-out points."""

    n: int = Field(ge=0)
    median_abs_error: float | None = Field(default=None, ge=0)
    quantiles: list[float] = Field(min_length=1)


class FrameworkCalibration(Record):
    """A serving framework's request latency refitted on the user's light-load TTFTs
    (:mod:`costmodels.frameworks`: TTFT = one prefill of the prompt + this latency)."""

    ttft_request_latency_s: float = Field(ge=0, le=10)
    points: int = Field(ge=1, description="light-load TTFT points it was fitted on")
    heldout_median_abs_error: float | None = Field(default=None, ge=0, description="median |TTFT error| of the "
                                                   "points, each predicted with a latency fitted without its group")


class ChipCalibration(Record):
    """What the overlay says of one chip: its factors, its bands, and what they rest on."""

    factors: Factors = Factors()
    bands: dict[Literal["tpot", "ttft", "throughput"], BandRecord]
    points: int = Field(ge=1, description="measured points the factors were fitted on")
    heldout: str = Field(default="", description="how the bands' points were held out")
    frameworks: list[str] = Field(default_factory=list, description="serving frameworks of the measurements")
    request_latency: dict[str, FrameworkCalibration] = Field(
        default_factory=dict, description="per serving framework, its request latency refitted on this chip's "
        "light-load TTFTs (the other chips keep the catalogue's)")
    models: list[str] = Field(default_factory=list, description="catalogue models of the measurements")
    batch_per_replica: tuple[float, float] | None = Field(default=None, description="the least and most sequences "
                                                          "per replica measured (beyond them a plan extrapolates)")
    pipeline_stages: int | None = Field(default=None, ge=1, description="the most pipeline stages among the "
                                        "measurements: plans hold this chip's pools to them unless "
                                        "serving.max_pipeline_stages says otherwise (unset: the catalogue's)")

    @model_validator(mode="after")
    def _every_metric(self) -> ChipCalibration:
        missing = [m for m in METRICS if m not in self.bands]
        if missing:
            raise ValueError(f"bands lack {', '.join(missing)}; expected tpot, ttft and throughput")
        return self


class MeasurementFile(Record):
    """One measurement file an overlay was fitted from."""

    path: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    points: int = Field(ge=0)


class CalibrationOverlay(Record):
    """A calibration overlay: per chip, fitted factors and bands (``placement calibrate`` writes it)."""

    placement_calibration: Literal[1] = 1
    source: str = Field(default="", description="the overlay file (set when it is read)")
    sha256: str = Field(default="", description="SHA-256 of the overlay file's bytes (set when it is read)")
    levels: list[float] = Field(default_factory=lambda: list(LEVELS))
    measurements: list[MeasurementFile] = Field(default_factory=list)
    chips: dict[str, ChipCalibration] = Field(min_length=1)

    @model_validator(mode="after")
    def _bands_at_the_levels(self) -> CalibrationOverlay:
        if any(not 0 < lv < 1 for lv in self.levels) or sorted(self.levels) != self.levels:
            raise ValueError("levels must be increasing quantile levels in (0, 1)")
        for chip, cal in self.chips.items():
            for metric, band in cal.bands.items():
                if len(band.quantiles) != len(self.levels):
                    raise ValueError(f"chips.{chip}.bands.{metric}: expected {len(self.levels)} quantiles "
                                     f"(one per level), got {len(band.quantiles)}")
                if any(not q > 0 for q in band.quantiles) or sorted(band.quantiles) != band.quantiles:
                    raise ValueError(f"chips.{chip}.bands.{metric}: quantiles must be positive and increasing")
        return self

    @property
    def label(self) -> str:
        """How plans and tables name the overlay: its file and the head of its hash."""
        return f"{self.source or 'calibration overlay'} ({self.sha256[:12]})" if self.sha256 else (
            self.source or "calibration overlay")


def overlay_chips(chips: dict[str, ChipSpec], overlay: CalibrationOverlay | None) -> dict[str, ChipSpec]:
    """``chips`` with the overlay's factors on the chips it lists (a new dict; the others are the same records).

    A listed chip the catalogue lacks is an input error raised by the loader's cross-check, not here.
    """
    if overlay is None:
        return chips
    out = dict(chips)
    for name, cal in overlay.chips.items():
        chip = out.get(name)
        if chip is None:
            continue
        set_ = cal.factors.model_dump(exclude_none=True)
        why = f"calibration overlay {overlay.label}: fitted on {cal.points} measured points"
        tpot = cal.bands["tpot"].median_abs_error
        out[name] = chip.model_copy(update={
            **set_, "calibration": "calibrated",
            "heldout_tpot_error": chip.heldout_tpot_error if tpot is None else tpot,
            "sources": {**chip.sources, **{k: why for k in set_}, "calibration": why}})
    return out


def overlay_framework_latency_s(overlay: CalibrationOverlay | None, framework: str, chip: str | None
                                ) -> float | None:
    """The overlay's request latency (s) of ``framework`` on ``chip``, None when it has none."""
    cal = None if overlay is None or chip is None else overlay.chips.get(chip)
    fw = None if cal is None else cal.request_latency.get(framework)
    return None if fw is None else fw.ttft_request_latency_s


def overlay_band(overlay: CalibrationOverlay | None, chip: str) -> ChipBand | None:
    """The overlay's band for ``chip`` as a :class:`costmodels.bands.ChipBand`, None when it has none."""
    if overlay is None or (cal := overlay.chips.get(chip)) is None:
        return None
    return ChipBand(chip, f"your measurements ({overlay.source or 'overlay'})",
                    f"calibration overlay {overlay.label}: {cal.heldout or 'held-out points'}",
                    tuple(overlay.levels), {m: tuple(cal.bands[m].quantiles) for m in METRICS},
                    {m: cal.bands[m].median_abs_error for m in METRICS})
