"""Priors, not constants: the range an uncalibrated chip's step factors may take, derived from calibrated peers.

An uncalibrated chip's efficiencies and fixed step cost are the catalogue's defaults (η_c 0.70, η_m 0.50,
τ 2 ms for GPUs and ASICs; η_m 0.90, τ 0.1–0.5 ms for SRAM and LPDDR parts), and its serving all-reduce
runs at full bandwidth (η_ar 1). A verdict resting on them is only as good as they are. The prior of each
factor here is a **range**: the factor's fitted values over the chip's *peers* — the calibrated chips
that keep weights in the same memory (SRAM-only or not) and come from the same vendor (its software
stack: NVIDIA's CUDA/TensorRT, AMD's ROCm), or from any vendor when none of its chips is calibrated —
together with the chip's own catalogue value. ``low`` is the pessimistic end of every factor (lowest
efficiencies, highest fixed cost), ``high`` the optimistic end, ``nominal`` the catalogue's value.

Fitted values behind the ranges (``topology/catalog/chips.yaml``, benchmarks/CALIBRATION.md): NVIDIA
B200 and H100/H200 (one shared Hopper fit) η_c 0.58–0.66, η_m 0.57–0.63, τ 0.76–0.86 ms with τ_layer
36–40 µs (3.7–4.0 ms per step of an 80-layer model), η_ar 0.31–0.41; AMD MI300X/MI355X η_c 0.21–0.38, τ 4.6–14.7 ms; SRAM Groq LPU / WSE-3 τ 0.07–0.47 ms
(their efficiencies are not fitted: a few % of a step). GB200, B300 and GB300 take B200's factors as their
nominal value (the same Blackwell silicon and software, benchmarks/adopt_calibration.py ``SIBLINGS``).

Examples
--------
>>> from topology.chips import load_chip_catalog
>>> cat = load_chip_catalog()
>>> sorted(c.name for c in prior_peers(cat["rubin"], cat))
['b200', 'h100', 'h200']
>>> r = prior_range(cat["rubin"], cat)
>>> lo, nom, hi = (r["step_overhead_s"][i] + REFERENCE_LAYERS * r["layer_overhead_s"][i] for i in range(3))
>>> lo >= nom >= hi
True
>>> prior_range(cat["h100"], cat)  # a calibrated chip has no prior: its factors are fitted
{}
"""

from __future__ import annotations

from typing import Literal

from topology.chips import ChipSpec

__all__ = ["LEVELS", "PRIOR_FIELDS", "REFERENCE_LAYERS", "at_prior", "prior_peers", "prior_range"]

#: The factors a prior covers, and whether a larger value makes the chip faster (the fixed costs τ and τ_layer
#: are taken as one pair, :func:`prior_range`).
PRIOR_FIELDS: dict[str, bool] = {"compute_efficiency": True, "memory_efficiency": True, "step_overhead_s": False,
                                 "layer_overhead_s": False, "allreduce_efficiency": True}
#: The levels a prior is taken at.
LEVELS = ("low", "nominal", "high")
Level = Literal["low", "nominal", "high"]


def prior_peers(chip: ChipSpec, catalogue: dict[str, ChipSpec]) -> list[ChipSpec]:
    """The calibrated chips a prior of ``chip`` is drawn from (module docstring)."""
    same_memory = [c for c in catalogue.values() if c.calibration == "calibrated" and c.sram_only == chip.sram_only
                   and c.name != chip.name]
    same_vendor = [c for c in same_memory if c.vendor == chip.vendor]
    return same_vendor or same_memory


#: Layers the fixed cost of a step is compared at when the per-step and per-layer costs are taken as one pair
#: (an 80-layer model, Llama-3.1-70B's depth): a fit may put its fixed cost in either term (H100's puts it all
#: in the per-layer one), so the two come from the same peer.
REFERENCE_LAYERS = 80


def _fixed_s(c: ChipSpec) -> float:
    return c.step_overhead_s + REFERENCE_LAYERS * c.layer_overhead_s


def prior_range(chip: ChipSpec, catalogue: dict[str, ChipSpec]) -> dict[str, tuple[float, float, float]]:
    """Per prior factor of an uncalibrated ``chip``: (pessimistic, nominal, optimistic) value; {} for a
    calibrated chip or one with no peers.

    The fixed step cost (``step_overhead_s``, ``layer_overhead_s``) is one pair, the chip's own or one peer's
    whole — the peer with the highest (lowest) τ + :data:`REFERENCE_LAYERS`·τ_layer at the pessimistic
    (optimistic) end — never one peer's τ with another's τ_layer. SRAM parts take only the fixed step cost from
    their peers: their peers' efficiencies are not fitted.

    Examples
    --------
    >>> from topology.chips import load_chip_catalog
    >>> cat = load_chip_catalog()
    >>> r = prior_range(cat["rubin"], cat)
    >>> fast = r["step_overhead_s"][2] + REFERENCE_LAYERS * r["layer_overhead_s"][2]
    >>> fast == min(_fixed_s(c) for c in [*prior_peers(cat["rubin"], cat), cat["rubin"]])
    True
    """
    if chip.calibration == "calibrated":
        return {}
    peers = prior_peers(chip, catalogue)
    if not peers:
        return {}
    out = {}
    for name, faster_up in PRIOR_FIELDS.items():
        if name == "step_overhead_s" or (chip.sram_only and name != "step_overhead_s"):
            continue
        nominal = float(getattr(chip, name))
        values = [float(getattr(c, name)) for c in peers] + [nominal]
        worst, best = (min(values), max(values)) if faster_up else (max(values), min(values))
        out[name] = (worst, nominal, best)
    pairs = [*peers, chip]
    slow, fast = max(pairs, key=_fixed_s), min(pairs, key=_fixed_s)
    for name in ("step_overhead_s", "layer_overhead_s"):
        out[name] = (float(getattr(slow, name)), float(getattr(chip, name)), float(getattr(fast, name)))
    return out


def at_prior(chip: ChipSpec, catalogue: dict[str, ChipSpec], level: Level) -> dict[str, float]:
    """The prior factors of ``chip`` at ``level`` (an empty dict for a calibrated chip)."""
    i = LEVELS.index(level)
    return {name: v[i] for name, v in prior_range(chip, catalogue).items()}
